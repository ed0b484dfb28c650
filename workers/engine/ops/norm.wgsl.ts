import type { Tensor } from '../backend/backend';
import { grid, Params, type GpuTensor, type KernelHost, type Reduction } from '../backend/webgpu_host';
import { reduction } from './linear_gemv.wgsl';
import { WGSL_FLAT_GROUP } from './wgsl_math';

/** Invocations per workgroup of the norm kernels (and of kernels sharing wgslReduceSum). */
export const NORM_WG = 64;
const WG = NORM_WG;

/**
 * reduce_sum(li, v): the sum of v over the workgroup's WG invocations, returned to every one of them
 * (every invocation must call it, in uniform control flow).
 * - 'tree': a tree in workgroup memory (log2 WG barriers).
 * - 'subgroup': subgroupAdd within each subgroup, each subgroup's first invocation stores its sum at
 *   its own index (the others store 0), then every invocation adds the WG entries in index order: no
 *   assumption about subgroup size or layout, and a deterministic order (adding zeros is exact).
 */
export function wgslReduceSum(r: Reduction): string {
  if (r === 'subgroup') {
    return /* wgsl */ `
var<workgroup> red: array<f32, ${WG}>;
fn reduce_sum(li: u32, v: f32) -> f32 {
  let s = subgroupAdd(v);
  red[li] = select(0.0, s, subgroupElect());
  workgroupBarrier();
  var t = 0.0;
  for (var i = 0u; i < ${WG}u; i = i + 1u) { t = t + red[i]; }
  workgroupBarrier();
  return t;
}`;
  }
  return /* wgsl */ `
var<workgroup> red: array<f32, ${WG}>;
fn reduce_sum(li: u32, v: f32) -> f32 {
  red[li] = v;
  workgroupBarrier();
  for (var s = ${WG / 2}u; s > 0u; s = s >> 1u) {
    if (li < s) { red[li] = red[li] + red[li + s]; }
    workgroupBarrier();
  }
  let r = red[0];
  workgroupBarrier();
  return r;
}`;
}

/** Module header: the subgroups extension when the reduction uses it. */
export const wgslReduceHeader = (r: Reduction): string => (r === 'subgroup' ? 'enable subgroups;\ndiagnostic(off, subgroup_uniformity);' : '');

/**
 * The norms' statistics of one group of n values x[o .. o + n), each one workgroup-wide reduction
 * (reduce_sum, wgslReduceSum) returned to every invocation, shared by the forward kernels here and
 * the backward kernels (norm_backward.wgsl.ts); the module declares x: array<f32>.
 * - rms_inv: 1/√(mean(x²) + eps) (RMSNorm's r);
 * - layer_norm_stats: (μ, 1/√(σ² + eps)), σ² the biased variance of x − μ (LayerNorm's mean and r).
 */
export const WGSL_NORM_STATS = /* wgsl */ `
fn rms_inv(li: u32, o: u32, n: u32, eps: f32) -> f32 {
  var ss = 0.0;
  for (var i = li; i < n; i = i + ${WG}u) { let v = x[o + i]; ss = ss + v * v; }
  return 1.0 / sqrt(reduce_sum(li, ss) / f32(n) + eps);
}
fn layer_norm_stats(li: u32, o: u32, n: u32, eps: f32) -> vec2f {
  var s = 0.0;
  for (var i = li; i < n; i = i + ${WG}u) { s = s + x[o + i]; }
  let mean = reduce_sum(li, s) / f32(n);
  var v = 0.0;
  for (var i = li; i < n; i = i + ${WG}u) { let c = x[o + i] - mean; v = v + c * c; }
  return vec2f(mean, 1.0 / sqrt(reduce_sum(li, v) / f32(n) + eps));
}`;

/** One workgroup per group of g values: y = x·(1/√(mean(x²) + eps))·(w + offset). */
const rmsSource = (r: Reduction): string => /* wgsl */ `
${wgslReduceHeader(r)}
struct P { groups: u32, g: u32, eps: f32, offset: f32 }
@group(0) @binding(0) var<uniform> p: P;
@group(0) @binding(1) var<storage, read> x: array<f32>;
@group(0) @binding(2) var<storage, read> w: array<f32>;
@group(0) @binding(3) var<storage, read_write> y: array<f32>;
${WGSL_FLAT_GROUP}
${wgslReduceSum(r)}
${WGSL_NORM_STATS}
@compute @workgroup_size(${WG})
fn main(@builtin(workgroup_id) wid: vec3u, @builtin(num_workgroups) nwg: vec3u, @builtin(local_invocation_index) li: u32) {
  let gi = flat_group(wid, nwg);
  if (gi >= p.groups) { return; }
  let o = gi * p.g;
  let inv = rms_inv(li, o, p.g, p.eps);
  for (var i = li; i < p.g; i = i + ${WG}u) { y[o + i] = x[o + i] * inv * (w[i] + p.offset); }
}`;

