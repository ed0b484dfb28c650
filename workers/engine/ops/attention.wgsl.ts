import type { AttentionParams, Tensor } from '../backend/backend';
import { grid, Params, type GpuTensor, type KernelHost } from '../backend/webgpu_host';
import { attentionSplitGpu, splitPlan, WGSL_SERIAL_SCORE, WGSL_SHARED_Q_SCORE } from './attention_split.wgsl';
import { WGSL_FLAT_GROUP, WGSL_TANH } from './wgsl_math';

const WG = 64;
/** Bits of −Infinity as float32: masked scores are written as raw bits (WGSL has no inf literal). */
const NEG_INF_BITS = 0xff800000;

/**
 * The bindings both attention variants share: params, q, the K and V caches, the optional pattern
 * and scores outputs (numbered after v in that order), and z last.
 */
function bindings(pattern: boolean, scores: boolean): string {
  let b = 4;
  const patB = pattern ? b++ : -1;
  const scB = scores ? b++ : -1;
  return /* wgsl */ `
struct P { n: u32, past: u32, nHeads: u32, nKvHeads: u32, headDim: u32, scale: f32, softcap: f32, window: u32 }
@group(0) @binding(0) var<uniform> p: P;
@group(0) @binding(1) var<storage, read> q: array<f32>;
@group(0) @binding(2) var<storage, read> k: array<f32>;
@group(0) @binding(3) var<storage, read> v: array<f32>;
${pattern ? `@group(0) @binding(${patB}) var<storage, read_write> pat: array<f32>;` : ''}
${scores ? `@group(0) @binding(${scB}) var<storage, read_write> sc: array<u32>;` : ''}
@group(0) @binding(${b}) var<storage, read_write> z: array<f32>;`;
}

/**
 * One workgroup per (head h, query i). Pass 1: online max and Σexp over the visible keys
 * j ∈ [lo, past + i] (Milakov & Gimelshein 2018, arXiv 1805.02867), each invocation taking keys
 * j ≡ lane (mod 64), then a tree merge. Pass 2, in blocks of 64 keys: each invocation computes one
 * probability (and writes the pattern/score row entries when asked), then every invocation adds
 * p_j·v_j to the head dims e ≡ lane (mod 64) it owns. `ept` = ⌈headDim/64⌉ dims per invocation.
 */
function source(ept: number, pattern: boolean, scores: boolean): string {
  const dmax = WG * ept;
  const want = pattern || scores;
  return /* wgsl */ `
${bindings(pattern, scores)}
var<workgroup> qs: array<f32, ${dmax}>;
var<workgroup> pj: array<f32, ${WG}>;
var<workgroup> redM: array<f32, ${WG}>;
var<workgroup> redL: array<f32, ${WG}>;
${WGSL_TANH}
${WGSL_SHARED_Q_SCORE}
@compute @workgroup_size(${WG})
fn main(@builtin(workgroup_id) wid: vec3u, @builtin(local_invocation_index) li: u32) {
  let h = wid.x;
  let i = wid.y;
  let d = p.headDim;
  let T = p.past + p.n;
  let qi = p.past + i;
  var lo = 0u;
  if (p.window > 0u && qi + 1u > p.window) { lo = qi + 1u - p.window; }
  let kvW = p.nKvHeads * d;
  let koff = (h / (p.nHeads / p.nKvHeads)) * d;
  let qo = (i * p.nHeads + h) * d;
  for (var e = li; e < d; e = e + ${WG}u) { qs[e] = q[qo + e]; }
  workgroupBarrier();

  var m = -3.4028234663852886e38;
  var l = 0.0;
  for (var j = lo + li; j <= qi; j = j + ${WG}u) {
    let s = score(j, koff, kvW);
    if (s > m) { l = l * exp(m - s) + 1.0; m = s; } else { l = l + exp(s - m); }
  }
  redM[li] = m;
  redL[li] = l;
  workgroupBarrier();
  for (var st = ${WG / 2}u; st > 0u; st = st >> 1u) {
    if (li < st) {
      let m1 = redM[li];
      let m2 = redM[li + st];
      let mm = max(m1, m2);
      redL[li] = redL[li] * exp(m1 - mm) + redL[li + st] * exp(m2 - mm);
      redM[li] = mm;
    }
    workgroupBarrier();
  }
  let M = redM[0];
  let L = redL[0];

  var acc: array<f32, ${ept}>;
  let row = (h * p.n + i) * T;
  let jFrom = ${want ? '0u' : `(lo / ${WG}u) * ${WG}u`};
  let jTo = ${want ? 'T' : 'qi + 1u'};
  for (var jb = jFrom; jb < jTo; jb = jb + ${WG}u) {
    let j = jb + li;
    var pr = 0.0;
    if (j >= lo && j <= qi) {
      let s = score(j, koff, kvW);
      pr = exp(s - M) / L;
      ${scores ? 'sc[row + j] = bitcast<u32>(s);' : ''}
    } ${scores ? `else if (j < T) { sc[row + j] = ${NEG_INF_BITS}u; }` : ''}
    ${pattern ? 'if (j < T) { pat[row + j] = pr; }' : ''}
    pj[li] = pr;
    workgroupBarrier();
    let j0 = max(jb, lo);
    let j1 = min(jb + ${WG}u, qi + 1u);
    for (var jj = j0; jj < j1; jj = jj + 1u) {
      let pv = pj[jj - jb];
      let vo = jj * kvW + koff;
      for (var t = 0u; t < ${ept}u; t = t + 1u) {
        let e = li + t * ${WG}u;
        if (e < d) { acc[t] = acc[t] + pv * v[vo + e]; }
      }
    }
    workgroupBarrier();
  }
  for (var t = 0u; t < ${ept}u; t = t + 1u) {
    let e = li + t * ${WG}u;
    if (e < d) { z[qo + e] = acc[t]; }
  }
}`;
}

