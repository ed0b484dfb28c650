import type { AttentionParams } from '../backend/backend';
import { grid, Params, type FlashDecoding, type GpuTensor, type KernelHost, type KernelTuning } from '../backend/webgpu_host';
import { WGSL_FLAT_GROUP, WGSL_TANH } from './wgsl_math';

/**
 * Flash-decoding (split-K attention; Dao, Haziza, Massa & Sizov, "Flash-Decoding for long-context
 * inference", 2023): the visible keys of each (query, head) are cut into chunks that separate
 * workgroups (or invocations) process in parallel, each leaving a partial (m_c = max score,
 * l_c = Σ exp(s − m_c), a_c = Σ exp(s − m_c)·v) over its chunk; a second kernel combines them
 * with the log-sum-exp rescale of FlashAttention's online softmax (Dao et al. 2022, arXiv
 * 2205.14135; Milakov & Gimelshein 2018, arXiv 1805.02867): M = max_c m_c,
 * z = Σ_c e^{m_c−M}·a_c / Σ_c e^{m_c−M}·l_c. The result equals one-pass attention up to float32
 * rounding order.
 *
 * Why: a decode step has one query row, so the one-pass kernel (attention.wgsl.ts) runs only
 * n_heads workgroups (9 on SmolLM-135M), each walking all T keys: at long T a GPU with tens of
 * compute units sits mostly idle and the step's attention time grows linearly in T on one unit.
 */

/** Lanes of the 'gpu' partial kernel's workgroup. */
const WG = 64;
/** Invocations per workgroup of the 'cpu' partial kernel and of the combine kernel. */
const SERIAL_WG = 4;
const COMBINE_WG = 64;

/**
 * When and how finely to split, per tuning (the adapter's kind, KernelTuning). The visible keys
 * (span) of n_heads·n (head, query) pairs are cut into min(⌈targetUnits / (n_heads·n)⌉,
 * ⌊span / minChunk⌋) chunks of equal length (rounded up to `align`, at most `maxChunk`); fewer than
 * 2 means no split, so a call splits only from span ≥ 2·minChunk on.
 * - 'gpu': one workgroup of 64 lanes per (query, head, chunk). Split up to `targetUnits` = 256
 *   workgroups (a few per compute unit on GPUs with 16–80 of them), in chunks of ≥ `minChunk` = 128
 *   keys (2 per lane: below that the chunk's fixed cost — loading q, two tree reductions, writing
 *   d + 2 partial values — outweighs its keys). Chunks are whole multiples of 64 keys and at most
 *   `maxChunk` = 1024 (the workgroup's score array, 4 KiB): past 256·1024/n_heads keys the
 *   workgroups outnumber the target. SmolLM-135M (9 heads) splits decode from T = 256 on
 *   (2 chunks), T = 2048 into 16 chunks of 128.
 * - 'cpu' (SwiftShader, lavapipe: each workgroup runs on one CPU thread): one invocation per
 *   (query, head, chunk) in workgroups of 4. Split up to `targetUnits` = 16 invocations per hardware
 *   thread (navigator.hardwareConcurrency, 4 when unknown) so that every thread gets several
 *   workgroups, in chunks of ≥ 64 keys.
 * With n_heads·n already at the target (prefill, many heads) nothing is split: the one-pass kernel
 * fills the device and needs no second dispatch.
 */
export const SPLIT_TUNING: Record<KernelTuning, { targetUnits: (threads: number) => number; minChunk: number; maxChunk: number; align: number }> = {
  gpu: { targetUnits: () => 256, minChunk: 128, maxChunk: 1024, align: WG },
  cpu: { targetUnits: (threads) => 16 * threads, minChunk: 64, maxChunk: Infinity, align: 1 },
};

/** How one attention call is split: chunks of `chunk` keys from key `base` on; `chunks` ≥ 2. */
export interface SplitPlan {
  base: number;
  chunk: number;
  chunks: number;
}

/**
 * The split of one attention call, or null to run the one-pass kernel. The keys any query of the
 * call can see are base..T−1 with base = max(0, past + 1 − window) (window 0: base 0): a sliding
 * window (Mistral, Gemma 2 local layers) is split over its window only.
 * @param mode 'auto': SPLIT_TUNING's rule; 'off': never; { chunk }: always when the visible keys
 *   span more than one chunk of that many keys (tests force small chunks).
 * @param threads hardware threads ('cpu' tuning's target; ignored by 'gpu').
 * @throws Error when a forced chunk is not a positive integer or exceeds the tuning's maxChunk.
 */
