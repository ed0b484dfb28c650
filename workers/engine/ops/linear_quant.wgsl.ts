import type { Tensor } from '../backend/backend';
import { blocksPerRow, scaleOffset, type QuantFormat } from '../backend/quant';
import { Params, type GpuTensor, type KernelHost } from '../backend/webgpu_host';
import { GEMV_MAX_ROWS } from './linear.wgsl';

/** Invocations (outputs) per workgroup of the dot kernel. */
const DOT_WG = 16;
/** GEMV ('gpu' tuning): outputs per workgroup of 256, 32 lanes each. */
const GEMV_ROWS = 8;

/**
 * The shared declarations: params, x [n, in] float32, the packed blocks w (backend/quant.ts layout:
 * quant words, then binary16 scales in pairs), an optional bias, y; and `unpack(bi)`, which fills
 * `qv` with the 32 quants of block bi as 8 vec4f (elements 4t..4t+3 in qv[t]; Q4_0 already minus 8),
 * `scale(bi)` its float32 d, and `xq(r, c)` four values of row r of x from column c (0 past `in`:
 * the padding of a last partial block multiplies zeros).
 */
function common(format: QuantFormat, bias: boolean): string {
  const unpack = format === 'q8_0'
    ? /* wgsl */ `
fn unpack(bi: u32) {
  for (var t = 0u; t < 8u; t = t + 1u) {
    let v = i32(w[bi * 8u + t]);
    qv[t] = vec4f(f32(extractBits(v, 0u, 8u)), f32(extractBits(v, 8u, 8u)), f32(extractBits(v, 16u, 8u)), f32(extractBits(v, 24u, 8u)));
  }
}`
    : /* wgsl */ `
fn unpack(bi: u32) {
  for (var t = 0u; t < 4u; t = t + 1u) {
    let v = w[bi * 4u + t];
    qv[t] = vec4f(f32(extractBits(v, 0u, 4u)), f32(extractBits(v, 8u, 4u)), f32(extractBits(v, 16u, 4u)), f32(extractBits(v, 24u, 4u))) - 8.0;
    qv[t + 4u] = vec4f(f32(extractBits(v, 4u, 4u)), f32(extractBits(v, 12u, 4u)), f32(extractBits(v, 20u, 4u)), f32(extractBits(v, 28u, 4u))) - 8.0;
  }
}`;
  return /* wgsl */ `
struct P { n: u32, nIn: u32, nOut: u32, bpr: u32, s0: u32 }
@group(0) @binding(0) var<uniform> p: P;
@group(0) @binding(1) var<storage, read> x: array<f32>;
@group(0) @binding(2) var<storage, read> w: array<u32>;
${bias ? '@group(0) @binding(3) var<storage, read> b: array<f32>;' : ''}
@group(0) @binding(${bias ? 4 : 3}) var<storage, read_write> y: array<f32>;
var<private> qv: array<vec4f, 8>;
fn scale(bi: u32) -> f32 { let pr = unpack2x16float(w[p.s0 + (bi >> 1u)]); return select(pr.x, pr.y, (bi & 1u) == 1u); }
fn xq(r: u32, c: u32) -> vec4f {
  let o = r * p.nIn + c;
  if (c + 4u <= p.nIn) { return vec4f(x[o], x[o + 1u], x[o + 2u], x[o + 3u]); }
  var v = vec4f(0.0);
  for (var i = 0u; i < 4u; i = i + 1u) { if (c + i < p.nIn) { v[i] = x[o + i]; } }
  return v;
}
fn blockDot(r: u32, c0: u32) -> f32 {
  var s = 0.0;
  for (var t = 0u; t < 8u; t = t + 1u) { s = s + dot(xq(r, c0 + 4u * t), qv[t]); }
  return s;
}
${unpack}`;
}

/**
 * One invocation per output column o and block of `rb` rows of x: walks w's row o block by block,
 * unpacks each block's quants once and accumulates d·Σ x·q for each of its rows (rows past n repeat
 * the last row and are not written). No workgroup memory or barriers (suits CPU implementations of
 * WebGPU; on a GPU it is the prefill path).
 */
