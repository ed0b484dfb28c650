import type { Tensor } from '../backend/backend';
import { grid, Params, type GpuTensor, type KernelHost } from '../backend/webgpu_host';
import { unaryGpu } from './elementwise.wgsl';
import { WGSL_FLAT_GROUP, WGSL_TANH } from './wgsl_math';

const cols = (t: Tensor): number => t.shape[t.shape.length - 1];

/** cap·tanh(x/cap) elementwise (Gemma 2 final_logit_softcapping) → new tensor. */
export function softcapGpu(host: KernelHost, x: Tensor, cap: number): GpuTensor {
  return unaryGpu(host, 'softcap', 'tanh_acc(a / p.c) * p.c', WGSL_TANH, x, cap);
}

const LSM_WG = 256;

/** One workgroup per row: max, then Σ exp(x − max), then x − (max + log Σ). */
const LOG_SOFTMAX = /* wgsl */ `
struct P { rows: u32, c: u32 }
@group(0) @binding(0) var<uniform> p: P;
@group(0) @binding(1) var<storage, read> x: array<f32>;
@group(0) @binding(2) var<storage, read_write> y: array<f32>;
var<workgroup> red: array<f32, ${LSM_WG}>;
${WGSL_FLAT_GROUP}
@compute @workgroup_size(${LSM_WG})
fn main(@builtin(workgroup_id) wid: vec3u, @builtin(num_workgroups) nwg: vec3u, @builtin(local_invocation_index) li: u32) {
  let r = flat_group(wid, nwg);
  if (r >= p.rows) { return; }
  let o = r * p.c;
  var m = -3.4028234663852886e38;
  for (var i = li; i < p.c; i = i + ${LSM_WG}u) { m = max(m, x[o + i]); }
  red[li] = m;
  workgroupBarrier();
  for (var s = ${LSM_WG / 2}u; s > 0u; s = s >> 1u) {
    if (li < s) { red[li] = max(red[li], red[li + s]); }
    workgroupBarrier();
  }
  let mx = red[0];
  workgroupBarrier();
  var sum = 0.0;
  for (var i = li; i < p.c; i = i + ${LSM_WG}u) { sum = sum + exp(x[o + i] - mx); }
  red[li] = sum;
  workgroupBarrier();
  for (var s = ${LSM_WG / 2}u; s > 0u; s = s >> 1u) {
    if (li < s) { red[li] = red[li] + red[li + s]; }
    workgroupBarrier();
  }
  let lse = mx + log(red[0]);
  for (var i = li; i < p.c; i = i + ${LSM_WG}u) { y[o + i] = x[o + i] - lse; }
}`;

/** log_softmax over each row of x [n, V] → new tensor [n, V]. */
export function logSoftmaxGpu(host: KernelHost, x: Tensor): GpuTensor {
  const gx = host.gpu(x);
  const c = cols(x), rows = x.size / c;
  const y = host.alloc(x.shape);
  host.dispatch(host.pipeline('log_softmax', () => LOG_SOFTMAX), [gx, y], new Params().u32(rows).u32(c), grid(rows, host.maxWorkgroupsPerDim));
  return y;
}

const TK_WG = 256;
/** Elements per top-k chunk (one workgroup each); 4 per invocation. */
const TK_CHUNK = 1024;
const NONE = 0xffffffff;

/**
 * Per (row, chunk of 1024 columns): kk rounds of a workgroup arg-max reduction, each taking the
 * best remaining entry (larger value first, lower index on ties) and marking it taken. Output
 * [rows, chunks, kk] pairs (value bits, column), column 0xffffffff where the chunk ran out.
 */