export function splitPlan(p: Pick<AttentionParams, 'n' | 'past' | 'nHeads' | 'window'>, tuning: KernelTuning, mode: FlashDecoding, threads = 4): SplitPlan | null {
  if (mode === 'off') return null;
  const t = SPLIT_TUNING[tuning];
  const T = p.past + p.n;
  const base = p.window > 0 ? Math.max(0, p.past + 1 - p.window) : 0;
  const span = T - base;
  let chunk: number;
  if (mode === 'auto') {
    const units = p.nHeads * p.n;
    const target = t.targetUnits(threads);
    if (units >= target) return null;
    const chunks = Math.min(Math.ceil(target / units), Math.floor(span / t.minChunk));
    if (chunks < 2) return null;
    chunk = Math.min(t.maxChunk, Math.ceil(Math.ceil(span / chunks) / t.align) * t.align);
  } else {
    chunk = mode.chunk;
    if (!(Number.isInteger(chunk) && chunk > 0 && chunk <= t.maxChunk)) throw new Error(`flash-decoding: chunk ${chunk} must be a whole number of keys in 1..${t.maxChunk}`);
  }
  const chunks = Math.ceil(span / chunk);
  return chunks >= 2 ? { base, chunk, chunks } : null;
}

const PARAMS_WGSL = 'struct P { n: u32, past: u32, nHeads: u32, nKvHeads: u32, headDim: u32, scale: f32, softcap: f32, window: u32, base: u32, chunk: u32, nChunks: u32 }';

/** Bindings of both partial kernels: q, caches, then the partials ml [n, H, chunks, 2] and acc [n, H, chunks, d]. */
const PARTIAL_BINDINGS = /* wgsl */ `
${PARAMS_WGSL}
@group(0) @binding(0) var<uniform> p: P;
@group(0) @binding(1) var<storage, read> q: array<f32>;
@group(0) @binding(2) var<storage, read> k: array<f32>;
@group(0) @binding(3) var<storage, read> v: array<f32>;
@group(0) @binding(4) var<storage, read_write> ml: array<f32>;
@group(0) @binding(5) var<storage, read_write> acc: array<f32>;
${WGSL_TANH}
/** The visible keys [j0, j1) of query i in chunk c (empty when the window or causality hides it all). */
fn chunk_range(i: u32, c: u32) -> vec2u {
  let qi = p.past + i;
  var lo = 0u;
  if (p.window > 0u && qi + 1u > p.window) { lo = qi + 1u - p.window; }
  let j0 = max(p.base + c * p.chunk, lo);
  let j1 = min(p.base + (c + 1u) * p.chunk, qi + 1u);
  return vec2u(j0, max(j0, j1));
}`;

/**
 * 'gpu' partial kernel: one workgroup per (chunk c, head h, query i). Each lane scores keys
 * j ≡ lane (mod 64) of the chunk into workgroup memory; a tree max gives m_c, each lane turns its
 * scores into exp(s − m_c), a tree sum gives l_c; then every lane sums exp(s_j − m_c)·v_j over the
 * chunk for the head dims e ≡ lane (mod 64) it owns. An empty chunk leaves m = −3.4e38, l = 0, a = 0.
 */
function gpuSource(ept: number, maxChunk: number): string {
  return /* wgsl */ `
${PARTIAL_BINDINGS}
var<workgroup> qs: array<f32, ${WG * ept}>;
var<workgroup> ps: array<f32, ${maxChunk}>;
var<workgroup> red: array<f32, ${WG}>;
${WGSL_SHARED_Q_SCORE}
@compute @workgroup_size(${WG})
fn main(@builtin(workgroup_id) wid: vec3u, @builtin(local_invocation_index) li: u32) {
  let c = wid.x;
  let h = wid.y;
  let i = wid.z;
  let d = p.headDim;
  let r = chunk_range(i, c);
  let kvW = p.nKvHeads * d;
  let koff = (h / (p.nHeads / p.nKvHeads)) * d;
  let qo = (i * p.nHeads + h) * d;
  for (var e = li; e < d; e = e + ${WG}u) { qs[e] = q[qo + e]; }
  workgroupBarrier();
  var m = -3.4028234663852886e38;
  for (var j = r.x + li; j < r.y; j = j + ${WG}u) {
    let s = score(j, koff, kvW);
    ps[j - r.x] = s;
    m = max(m, s);
  }
  red[li] = m;
  workgroupBarrier();
  for (var st = ${WG / 2}u; st > 0u; st = st >> 1u) {
    if (li < st) { red[li] = max(red[li], red[li + st]); }
    workgroupBarrier();
  }
  let M = red[0];
  workgroupBarrier();
  var l = 0.0;
  for (var j = r.x + li; j < r.y; j = j + ${WG}u) {
    let w = exp(ps[j - r.x] - M);
    ps[j - r.x] = w;
    l = l + w;
  }
  red[li] = l;
  workgroupBarrier();
  for (var st = ${WG / 2}u; st > 0u; st = st >> 1u) {
    if (li < st) { red[li] = red[li] + red[li + st]; }
    workgroupBarrier();
  }
  let slot = (i * p.nHeads + h) * p.nChunks + c;
  if (li == 0u) { ml[2u * slot] = M; ml[2u * slot + 1u] = red[0]; }
  for (var t = 0u; t < ${ept}u; t = t + 1u) {
    let e = li + t * ${WG}u;
    if (e < d) {
      var a = 0.0;
      for (var j = r.x; j < r.y; j = j + 1u) { a = a + ps[j - r.x] * v[j * kvW + koff + e]; }
      acc[slot * d + e] = a;
    }
  }
}`;
}

