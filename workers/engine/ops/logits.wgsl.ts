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

/** 'cpu' log_softmax: rows per workgroup. */
const LSM_CPU_WG = 16;

/** The 'cpu' tuning: one invocation per row, the same three passes as plain loops (no barriers). */
const LOG_SOFTMAX_SERIAL = /* wgsl */ `
struct P { rows: u32, c: u32 }
@group(0) @binding(0) var<uniform> p: P;
@group(0) @binding(1) var<storage, read> x: array<f32>;
@group(0) @binding(2) var<storage, read_write> y: array<f32>;
${WGSL_FLAT_GROUP}
@compute @workgroup_size(${LSM_CPU_WG})
fn main(@builtin(workgroup_id) wid: vec3u, @builtin(num_workgroups) nwg: vec3u, @builtin(local_invocation_index) li: u32) {
  let r = flat_group(wid, nwg) * ${LSM_CPU_WG}u + li;
  if (r >= p.rows) { return; }
  let o = r * p.c;
  var m = -3.4028234663852886e38;
  for (var i = 0u; i < p.c; i = i + 1u) { m = max(m, x[o + i]); }
  var sum = 0.0;
  for (var i = 0u; i < p.c; i = i + 1u) { sum = sum + exp(x[o + i] - m); }
  let lse = m + log(sum);
  for (var i = 0u; i < p.c; i = i + 1u) { y[o + i] = x[o + i] - lse; }
}`;

/**
 * log_softmax over each row of x [n, V] → new tensor [n, V]. Tuning 'gpu': one workgroup per row;
 * 'cpu': one invocation per row.
 */
export function logSoftmaxGpu(host: KernelHost, x: Tensor): GpuTensor {
  const gx = host.gpu(x);
  const c = cols(x), rows = x.size / c;
  const y = host.alloc(x.shape);
  const params = new Params().u32(rows).u32(c);
  if (host.tuning === 'gpu') host.dispatch(host.pipeline('log_softmax', () => LOG_SOFTMAX), [gx, y], params, grid(rows, host.maxWorkgroupsPerDim));
  else host.dispatch(host.pipeline('log_softmax_serial', () => LOG_SOFTMAX_SERIAL), [gx, y], params, grid(Math.ceil(rows / LSM_CPU_WG), host.maxWorkgroupsPerDim));
  return y;
}

/** Column of an empty top-k slot. */
const NONE = 0xffffffff;
/** Largest k that the selection kernel handles (each invocation keeps its best k in private arrays). */
const SEL_KMAX = 16;
/** Entries that one invocation of the selection kernel scans per pass. */
const SEL_SPAN = 128;
const SEL_WG = 64;

/**
 * Selection pass for k ≤ SEL_KMAX, no workgroup memory and no barriers. The m entries of each row
 * are dealt to G = ⌈m/SEL_SPAN⌉ invocations (invocation g takes entries g, g + G, g + 2G, …, so
 * neighbouring invocations read neighbouring entries); each keeps its best kk by insertion into a
 * sorted private list (larger value first, lower column on ties) and writes it as kk pairs
 * (value bits, column; column 0xffffffff where it had fewer). Output [rows, G, kk] pairs. The first
 * pass reads x (entry e = column e); later passes read the previous pass's pairs, until G = 1.
 */
function selectSource(pairs: boolean): string {
  return /* wgsl */ `
struct P { rows: u32, m: u32, groups: u32, kk: u32 }
@group(0) @binding(0) var<uniform> p: P;
@group(0) @binding(1) var<storage, read> src: array<${pairs ? 'u32' : 'f32'}>;
@group(0) @binding(2) var<storage, read_write> out: array<u32>;
${WGSL_FLAT_GROUP}
const NONE = ${NONE}u;
// true when candidate (va, ia) ranks before (vb, ib); NONE ranks last
fn before(va: f32, ia: u32, vb: f32, ib: u32) -> bool {
  if (ia == NONE) { return false; }
  if (ib == NONE) { return true; }
  return va > vb || (va == vb && ia < ib);
}
@compute @workgroup_size(${SEL_WG})
fn main(@builtin(workgroup_id) wid: vec3u, @builtin(num_workgroups) nwg: vec3u, @builtin(local_invocation_index) li: u32) {
  let inv = flat_group(wid, nwg) * ${SEL_WG}u + li;
  if (inv >= p.rows * p.groups) { return; }
  let r = inv / p.groups;
  var tv: array<f32, ${SEL_KMAX}>;
  var ti: array<u32, ${SEL_KMAX}>;
  for (var j = 0u; j < p.kk; j = j + 1u) { ti[j] = NONE; }
  let last = p.kk - 1u;
  for (var e = inv % p.groups; e < p.m; e = e + p.groups) {
    ${pairs
      ? 'let v = bitcast<f32>(src[2u * (r * p.m + e)]);\n    let c = src[2u * (r * p.m + e) + 1u];'
      : 'let v = src[r * p.m + e];\n    let c = e;'}
    if (before(v, c, tv[last], ti[last])) {
      var j = last;
      while (j > 0u && before(v, c, tv[j - 1u], ti[j - 1u])) { tv[j] = tv[j - 1u]; ti[j] = ti[j - 1u]; j = j - 1u; }
      tv[j] = v;
      ti[j] = c;
    }
  }
  for (var j = 0u; j < p.kk; j = j + 1u) {
    out[2u * (inv * p.kk + j)] = bitcast<u32>(tv[j]);
    out[2u * (inv * p.kk + j) + 1u] = ti[j];
  }
}`;
}

