import type { Tensor } from '../backend/backend';
import { Params, type GpuTensor, type KernelHost } from '../backend/webgpu_host';

/** Output tile of the tiled matmul: TILE×TILE per workgroup of 16×16, 4×4 outputs per invocation. */
const TILE = 64;
const TK = 16;
/** GEMV: outputs per workgroup (32 lanes each) for the few-row (decode) path. */
const GEMV_ROWS = 8;
/** Up to this many rows use the GEMV path (one pass over w per row); more use the tiled matmul. */
export const GEMV_MAX_ROWS = 4;

/**
 * The weight binding and its accessor `wv(i)` (flat element index): float32, or binary16 pairs
 * packed in u32 words (f16.ts layout) unpacked with core WGSL unpack2x16float.
 */
function weightDecl(f16: boolean): string {
  return f16
    ? `@group(0) @binding(2) var<storage, read> w: array<u32>;
fn wv(i: u32) -> f32 { let pair = unpack2x16float(w[i >> 1u]); return select(pair.x, pair.y, (i & 1u) == 1u); }`
    : `@group(0) @binding(2) var<storage, read> w: array<f32>;
fn wv(i: u32) -> f32 { return w[i]; }`;
}

/**
 * y [n, out] = x [n, in]·wᵀ (+ b), w [out, in]. Each workgroup stages a 64×16 slab of x and of w
 * in workgroup memory per step of 16 along `in`, and each invocation accumulates a 4×4 block of
 * outputs (rows ly + 16a, columns lx + 16b, so that writes are coalesced).
 */
function tiledSource(bias: boolean, f16: boolean): string {
  return /* wgsl */ `
struct P { n: u32, nIn: u32, nOut: u32 }
@group(0) @binding(0) var<uniform> p: P;
@group(0) @binding(1) var<storage, read> x: array<f32>;
${weightDecl(f16)}
${bias ? '@group(0) @binding(3) var<storage, read> b: array<f32>;' : ''}
@group(0) @binding(${bias ? 4 : 3}) var<storage, read_write> y: array<f32>;
var<workgroup> xs: array<f32, ${TILE * TK}>;
var<workgroup> ws: array<f32, ${TILE * TK}>;
@compute @workgroup_size(16, 16)
fn main(@builtin(workgroup_id) wid: vec3u, @builtin(local_invocation_id) lid: vec3u) {
  let row0 = wid.y * ${TILE}u;
  let col0 = wid.x * ${TILE}u;
  let tid = lid.y * 16u + lid.x;
  var acc: array<f32, 16>;
  for (var k0 = 0u; k0 < p.nIn; k0 = k0 + ${TK}u) {
    for (var l = 0u; l < ${(TILE * TK) / 256}u; l = l + 1u) {
      let e = tid + l * 256u;
      let r = e / ${TK}u;
      let gk = k0 + e % ${TK}u;
      var xv = 0.0;
      if (row0 + r < p.n && gk < p.nIn) { xv = x[(row0 + r) * p.nIn + gk]; }
      xs[e] = xv;
      var wval = 0.0;
      if (col0 + r < p.nOut && gk < p.nIn) { wval = wv((col0 + r) * p.nIn + gk); }
      ws[e] = wval;
    }
    workgroupBarrier();
    for (var k = 0u; k < ${TK}u; k = k + 1u) {
      var a: array<f32, 4>;
      var bv: array<f32, 4>;
      for (var i = 0u; i < 4u; i = i + 1u) {
        a[i] = xs[(lid.y + 16u * i) * ${TK}u + k];
        bv[i] = ws[(lid.x + 16u * i) * ${TK}u + k];
      }
      for (var i = 0u; i < 4u; i = i + 1u) {
        for (var j = 0u; j < 4u; j = j + 1u) {
          acc[i * 4u + j] = acc[i * 4u + j] + a[i] * bv[j];
        }
      }
    }
    workgroupBarrier();
  }
  for (var i = 0u; i < 4u; i = i + 1u) {
    let r = row0 + lid.y + 16u * i;
    for (var j = 0u; j < 4u; j = j + 1u) {
      let c = col0 + lid.x + 16u * j;
      if (r < p.n && c < p.nOut) { y[r * p.nOut + c] = acc[i * 4u + j]${bias ? ' + b[c]' : ''}; }
    }
  }
}`;
}