const TOPK = /* wgsl */ `
struct P { rows: u32, c: u32, chunks: u32, kk: u32 }
@group(0) @binding(0) var<uniform> p: P;
@group(0) @binding(1) var<storage, read> x: array<f32>;
@group(0) @binding(2) var<storage, read_write> out: array<u32>;
var<workgroup> vals: array<f32, ${TK_CHUNK}>;
var<workgroup> idx: array<u32, ${TK_CHUNK}>;
var<workgroup> bestV: array<f32, ${TK_WG}>;
var<workgroup> bestS: array<u32, ${TK_WG}>;
const NONE = ${NONE}u;
// true when candidate (va, ia) ranks before (vb, ib); NONE ranks last
fn before(va: f32, ia: u32, vb: f32, ib: u32) -> bool {
  if (ia == NONE) { return false; }
  if (ib == NONE) { return true; }
  return va > vb || (va == vb && ia < ib);
}
@compute @workgroup_size(${TK_WG})
fn main(@builtin(workgroup_id) wid: vec3u, @builtin(local_invocation_index) li: u32) {
  let chunk = wid.x;
  let r = wid.y;
  let c0 = chunk * ${TK_CHUNK}u;
  for (var e = li; e < ${TK_CHUNK}u; e = e + ${TK_WG}u) {
    let col = c0 + e;
    if (col < p.c) { vals[e] = x[r * p.c + col]; idx[e] = col; } else { vals[e] = 0.0; idx[e] = NONE; }
  }
  workgroupBarrier();
  let ob = (r * p.chunks + chunk) * p.kk;
  for (var round = 0u; round < p.kk; round = round + 1u) {
    var bs = li;
    for (var e = li + ${TK_WG}u; e < ${TK_CHUNK}u; e = e + ${TK_WG}u) {
      if (before(vals[e], idx[e], vals[bs], idx[bs])) { bs = e; }
    }
    bestS[li] = bs;
    bestV[li] = vals[bs];
    workgroupBarrier();
    for (var s = ${TK_WG / 2}u; s > 0u; s = s >> 1u) {
      if (li < s) {
        let a = bestS[li];
        let b = bestS[li + s];
        if (before(bestV[li + s], idx[b], bestV[li], idx[a])) { bestS[li] = b; bestV[li] = bestV[li + s]; }
      }
      workgroupBarrier();
    }
    if (li == 0u) {
      let s = bestS[0];
      out[2u * (ob + round)] = bitcast<u32>(vals[s]);
      out[2u * (ob + round) + 1u] = idx[s];
      idx[s] = NONE;
    }
    workgroupBarrier();
  }
}`;

/**
 * The k largest entries of each row of x [n, C], values descending, ties to the lower column (as
 * topkCpu). The GPU reduces each 1024-column chunk to its own top min(k, 1024); the host merges the
 * n·⌈C/1024⌉·min(k, 1024) candidates.
 * @returns values [n·k] and column indices [n·k], row-major.
 * @throws Error when k ∉ [1, C].
 */
export async function topkGpu(host: KernelHost, read: (t: GpuTensor) => Promise<Float32Array>, x: Tensor, k: number): Promise<{ values: Float32Array; indices: Int32Array }> {
  const gx = host.gpu(x);
  const c = cols(x), rows = x.size / c;
  if (!(Number.isInteger(k) && k >= 1 && k <= c)) throw new Error(`topk: k = ${k} must be an integer in [1, ${c}] (the row width)`);
  const chunks = Math.ceil(c / TK_CHUNK);
  const kk = Math.min(k, TK_CHUNK);
  if (chunks > host.maxWorkgroupsPerDim || rows > host.maxWorkgroupsPerDim) throw new Error(`topk: [${x.shape}] needs more workgroups than maxComputeWorkgroupsPerDimension (${host.maxWorkgroupsPerDim})`);
  const out = host.alloc([rows * chunks * kk * 2]);
  host.dispatch(host.pipeline('topk', () => TOPK), [gx, out], new Params().u32(rows).u32(c).u32(chunks).u32(kk), [chunks, rows, 1]);
  const raw = await read(out);
  host.release(out);
  const bits = new Uint32Array(raw.buffer, raw.byteOffset, raw.length);
  const values = new Float32Array(rows * k);
  const indices = new Int32Array(rows * k);
  const per = chunks * kk;
  for (let r = 0; r < rows; r++) {
    const cand: { v: number; i: number }[] = [];
    for (let j = 0; j < per; j++) {
      const i = bits[2 * (r * per + j) + 1];
      if (i !== NONE) cand.push({ v: raw[2 * (r * per + j)], i });
    }
    if (chunks > 1) cand.sort((a, b) => (b.v - a.v) || (a.i - b.i));
    for (let j = 0; j < k; j++) {
      values[r * k + j] = cand[j].v;
      indices[r * k + j] = cand[j].i;
    }
  }
  return { values, indices };
}
