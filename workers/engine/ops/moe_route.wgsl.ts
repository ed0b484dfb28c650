import type { Tensor } from '../backend/backend';
import { grid, Params, type GpuTensor, type KernelHost } from '../backend/webgpu_host';
import { WGSL_FLAT_GROUP } from './wgsl_math';

const WG = 64;

/**
 * One invocation per row (E and k are small): max, Σ exp, then k selections of the most probable
 * expert not chosen yet (lower index on ties), or the forced ids; as moe_route.cpu.ts.
 */
const ROUTE = /* wgsl */ `
struct P { rows: u32, e: u32, k: u32, norm: u32, forced: u32 }
@group(0) @binding(0) var<uniform> p: P;
@group(0) @binding(1) var<storage, read> logits: array<f32>;
@group(0) @binding(2) var<storage, read> forced: array<f32>;
@group(0) @binding(3) var<storage, read_write> idx: array<f32>;
@group(0) @binding(4) var<storage, read_write> w: array<f32>;
${WGSL_FLAT_GROUP}
fn prob(o: u32, e: u32, m: f32, sum: f32) -> f32 { return exp(logits[o + e] - m) / sum; }
@compute @workgroup_size(${WG})
fn main(@builtin(workgroup_id) wid: vec3u, @builtin(num_workgroups) nwg: vec3u, @builtin(local_invocation_index) li: u32) {
  let r = flat_group(wid, nwg) * ${WG}u + li;
  if (r >= p.rows) { return; }
  let o = r * p.e;
  var m = logits[o];
  for (var e = 1u; e < p.e; e = e + 1u) { m = max(m, logits[o + e]); }
  var sum = 0.0;
  for (var e = 0u; e < p.e; e = e + 1u) { sum = sum + exp(logits[o + e] - m); }
  var tot = 0.0;
  for (var j = 0u; j < p.k; j = j + 1u) {
    var c = 0u;
    if (p.forced == 1u) {
      c = u32(clamp(round(forced[r * p.k + j]), 0.0, f32(p.e - 1u)));
    } else {
      var best = -1.0;
      for (var e = 0u; e < p.e; e = e + 1u) {
        var taken = false;
        for (var i = 0u; i < j; i = i + 1u) { if (u32(idx[r * p.k + i]) == e) { taken = true; } }
        let pe = prob(o, e, m, sum);
        if (!taken && pe > best) { best = pe; c = e; }
      }
    }
    let pc = prob(o, c, m, sum);
    idx[r * p.k + j] = f32(c);
    w[r * p.k + j] = pc;
    tot = tot + pc;
  }
  if (p.norm == 1u) { for (var j = 0u; j < p.k; j = j + 1u) { w[r * p.k + j] = w[r * p.k + j] / tot; } }
}`;

/** Routing of logits [n, E] (Backend.moeRoute). @throws Error when forced is not [n, k]. */
export function moeRouteGpu(host: KernelHost, logits: Tensor, k: number, normTopk: boolean, forced?: Tensor): { indices: GpuTensor; weights: GpuTensor } {
  const E = logits.shape[logits.shape.length - 1], n = logits.size / E;
  if (forced && forced.size !== n * k) throw new Error(`moeRoute: forced ids have ${forced.size} values, expected ${n}×${k}`);
  const gl = host.gpu(logits);
  const gf = forced ? host.gpu(forced) : host.hostData(new Float32Array(1));
  const indices = host.alloc([n, k]), weights = host.alloc([n, k]);
  if (n > 0) host.dispatch(host.pipeline('moe_route', () => ROUTE), [gl, gf, indices, weights], new Params().u32(n).u32(E).u32(k).u32(normTopk ? 1 : 0).u32(forced ? 1 : 0), grid(Math.ceil(n / WG), host.maxWorkgroupsPerDim));
  if (!forced) host.release(gf);
  return { indices, weights };
}