/**
 * GEMV for few rows (decode): a workgroup of 256 computes 8 outputs of one row of x, 32 lanes per
 * output striding along `in` (adjacent lanes read adjacent weights), then a tree sum over the lanes.
 */
function gemvSource(bias: boolean, f16: boolean): string {
  return /* wgsl */ `
struct P { n: u32, nIn: u32, nOut: u32 }
@group(0) @binding(0) var<uniform> p: P;
@group(0) @binding(1) var<storage, read> x: array<f32>;
${weightDecl(f16)}
${bias ? '@group(0) @binding(3) var<storage, read> b: array<f32>;' : ''}
@group(0) @binding(${bias ? 4 : 3}) var<storage, read_write> y: array<f32>;
var<workgroup> red: array<f32, 256>;
@compute @workgroup_size(256)
fn main(@builtin(workgroup_id) wid: vec3u, @builtin(local_invocation_index) li: u32) {
  let o = wid.x * ${GEMV_ROWS}u + li / 32u;
  let lane = li % 32u;
  let r = wid.y;
  var acc = 0.0;
  if (o < p.nOut) {
    let xo = r * p.nIn;
    let wo = o * p.nIn;
    for (var k = lane; k < p.nIn; k = k + 32u) { acc = acc + x[xo + k] * wv(wo + k); }
  }
  red[li] = acc;
  workgroupBarrier();
  for (var s = 16u; s > 0u; s = s >> 1u) {
    if (lane < s) { red[li] = red[li] + red[li + s]; }
    workgroupBarrier();
  }
  if (lane == 0u && o < p.nOut) { y[r * p.nOut + o] = red[li]${bias ? ' + b[o]' : ''}; }
}`;
}

/**
 * Linear layer y = x·wᵀ + b (nn.Linear layout): x [n, in], w [out, in], b [out] → [n, out].
 * n ≤ GEMV_MAX_ROWS takes the GEMV path, larger n the tiled matmul. w may be float32 or f16
 * storage (WebGpuBackend.uploadF16); accumulation is float32 either way.
 * @throws Error when x's row width is not `in`, b's size is not `out`, or the grid exceeds the
 *   device's workgroup limits.
 */
export function linearGpu(host: KernelHost, x: Tensor, w: Tensor, bias?: Tensor): GpuTensor {
  const gx = host.gpu(x), gw = host.gpu(w, true);
  const [nOut, nIn] = w.shape;
  if (w.shape.length !== 2) throw new Error(`linear: weight must be [out, in], got [${w.shape}]`);
  if (x.shape[x.shape.length - 1] !== nIn) throw new Error(`linear: x has ${x.shape[x.shape.length - 1]} columns, weight expects ${nIn}`);
  if (bias && bias.size !== nOut) throw new Error(`linear: bias has ${bias.size} values, weight has ${nOut} outputs`);
  const n = x.size / nIn;
  const y = host.alloc([n, nOut]);
  if (y.size === 0) return y;
  const tensors = bias ? [gx, gw, host.gpu(bias), y] : [gx, gw, y];
  const params = new Params().u32(n).u32(nIn).u32(nOut);
  const max = host.maxWorkgroupsPerDim;
  const f16 = gw.dtype === 'f16';
  const variant = `${bias ? '_bias' : ''}${f16 ? '_f16' : ''}`;
  const gemvGroups = Math.ceil(nOut / GEMV_ROWS);
  if (n <= GEMV_MAX_ROWS && gemvGroups <= max) {
    host.dispatch(host.pipeline(`gemv${variant}`, () => gemvSource(!!bias, f16)), tensors, params, [gemvGroups, n, 1]);
  } else {
    const gx2 = Math.ceil(nOut / TILE), gy = Math.ceil(n / TILE);
    if (gx2 > max || gy > max) throw new Error(`linear: [${n}, ${nIn}]·[${nOut}, ${nIn}]ᵀ needs more than ${max} workgroups per dimension`);
    host.dispatch(host.pipeline(`matmul${variant}`, () => tiledSource(!!bias, f16)), tensors, params, [gx2, gy, 1]);
  }
  return y;
}