const TK_WG = 256;
/** Elements per top-k chunk (one workgroup each); 4 per invocation. */
const TK_CHUNK = 1024;

/**
 * For k > SEL_KMAX. Per (row, chunk of 1024 columns): kk rounds of a workgroup arg-max reduction,
 * each taking the best remaining entry (larger value first, lower index on ties) and marking it
 * taken. Output [rows, chunks, kk] pairs (value bits, column), column 0xffffffff where the chunk
 * ran out.
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
 * topkCpu). k ≤ SEL_KMAX: selection passes (selectSource) on the GPU until one sorted list of k
 * per row is left. Larger k: the GPU reduces each 1024-column chunk to its own top min(k, 1024)
 * and the host merges the n·⌈C/1024⌉·min(k, 1024) candidates.
 * @returns values [n·k] and column indices [n·k], row-major.
 * @throws Error when k ∉ [1, C].
 */
export async function topkGpu(host: KernelHost, read: (t: GpuTensor) => Promise<Float32Array>, x: Tensor, k: number): Promise<{ values: Float32Array; indices: Int32Array }> {
  const gx = host.gpu(x);
  const c = cols(x), rows = x.size / c;
  if (!(Number.isInteger(k) && k >= 1 && k <= c)) throw new Error(`topk: k = ${k} must be an integer in [1, ${c}] (the row width)`);
  // out: [rows, per] pairs (value bits, column), each row's list sorted unless `merge`
  let out: GpuTensor;
  let per: number, merge: boolean;
  if (k <= SEL_KMAX) {
    out = gx;
    for (let m = c, pass = 0; ; pass++) {
      const groups = Math.ceil(m / SEL_SPAN);
      const next = host.alloc([rows * groups * k * 2]);
      const params = new Params().u32(rows).u32(m).u32(groups).u32(k);
      host.dispatch(host.pipeline(`topk_select${pass ? '_pairs' : ''}`, () => selectSource(pass > 0)), [out, next], params, grid(Math.ceil((rows * groups) / SEL_WG), host.maxWorkgroupsPerDim));
      if (pass > 0) host.release(out);
      out = next;
      m = groups * k;
      if (groups === 1) break;
    }
    per = k;
    merge = false;
  } else {
    const chunks = Math.ceil(c / TK_CHUNK);
    const kk = Math.min(k, TK_CHUNK);
    if (chunks > host.maxWorkgroupsPerDim || rows > host.maxWorkgroupsPerDim) throw new Error(`topk: [${x.shape}] needs more workgroups than maxComputeWorkgroupsPerDimension (${host.maxWorkgroupsPerDim})`);
    out = host.alloc([rows * chunks * kk * 2]);
    host.dispatch(host.pipeline('topk', () => TOPK), [gx, out], new Params().u32(rows).u32(c).u32(chunks).u32(kk), [chunks, rows, 1]);
    per = chunks * kk;
    merge = chunks > 1;
  }
  const raw = await read(out);
  host.release(out);
  const bits = new Uint32Array(raw.buffer, raw.byteOffset, raw.length);
  const values = new Float32Array(rows * k);
  const indices = new Int32Array(rows * k);
  for (let r = 0; r < rows; r++) {
    const cand: { v: number; i: number }[] = [];
    for (let j = 0; j < per; j++) {
      const i = bits[2 * (r * per + j) + 1];
      if (i !== NONE) cand.push({ v: raw[2 * (r * per + j)], i });
    }
    if (merge) cand.sort((a, b) => (b.v - a.v) || (a.i - b.i));
    for (let j = 0; j < k; j++) {
      values[r * k + j] = cand[j].v;
      indices[r * k + j] = cand[j].i;
    }
  }
  return { values, indices };
}