/**
 * The workgroup kernels' attention score of key j (WGSL; needs the query row staged in workgroup
 * array qs, bindings k, uniform p with headDim, scale, softcap, and tanh_acc): s = (q·k_j)·scale,
 * soft-capped as WGSL_SERIAL_SCORE; kvW = n_kv_heads·d_head, koff = the query head's KV head offset.
 */
export const WGSL_SHARED_Q_SCORE = /* wgsl */ `
fn score(j: u32, koff: u32, kvW: u32) -> f32 {
  var qk = 0.0;
  let ko = j * kvW + koff;
  for (var e = 0u; e < p.headDim; e = e + 1u) { qk = qk + qs[e] * k[ko + e]; }
  var s = qk * p.scale;
  if (p.softcap > 0.0) { s = tanh_acc(s / p.softcap) * p.softcap; }
  return s;
}
`;

/**
 * The serial kernels' attention score of query row offset qo against key row offset ko (WGSL; needs
 * bindings q, k, uniform p with headDim, scale, softcap, and tanh_acc): s = (q·k)·scale, then Gemma
 * 2's soft cap s ← c·tanh(s / c) when p.softcap > 0 (Gemma 2 report, 2024, §2).
 */
export const WGSL_SERIAL_SCORE = /* wgsl */ `
fn score(qo: u32, ko: u32) -> f32 {
  var qk = 0.0;
  for (var e = 0u; e < p.headDim; e = e + 1u) { qk = qk + q[qo + e] * k[ko + e]; }
  var s = qk * p.scale;
  if (p.softcap > 0.0) { s = tanh_acc(s / p.softcap) * p.softcap; }
  return s;
}
`;

/**
 * 'cpu' partial kernel: one invocation per (query i, head h, chunk c), no workgroup memory and no
 * barriers, as attention.wgsl.ts's serialSource: an online max and Σexp over the chunk, then
 * exp(s_j − m_c)·v_j summed into the chunk's acc row in place. Invocation t takes chunk t % chunks
 * of (i, h) = t / chunks, so a workgroup's invocations share one head's q row.
 */
const CPU_SOURCE = /* wgsl */ `
${PARTIAL_BINDINGS}
${WGSL_FLAT_GROUP}
${WGSL_SERIAL_SCORE}
@compute @workgroup_size(${SERIAL_WG})
fn main(@builtin(workgroup_id) wid: vec3u, @builtin(num_workgroups) nwg: vec3u, @builtin(local_invocation_index) li: u32) {
  let slot = flat_group(wid, nwg) * ${SERIAL_WG}u + li;
  if (slot >= p.n * p.nHeads * p.nChunks) { return; }
  let c = slot % p.nChunks;
  let h = (slot / p.nChunks) % p.nHeads;
  let i = slot / (p.nChunks * p.nHeads);
  let d = p.headDim;
  let r = chunk_range(i, c);
  let kvW = p.nKvHeads * d;
  let koff = (h / (p.nHeads / p.nKvHeads)) * d;
  let qo = (i * p.nHeads + h) * d;
  var m = -3.4028234663852886e38;
  var l = 0.0;
  for (var j = r.x; j < r.y; j = j + 1u) {
    let s = score(qo, j * kvW + koff);
    if (s > m) { l = l * exp(m - s) + 1.0; m = s; } else { l = l + exp(s - m); }
  }
  ml[2u * slot] = m;
  ml[2u * slot + 1u] = l;
  let ao = slot * d;
  for (var e = 0u; e < d; e = e + 1u) { acc[ao + e] = 0.0; }
  for (var j = r.x; j < r.y; j = j + 1u) {
    let w = exp(score(qo, j * kvW + koff) - m);
    let vo = j * kvW + koff;
    for (var e = 0u; e < d; e = e + 1u) { acc[ao + e] = acc[ao + e] + w * v[vo + e]; }
  }
}`;