/** 'cpu' kernel: (head, query) pairs per workgroup. */
const CPU_WG = 16;

/**
 * The 'cpu' tuning: one invocation per (head h, query i), no workgroup memory and no barriers.
 * Pass 1: online max and Σexp over the visible keys (as in source()); pass 2 recomputes each
 * score, writes the probability (and pattern/score entries) and adds p_j·v_j to z's row in place;
 * with a pattern or scores, masked entries of their rows are written too. Invocation t takes head
 * t % H of query t / H, so neighbouring invocations read neighbouring q and z.
 */
function serialSource(pattern: boolean, scores: boolean): string {
  return /* wgsl */ `
${bindings(pattern, scores)}
${WGSL_TANH}
${WGSL_FLAT_GROUP}
${WGSL_SERIAL_SCORE}
@compute @workgroup_size(${CPU_WG})
fn main(@builtin(workgroup_id) wid: vec3u, @builtin(num_workgroups) nwg: vec3u, @builtin(local_invocation_index) li: u32) {
  let t = flat_group(wid, nwg) * ${CPU_WG}u + li;
  if (t >= p.nHeads * p.n) { return; }
  let h = t % p.nHeads;
  let i = t / p.nHeads;
  let d = p.headDim;
  let T = p.past + p.n;
  let qi = p.past + i;
  var lo = 0u;
  if (p.window > 0u && qi + 1u > p.window) { lo = qi + 1u - p.window; }
  let kvW = p.nKvHeads * d;
  let koff = (h / (p.nHeads / p.nKvHeads)) * d;
  let qo = (i * p.nHeads + h) * d;
  var m = -3.4028234663852886e38;
  var l = 0.0;
  for (var j = lo; j <= qi; j = j + 1u) {
    let s = score(qo, j * kvW + koff);
    if (s > m) { l = l * exp(m - s) + 1.0; m = s; } else { l = l + exp(s - m); }
  }
  for (var e = 0u; e < d; e = e + 1u) { z[qo + e] = 0.0; }
  let row = (h * p.n + i) * T;
  for (var j = lo; j <= qi; j = j + 1u) {
    let s = score(qo, j * kvW + koff);
    let pr = exp(s - m) / l;
    ${pattern ? 'pat[row + j] = pr;' : ''}
    ${scores ? 'sc[row + j] = bitcast<u32>(s);' : ''}
    let vo = j * kvW + koff;
    for (var e = 0u; e < d; e = e + 1u) { z[qo + e] = z[qo + e] + pr * v[vo + e]; }
  }
  ${pattern || scores ? `for (var j = 0u; j < T; j = j + 1u) {
    if (j < lo || j > qi) {
      ${pattern ? 'pat[row + j] = 0.0;' : ''}
      ${scores ? `sc[row + j] = ${NEG_INF_BITS}u;` : ''}
    }
  }` : ''}
}`;
}

