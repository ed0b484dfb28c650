import type { Tensor } from '../backend/backend';
import { grid, Params, type GpuTensor, type KernelHost, type KernelTuning } from '../backend/webgpu_host';
import { WGSL_FLAT_GROUP } from './wgsl_math';

/** 'gpu': lanes per row (one workgroup each); 'cpu': one invocation per row, no barriers that cost. */
const LANES: Record<KernelTuning, number> = { gpu: 64, cpu: 1 };

/**
 * One workgroup per row. JumpReLU y = pre·(pre > θ) is recomputed from `pre` wherever it is read
 * (no lane reads another lane's writes). TopK finds the bit pattern B of the row's k-th largest
 * positive value by radix selection over the 31 magnitude bits (positive floats order as their
 * bits): B is the largest pattern with count(bits ≥ B) ≥ k. Entries below B are zeroed.
 */
function source(lanes: number): string {
  return /* wgsl */ `
struct P { rows: u32, c: u32, k: u32 }
@group(0) @binding(0) var<uniform> p: P;
@group(0) @binding(1) var<storage, read> pre: array<f32>;
@group(0) @binding(2) var<storage, read> theta: array<f32>;
@group(0) @binding(3) var<storage, read_write> y: array<f32>;
var<workgroup> cnt: atomic<u32>;
${WGSL_FLAT_GROUP}
fn jump(o: u32, j: u32) -> f32 { let v = pre[o + j]; return select(0.0, v, v > theta[j]); }
@compute @workgroup_size(${lanes})
fn main(@builtin(workgroup_id) wid: vec3u, @builtin(num_workgroups) nwg: vec3u, @builtin(local_invocation_index) li: u32) {
  let r = flat_group(wid, nwg);
  if (r >= p.rows) { return; }
  let o = r * p.c;
  var b = 0u;
  if (p.k > 0u) {
    for (var bit = 30i; bit >= 0i; bit = bit - 1i) {
      let cand = b | (1u << u32(bit));
      if (li == 0u) { atomicStore(&cnt, 0u); }
      workgroupBarrier();
      var c = 0u;
      for (var j = li; j < p.c; j = j + ${lanes}u) {
        let v = jump(o, j);
        if (v > 0.0 && bitcast<u32>(v) >= cand) { c = c + 1u; }
      }
      atomicAdd(&cnt, c);
      workgroupBarrier();
      let total = atomicLoad(&cnt);
      workgroupBarrier();
      if (total >= p.k) { b = cand; }
    }
  }
  for (var j = li; j < p.c; j = j + ${lanes}u) {
    let v = jump(o, j);
    y[o + j] = select(v, 0.0, b > 0u && (v <= 0.0 || bitcast<u32>(v) < b));
  }
}`;
}

/**
 * SAE activation of each row of pre [n, C]: JumpReLU with threshold θ [C] (θ = 0: ReLU), then
 * TopK when k > 0 (see sae_act.cpu.ts for the definition and sources).
 * @throws Error when θ does not have C entries.
 */
export function saeActivationGpu(host: KernelHost, pre: Tensor, threshold: Tensor, k: number): GpuTensor {
  const C = pre.shape[pre.shape.length - 1], n = pre.size / C;
  if (threshold.size !== C) throw new Error(`saeActivation: threshold has ${threshold.size} entries, hidden_pre has ${C} columns`);
  const gp = host.gpu(pre), gt = host.gpu(threshold);
  const y = host.alloc(pre.shape);
  if (y.size === 0) return y;
  const lanes = LANES[host.tuning];
  host.dispatch(host.pipeline(`sae_act:${lanes}`, () => source(lanes)), [gp, gt, y], new Params().u32(n).u32(C).u32(Math.max(0, k)), grid(n, host.maxWorkgroupsPerDim));
  return y;
}