/**
 * The combine kernel (both tunings): one invocation per output element z[i, h·d + e]:
 * M = max_c m_c, then z = Σ_c e^{m_c−M}·a_c[e] / Σ_c e^{m_c−M}·l_c. Chunks that saw no key
 * (m = −3.4e38, l = 0) weigh 0; every (query, head) sees at least its own key, so the sum is > 0.
 */
const COMBINE_SOURCE = /* wgsl */ `
${PARAMS_WGSL}
@group(0) @binding(0) var<uniform> p: P;
@group(0) @binding(1) var<storage, read> ml: array<f32>;
@group(0) @binding(2) var<storage, read> acc: array<f32>;
@group(0) @binding(3) var<storage, read_write> z: array<f32>;
${WGSL_FLAT_GROUP}
@compute @workgroup_size(${COMBINE_WG})
fn main(@builtin(workgroup_id) wid: vec3u, @builtin(num_workgroups) nwg: vec3u, @builtin(local_invocation_index) li: u32) {
  let t = flat_group(wid, nwg) * ${COMBINE_WG}u + li;
  let d = p.headDim;
  if (t >= p.n * p.nHeads * d) { return; }
  let e = t % d;
  let s0 = (t / d) * p.nChunks;
  var M = -3.4028234663852886e38;
  for (var c = 0u; c < p.nChunks; c = c + 1u) { M = max(M, ml[2u * (s0 + c)]); }
  var L = 0.0;
  var a = 0.0;
  for (var c = 0u; c < p.nChunks; c = c + 1u) {
    let w = exp(ml[2u * (s0 + c)] - M);
    L = L + w * ml[2u * (s0 + c) + 1u];
    a = a + w * acc[(s0 + c) * d + e];
  }
  z[t] = a / L;
}`;

/**
 * Flash-decoding attention: z [n, H·d] for q [n, H·d] against kCache, vCache [ctx, KV·d], split by
 * `plan` (splitPlan) into a partial dispatch and a combine dispatch. Same semantics as
 * attentionGpu without pattern or scores (GQA, scale, Gemma 2 soft-capping, sliding window);
 * the caller has validated the shapes. Temporaries: ml [n·H·chunks·2] and acc [n·H·chunks·d]
 * floats, released after the combine is recorded.
 * @throws Error when the grid exceeds maxComputeWorkgroupsPerDimension.
 */
export function attentionSplitGpu(host: KernelHost, q: GpuTensor, k: GpuTensor, v: GpuTensor, p: AttentionParams, plan: SplitPlan): GpuTensor {
  const { n, nHeads: H, headDim: d } = p;
  const slots = n * H * plan.chunks;
  const params = new Params().u32(n).u32(p.past).u32(H).u32(p.nKvHeads).u32(d).f32(p.scale).f32(p.softcap).u32(p.window)
    .u32(plan.base).u32(plan.chunk).u32(plan.chunks);
  const ml = host.alloc([slots, 2]);
  const acc = host.alloc([slots, d]);
  if (host.tuning === 'gpu') {
    if (Math.max(plan.chunks, H, n) > host.maxWorkgroupsPerDim) throw new Error(`attention: ${plan.chunks} chunks × ${H} heads × ${n} queries exceed ${host.maxWorkgroupsPerDim} workgroups per dimension`);
    const ept = Math.ceil(d / WG);
    const maxChunk = SPLIT_TUNING.gpu.maxChunk;
    host.dispatch(host.pipeline(`attention_split:${ept}`, () => gpuSource(ept, maxChunk)), [q, k, v, ml, acc], params, [plan.chunks, H, n]);
  } else {
    host.dispatch(host.pipeline('attention_split_serial', () => CPU_SOURCE), [q, k, v, ml, acc], params, grid(Math.ceil(slots / SERIAL_WG), host.maxWorkgroupsPerDim));
  }
  const z = host.alloc([n, H * d]);
  host.dispatch(host.pipeline('attention_combine', () => COMBINE_SOURCE), [ml, acc, z], params, grid(Math.ceil((n * H * d) / COMBINE_WG), host.maxWorkgroupsPerDim));
  host.release(ml);
  host.release(acc);
  return z;
}