/**
 * Causal multi-head attention with grouped KV heads (Vaswani et al. 2017; GQA: Ainslie et al.
 * 2023, arXiv 2305.13245), optional score soft-capping (Gemma 2) and sliding window, as
 * attentionCpu. q [n, H·d] at positions past..past+n−1; kCache, vCache [ctx, KV·d] hold rows
 * 0..past+n−1. Returns z [n, H·d] and, when asked, the probabilities (masked entries 0) and the
 * masked scores (masked entries −Infinity), both [H, n, past+n]. Tuning 'gpu': one workgroup
 * per (head, query); 'cpu': one invocation per (head, query) (serialSource). Without pattern or
 * scores, a long context is split across workgroups instead (flash-decoding, attention_split.wgsl.ts,
 * when splitPlan says so: two dispatches).
 * @throws Error on inconsistent shapes, H not a multiple of KV, or past+n beyond the cache.
 */
export function attentionGpu(host: KernelHost, q: Tensor, kCache: Tensor, vCache: Tensor, p: AttentionParams): { z: GpuTensor; pattern?: GpuTensor; scores?: GpuTensor } {
  const gq = host.gpu(q), gk = host.gpu(kCache), gv = host.gpu(vCache);
  const { n, past, nHeads: H, nKvHeads: KV, headDim: d } = p;
  const T = past + n;
  if (!(KV > 0 && H % KV === 0)) throw new Error(`attention: ${H} query heads are not a multiple of ${KV} kv heads`);
  if (q.size !== n * H * d) throw new Error(`attention: q [${q.shape}] is not [${n}, ${H}·${d}]`);
  const kvW = KV * d;
  for (const [name, c] of [['kCache', kCache], ['vCache', vCache]] as const) {
    if (c.shape[c.shape.length - 1] !== kvW) throw new Error(`attention: ${name} [${c.shape}] rows are not ${KV} kv heads × ${d}`);
    if (c.size / kvW < T) throw new Error(`attention: ${name} holds ${c.size / kvW} positions, this call reads ${T}`);
  }
  const gpu = host.tuning === 'gpu';
  if (gpu && (H > host.maxWorkgroupsPerDim || n > host.maxWorkgroupsPerDim)) throw new Error(`attention: ${H} heads × ${n} queries exceed ${host.maxWorkgroupsPerDim} workgroups per dimension`);
  // flash-decoding for long contexts; hook_pattern / hook_attn_scores take the one-pass kernel,
  // which writes them
  const plan = n === 0 || H === 0 || d === 0 || p.wantPattern || p.wantScores ? null : splitPlan(p, host.tuning, host.flashDecoding, host.threads);
  if (plan) return { z: attentionSplitGpu(host, gq, gk, gv, p, plan) };
  const z = host.alloc([n, H * d]);
  const pattern = p.wantPattern ? host.alloc([H, n, T]) : undefined;
  const scores = p.wantScores ? host.alloc([H, n, T]) : undefined;
  if (n === 0 || H === 0 || d === 0) return { z, pattern, scores };
  const params = new Params().u32(n).u32(past).u32(H).u32(KV).u32(d).f32(p.scale).f32(p.softcap).u32(p.window);
  const tensors = [gq, gk, gv, ...(pattern ? [pattern] : []), ...(scores ? [scores] : []), z];
  const want = `${p.wantPattern ? 'p' : ''}${p.wantScores ? 's' : ''}`;
  if (gpu) {
    const ept = Math.ceil(d / WG);
    host.dispatch(host.pipeline(`attention:${ept}:${want}`, () => source(ept, p.wantPattern, p.wantScores)), tensors, params, [H, n, 1]);
  } else {
    const pipe = host.pipeline(`attention_serial:${want}`, () => serialSource(p.wantPattern, p.wantScores));
    host.dispatch(pipe, tensors, params, grid(Math.ceil((H * n) / CPU_WG), host.maxWorkgroupsPerDim));
  }
  return { z, pattern, scores };
}