/**
 * RMSNorm over groups of w.size consecutive values (Zhang & Sennrich 2019, arXiv 1910.07467; HF
 * LlamaRMSNorm): y = x / √(mean(x²) + eps) · (w + offset); offset 1 for Gemma's (1 + w).
 * Per-head norms (Qwen3 q_norm) pass x [n, H·d] and w [d].
 * @throws Error when x.size is not a multiple of w.size.
 */
export function rmsNormGpu(host: KernelHost, x: Tensor, w: Tensor, eps: number, offset: number): GpuTensor {
  const gx = host.gpu(x), gw = host.gpu(w);
  const g = w.size;
  if (g === 0 || x.size % g !== 0) throw new Error(`rmsNorm: x [${x.shape}] is not a whole number of groups of ${g} (the weight's size)`);
  const groups = x.size / g;
  const y = host.alloc(x.shape);
  if (groups === 0) return y;
  host.dispatch(host.pipeline(`rms_norm:${reduction(host)}`, () => rmsSource(reduction(host))), [gx, gw, y], new Params().u32(groups).u32(g).f32(eps).f32(offset), grid(groups, host.maxWorkgroupsPerDim));
  return y;
}

/** One workgroup per row: mean, then biased variance of (x − mean), then the affine map. */
function layerNormSource(bias: boolean, r: Reduction): string {
  return /* wgsl */ `
${wgslReduceHeader(r)}
struct P { rows: u32, d: u32, eps: f32 }
@group(0) @binding(0) var<uniform> p: P;
@group(0) @binding(1) var<storage, read> x: array<f32>;
@group(0) @binding(2) var<storage, read> w: array<f32>;
${bias ? '@group(0) @binding(3) var<storage, read> b: array<f32>;' : ''}
@group(0) @binding(${bias ? 4 : 3}) var<storage, read_write> y: array<f32>;
${WGSL_FLAT_GROUP}
${wgslReduceSum(r)}
${WGSL_NORM_STATS}
@compute @workgroup_size(${WG})
fn main(@builtin(workgroup_id) wid: vec3u, @builtin(num_workgroups) nwg: vec3u, @builtin(local_invocation_index) li: u32) {
  let r = flat_group(wid, nwg);
  if (r >= p.rows) { return; }
  let o = r * p.d;
  let st = layer_norm_stats(li, o, p.d, p.eps);
  let mean = st.x;
  let inv = st.y;
  for (var i = li; i < p.d; i = i + ${WG}u) { y[o + i] = (x[o + i] - mean) * inv * w[i]${bias ? ' + b[i]' : ''}; }
}`;
}

/**
 * LayerNorm per row of width w.size (Ba et al. 2016, arXiv 1607.06450; torch.nn.LayerNorm with
 * biased variance): (x − μ)/√(σ² + eps)·w + b.
 * @throws Error when x's row width differs from w.size.
 */
export function layerNormGpu(host: KernelHost, x: Tensor, w: Tensor, b: Tensor | undefined, eps: number): GpuTensor {
  const gx = host.gpu(x), gw = host.gpu(w);
  const d = w.size;
  if (d === 0 || x.size % d !== 0) throw new Error(`layerNorm: x [${x.shape}] is not a whole number of rows of ${d} (the weight's size)`);
  const rows = x.size / d;
  const y = host.alloc(x.shape);
  if (rows === 0) return y;
  const tensors = b ? [gx, gw, host.gpu(b), y] : [gx, gw, y];
  host.dispatch(host.pipeline(`layer_norm${b ? '_bias' : ''}:${reduction(host)}`, () => layerNormSource(!!b, reduction(host))), tensors, new Params().u32(rows).u32(d).f32(eps), grid(rows, host.maxWorkgroupsPerDim));
  return y;
}