function dotSource(format: QuantFormat, bias: boolean, rb: number): string {
  return /* wgsl */ `
${common(format, bias)}
@compute @workgroup_size(${DOT_WG})
fn main(@builtin(global_invocation_id) gid: vec3u) {
  let o = gid.x;
  if (o >= p.nOut) { return; }
  let r0 = gid.y * ${rb}u;
  let last = p.n - 1u;
  var acc: array<f32, ${rb}>;
  for (var blk = 0u; blk < p.bpr; blk = blk + 1u) {
    let bi = o * p.bpr + blk;
    unpack(bi);
    let d = scale(bi);
    for (var j = 0u; j < ${rb}u; j = j + 1u) { acc[j] = acc[j] + d * blockDot(min(r0 + j, last), blk * 32u); }
  }
  for (var j = 0u; j < ${rb}u; j = j + 1u) {
    if (r0 + j < p.n) { y[(r0 + j) * p.nOut + o] = acc[j]${bias ? ' + b[o]' : ''}; }
  }
}`;
}

/**
 * GEMV for few rows on a hardware GPU: a workgroup of 256 computes 8 outputs of one row of x, 32
 * lanes per output each taking every 32nd block, then a tree sum over the lanes.
 */
function gemvSource(format: QuantFormat, bias: boolean): string {
  return /* wgsl */ `
${common(format, bias)}
var<workgroup> red: array<f32, 256>;
@compute @workgroup_size(256)
fn main(@builtin(workgroup_id) wid: vec3u, @builtin(local_invocation_index) li: u32) {
  let o = wid.x * ${GEMV_ROWS}u + li / 32u;
  let lane = li % 32u;
  let r = wid.y;
  var acc = 0.0;
  if (o < p.nOut) {
    for (var blk = lane; blk < p.bpr; blk = blk + 32u) {
      let bi = o * p.bpr + blk;
      unpack(bi);
      acc = acc + scale(bi) * blockDot(r, blk * 32u);
    }
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

/** Whether a GPU tensor holds block-quantised storage. */
export function isQuantTensor(t: Tensor): boolean {
  const dtype = (t as { dtype?: unknown }).dtype;
  return dtype === 'q8_0' || dtype === 'q4_0';
}

/**
 * y [n, out] = x [n, in] · dequant(w)ᵀ + b for a block-quantised weight w [out, in]
 * (WebGpuBackend.uploadQuant; Q8_0 / Q4_0, backend/quant.ts): the kernels read the packed blocks
 * and dequantise in registers (d·q, d·(q − 8)), accumulating in float32. Tuning 'gpu' with
 * n ≤ GEMV_MAX_ROWS: the lane-split GEMV; otherwise the dot kernel with rows in blocks of 1, 4 or 8.
 * @throws Error when w is not quantised, x's row width is not `in`, b's size is not `out`, or the
 *   grid exceeds the device's workgroup limits.
 */
export function linearQuantGpu(host: KernelHost, x: Tensor, w: Tensor, bias?: Tensor): GpuTensor {
  const gx = host.gpu(x);
  const gw = host.gpu(w, true);
  const format = gw.dtype;
  if (format !== 'q8_0' && format !== 'q4_0') throw new Error(`linearQuant: weight [${w.shape}] is ${format}, not block-quantised`);
  const [nOut, nIn] = w.shape;
  if (x.shape[x.shape.length - 1] !== nIn) throw new Error(`linear: x has ${x.shape[x.shape.length - 1]} columns, weight expects ${nIn}`);
  if (bias && bias.size !== nOut) throw new Error(`linear: bias has ${bias.size} values, weight has ${nOut} outputs`);
  const gb = bias ? host.gpu(bias) : undefined;
  const n = x.size / nIn;
  const y = host.alloc([n, nOut]);
  if (y.size === 0) return y;
  const tensors = gb ? [gx, gw, gb, y] : [gx, gw, y];
  const params = new Params().u32(n).u32(nIn).u32(nOut).u32(blocksPerRow(nIn)).u32(scaleOffset(format, nOut, nIn));
  const variant = `${format}${gb ? '_bias' : ''}`;
  const max = host.maxWorkgroupsPerDim;
  const gemvGroups = Math.ceil(nOut / GEMV_ROWS);
  if (host.tuning === 'gpu' && n <= GEMV_MAX_ROWS && gemvGroups <= max) {
    host.dispatch(host.pipeline(`linear_quant_gemv_${variant}`, () => gemvSource(format, !!gb)), tensors, params, [gemvGroups, n, 1]);
    return y;
  }
  const rb = n <= 1 ? 1 : n <= 4 ? 4 : 8;
  const gxs = Math.ceil(nOut / DOT_WG), gy = Math.ceil(n / rb);
  if (gxs > max || gy > max) throw new Error(`linear: [${n}, ${nIn}]·[${nOut}, ${nIn}]ᵀ needs more than ${max} workgroups per dimension`);
  host.dispatch(host.pipeline(`linear_quant_dot${rb}_${variant}`, () => dotSource(format, !!gb, rb)), tensors, params, [gxs, gy, 1]);
  return y;
}
