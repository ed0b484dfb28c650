import type { Tensor } from '../backend/backend';
import { grid, Params, type GpuTensor, type KernelHost, type Reduction } from '../backend/webgpu_host';
import { reduction } from './linear_gemv.wgsl';
import { NORM_WG as WG, WGSL_NORM_STATS, wgslReduceHeader, wgslReduceSum } from './norm.wgsl';
import { WGSL_FLAT_GROUP } from './wgsl_math';

/** One workgroup per group of g values: r (rms_inv) and Σ dy·w'·x, then dx = r·w'·dy − x·r³/g·Σ dy·w'·x. */
const rmsSource = (r: Reduction): string => /* wgsl */ `
${wgslReduceHeader(r)}
struct P { groups: u32, g: u32, eps: f32, offset: f32 }
@group(0) @binding(0) var<uniform> p: P;
@group(0) @binding(1) var<storage, read> x: array<f32>;
@group(0) @binding(2) var<storage, read> w: array<f32>;
@group(0) @binding(3) var<storage, read> dy: array<f32>;
@group(0) @binding(4) var<storage, read_write> dx: array<f32>;
${WGSL_FLAT_GROUP}
${wgslReduceSum(r)}
${WGSL_NORM_STATS}
@compute @workgroup_size(${WG})
fn main(@builtin(workgroup_id) wid: vec3u, @builtin(num_workgroups) nwg: vec3u, @builtin(local_invocation_index) li: u32) {
  let gi = flat_group(wid, nwg);
  if (gi >= p.groups) { return; }
  let o = gi * p.g;
  let r = rms_inv(li, o, p.g, p.eps);
  var dot = 0.0;
  for (var i = li; i < p.g; i = i + ${WG}u) { dot = dot + dy[o + i] * (w[i] + p.offset) * x[o + i]; }
  let c = r * r * r * reduce_sum(li, dot) / f32(p.g);
  for (var i = li; i < p.g; i = i + ${WG}u) { dx[o + i] = r * (w[i] + p.offset) * dy[o + i] - x[o + i] * c; }
}`;

/**
 * The input gradient of RMSNorm (Backend.rmsNormBackward; the rule and its CPU reference in
 * norm_backward.cpu.ts) over groups of w.size values: dx = r·w'·dy − x·r³/g·Σ dy·w'·x.
 * @param x, dy [n, W]; w [g] with W a multiple of g. @returns dx [n, W].
 * @throws Error when the sizes disagree.
 */
export function rmsNormBackwardGpu(host: KernelHost, x: Tensor, w: Tensor, eps: number, offset: number, dy: Tensor): GpuTensor {
  const gx = host.gpu(x), gw = host.gpu(w), gd = host.gpu(dy);
  const g = w.size;
  if (g === 0 || x.size % g !== 0 || dy.size !== x.size) throw new Error(`rmsNormBackward: x [${x.shape}], dy [${dy.shape}] and groups of ${g} disagree`);
  const groups = x.size / g;
  const dx = host.alloc(x.shape);
  if (groups === 0) return dx;
  host.dispatch(host.pipeline(`rms_norm_backward:${reduction(host)}`, () => rmsSource(reduction(host))), [gx, gw, gd, dx], new Params().u32(groups).u32(g).f32(eps).f32(offset), grid(groups, host.maxWorkgroupsPerDim));
  return dx;
}

/** One workgroup per row: μ and r (layer_norm_stats), then mean(ĝ) and mean(ĝ·x̂) (ĝ = dy·w), then dx. */
const layerSource = (r: Reduction): string => /* wgsl */ `
${wgslReduceHeader(r)}
struct P { rows: u32, d: u32, eps: f32 }
@group(0) @binding(0) var<uniform> p: P;
@group(0) @binding(1) var<storage, read> x: array<f32>;
@group(0) @binding(2) var<storage, read> w: array<f32>;
@group(0) @binding(3) var<storage, read> dy: array<f32>;
@group(0) @binding(4) var<storage, read_write> dx: array<f32>;
${WGSL_FLAT_GROUP}
${wgslReduceSum(r)}
${WGSL_NORM_STATS}
@compute @workgroup_size(${WG})
fn main(@builtin(workgroup_id) wid: vec3u, @builtin(num_workgroups) nwg: vec3u, @builtin(local_invocation_index) li: u32) {
  let row = flat_group(wid, nwg);
  if (row >= p.rows) { return; }
  let o = row * p.d;
  let n = f32(p.d);
  let st = layer_norm_stats(li, o, p.d, p.eps);
  let mean = st.x;
  let r = st.y;
  var mg = 0.0;
  var mgx = 0.0;
  for (var i = li; i < p.d; i = i + ${WG}u) { let gi = dy[o + i] * w[i]; mg = mg + gi; mgx = mgx + gi * (x[o + i] - mean) * r; }
  mg = reduce_sum(li, mg) / n;
  mgx = reduce_sum(li, mgx) / n;
  for (var i = li; i < p.d; i = i + ${WG}u) { dx[o + i] = r * (dy[o + i] * w[i] - mg - (x[o + i] - mean) * r * mgx); }
}`;

/**
 * The input gradient of LayerNorm (Backend.layerNormBackward; CPU reference layerNormBackwardCpu)
 * per row of w.size: dx = r·(ĝ − mean(ĝ) − x̂·mean(ĝ·x̂)), ĝ = dy·w.
 * @param x, dy [n, d]; w [d]. @returns dx [n, d].
 * @throws Error when the sizes disagree.
 */
export function layerNormBackwardGpu(host: KernelHost, x: Tensor, w: Tensor, eps: number, dy: Tensor): GpuTensor {
  const gx = host.gpu(x), gw = host.gpu(w), gd = host.gpu(dy);
  const d = w.size;
  if (d === 0 || x.size % d !== 0 || dy.size !== x.size) throw new Error(`layerNormBackward: x [${x.shape}], dy [${dy.shape}] and rows of ${d} disagree`);
  const rows = x.size / d;
  const dx = host.alloc(x.shape);
  if (rows === 0) return dx;
  host.dispatch(host.pipeline(`layer_norm_backward:${reduction(host)}`, () => layerSource(reduction(host))), [gx, gw, gd, dx], new Params().u32(rows).u32(d).f32(eps), grid(rows, host.maxWorkgroupsPerDim));
  return dx;
}
