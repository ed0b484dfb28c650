/**
 * The backward pass: the gradient of a scalar objective of one run (a margin between two futures'
 * first tokens at a position, or the log-prob of a teacher-forced span) with respect to every
 * [pos, width] hook of the run (TransformerLens names: hook_embed, blocks.l.hook_resid_pre,
 * ln1.hook_normalized, attn.hook_q / k / v / z, hook_attn_out, hook_resid_mid, ln2.hook_normalized,
 * mlp.hook_pre / hook_post, hook_mlp_out, hook_resid_post, ln_final.hook_normalized).
 *
 * Not a general autograd: one reverse pass over the one shared block (model/transformer.ts), written
 * once and parameterised by the ModelSpec as the forward is (RMSNorm / LayerNorm, rotary with partial
 * rotary dims, grouped-query attention with the causal mask, sliding window and soft-capping,
 * gated and plain MLPs, Gemma 2's sandwich norms, QK-norm, parallel residual, final soft-capping,
 * tied or untied W_U), with per-op rules beside the CPU references (ops/*_backward.cpu.ts).
 *
 * The forward is the engine's own: `recordForward` runs Transformer.forward once with a RunContext
 * capturing the hooks the rules need (interventions apply as in any run; captured values are after
 * them, so ∂m/∂h is the gradient at the value the run continued with). What no hook holds is
 * recomputed from a captured input (the norms' scales, the gated MLP's up projection, the branch
 * outputs before a sandwich norm, q/k before QK-norm). The backward then runs **on the host, in
 * float64, for both backends** (the CPU reference; no WGSL backward kernels yet: a WebGPU engine
 * reads its recorded activations and weights back and differentiates here).
 *
 * Memory (backwardMemory): a backward keeps the recorded activations (float32, per layer 7 rows of
 * d_model, q/z of n_heads·d_head, k/v of n_kv_heads·d_head, pre/post of d_mlp, and the attention
 * pattern H·T² — plus the scores with soft-capping), a float32 host copy of the weights, the logit
 * rows the objective reads (one for a last-position margin), the kept gradients (float64) and one
 * layer's working gradients. A prompt over the budget (default 2 GiB) is refused with the numbers
 * before the forward runs. SmolLM-135M, T = 256, keeping resid_pre: ≈ 0.9 GiB (0.5 of it weights);
 * the patterns grow as T²: ≈ 1 GiB of them alone at T = 1024, so T = 1024 is refused at 2 GiB.
 */
import type { Backend, Tensor } from '../backend/backend';
import type { ModelSpec } from '../arch/spec';
import type { Transformer } from './transformer';
import { RunContext } from './run_context';
import type { Intervention } from './intervention';
import { rmsNormBackward, layerNormBackward } from '../ops/norm_backward.cpu';
import { ropeBackward } from '../ops/rope_backward.cpu';
import { activateGrad } from '../ops/activation_backward.cpu';
import { attentionBackward } from '../ops/attention_backward.cpu';
import { activate } from '../ops/activation.cpu';
import { logSumExp } from '../analysis/margin';

/** The scalar a backward differentiates. */
export type Objective =
  /** Δ = log p(good) − log p(bad) at `position` (default the last), sets by logsumexp (DESIGN.md §3 "Margin"). */
  | { kind: 'margin'; good: readonly number[]; bad: readonly number[]; position?: number }
  /** Σ_i log p(targets[i] | ids[0..positions[i]]): the log-prob of a teacher-forced span. */
  | { kind: 'logprob'; positions: readonly number[]; targets: readonly number[] };

/** Default memory budget of one backward (bytes): 2 GiB. */
export const DEFAULT_BACKWARD_BUDGET = 2 ** 31;

export interface BackwardOptions {
  interventions?: readonly Intervention[];
  /** Which hook gradients to keep (default all). */
  keep?: (hook: string) => boolean;
  /** Refuse a backward whose memory (backwardMemory) exceeds this many bytes (default 2 GiB). */
  budgetBytes?: number;
}

export interface GradResult {
  /** The objective's value on the run (nats). */
  value: number;
  /** ∂objective/∂hook [T·width] (float64), keyed by hook name; widths as in hooks.ts. */
  grads: Map<string, Float64Array>;
  /** The recorded activations (float32) by hook name, as the forward captured them. */
  acts: Map<string, Float32Array>;
  T: number;
}

/** What one backward over T tokens keeps, in bytes. */
export interface BackwardMemory { activations: number; patterns: number; weights: number; logits: number; gradients: number; total: number }

/**
 * The bytes a backward over T tokens holds at its peak: the recorded activations (float32: per
 * layer 7·T·d_model, q and z 2·T·n_heads·d_head, k and v 2·T·n_kv_heads·d_head, pre/post 2·T·d_mlp),
 * the attention patterns (L·H·T² float32, twice with soft-capping), the host copy of the weights
 * (float32), the logit rows the objective reads (logitRows·d_vocab), the kept gradients (float64,
 * `keptWidth` values per position, summed over the kept hooks) and one layer's working gradients.
 * SmolLM-135M at T = 256 keeping resid_pre: ≈ 253 MiB activations + 68 patterns + 513 weights + 68
 * gradients ≈ 0.9 GiB.
 */
export function backwardMemory(spec: ModelSpec, T: number, weightParams: number, keptWidth = 4 * spec.nLayers * spec.dModel, logitRows = 1): BackwardMemory {
  const s = spec, qW = s.nHeads * s.dHead, kvW = s.nKvHeads * s.dHead;
  const perLayer = T * (7 * s.dModel + 2 * qW + 2 * kvW + 2 * s.dMlp);
  const patterns = s.nLayers * s.nHeads * T * T * 4 * (s.attnSoftcap > 0 ? 2 : 1);
  const activations = s.nLayers * perLayer * 4;
  const gradients = (T * keptWidth + 2 * perLayer) * 8;
  const weights = weightParams * 4, logits = logitRows * s.dVocab * (4 + 8);
  return { activations, patterns, weights, logits, gradients, total: activations + patterns + weights + logits + gradients };
}

/** Row width of a hook the backward differentiates (0 for one it does not). */
function gradWidth(s: ModelSpec, hook: string): number {
  const t = hook.replace(/^blocks\.\d+\./, '');
  if (/^attn\.hook_[qz]$/.test(t)) return s.nHeads * s.dHead;
  if (/^attn\.hook_[kv]$/.test(t)) return s.nKvHeads * s.dHead;
  if (/^mlp\.hook_(pre|post)$/.test(t)) return s.dMlp;
  return /^(hook_(embed|pos_embed|resid_pre|resid_mid|resid_post|attn_out|mlp_out)|ln[12]\.hook_normalized|ln_final\.hook_normalized)$/.test(t) ? s.dModel : 0;
}

const MiB = (b: number) => `${(b / 2 ** 20).toFixed(1)} MiB`;

/** Every hook the backward differentiates. */
export function gradHookNames(spec: ModelSpec): string[] {
  const out = ['hook_embed', ...(spec.positional === 'learned' ? ['hook_pos_embed'] : [])];
  for (let l = 0; l < spec.nLayers; l++) {
    for (const t of ['hook_resid_pre', 'ln1.hook_normalized', 'attn.hook_q', 'attn.hook_k', 'attn.hook_v', 'attn.hook_z', 'hook_attn_out', ...(spec.parallelResidual ? [] : ['hook_resid_mid']),
      'ln2.hook_normalized', 'mlp.hook_pre', 'mlp.hook_post', 'hook_mlp_out', 'hook_resid_post']) out.push(`blocks.${l}.${t}`);
  }
  out.push('ln_final.hook_normalized');
  return out;
}

/** The hooks the backward rules read, per layer. */
function recordedHooks(spec: ModelSpec): string[] {
  const out = ['hook_embed'];
  for (let l = 0; l < spec.nLayers; l++) {
    const h = `blocks.${l}.`;
    out.push(`${h}hook_resid_pre`, `${h}ln1.hook_normalized`, `${h}attn.hook_q`, `${h}attn.hook_k`, `${h}attn.hook_v`, `${h}attn.hook_pattern`,
      `${h}attn.hook_z`, `${h}hook_attn_out`, `${h}ln2.hook_normalized`, `${h}mlp.hook_pre`, `${h}mlp.hook_post`, `${h}hook_mlp_out`, `${h}hook_resid_post`);
    if (!spec.parallelResidual) out.push(`${h}hook_resid_mid`);
    if (spec.attnSoftcap > 0) out.push(`${h}attn.hook_attn_scores`);
  }
  return out;
}

/** Weights read back to the host once per model (float32; quantised weights dequantised). */
interface HostLinear { w: Float32Array; b?: Float32Array; out: number; in: number }
interface HostNorm { w: Float32Array; b?: Float32Array }
interface HostBlock { ln1: HostNorm; ln2: HostNorm; q: HostLinear; k: HostLinear; v: HostLinear; o: HostLinear; gate?: HostLinear; up: HostLinear; down: HostLinear; qNorm?: Float32Array; kNorm?: Float32Array; postAttnNorm?: HostNorm; postMlpNorm?: HostNorm }
interface HostWeights { blocks: HostBlock[]; lnFinal: HostNorm; unembed: HostLinear; unembedBias?: Float32Array; params: number }

const hostCache = new WeakMap<Transformer, Promise<HostWeights>>();

function hostWeights(model: Transformer): Promise<HostWeights> {
  let p = hostCache.get(model);
  if (!p) { p = readWeights(model.backend, model); hostCache.set(model, p); }
  return p;
}

async function readWeights(b: Backend, model: Transformer): Promise<HostWeights> {
  let params = 0;
  const rd = async (t: Tensor): Promise<Float32Array> => { const a = await b.read(t); params += a.length; return a; };
  const lin = async (p: { w: Tensor; b?: Tensor }): Promise<HostLinear> => ({ w: await rd(p.w), b: p.b ? await rd(p.b) : undefined, out: p.w.shape[0], in: p.w.shape[1] });
  const norm = async (p: { w: Tensor; b?: Tensor }): Promise<HostNorm> => ({ w: await rd(p.w), b: p.b ? await rd(p.b) : undefined });
  const w = model.weights;
  const blocks: HostBlock[] = [];
  for (const [l, bw] of w.blocks.entries()) {
    if (bw.moe || !bw.up || !bw.down) throw new Error(`the backward pass does not cover mixture-of-experts layers (layer ${l} of this ${model.spec.modelType} model is sparse): use the forward-only studies`);
    blocks.push({
      ln1: await norm(bw.ln1), ln2: await norm(bw.ln2), q: await lin(bw.q), k: await lin(bw.k), v: await lin(bw.v), o: await lin(bw.o),
      gate: bw.gate ? await lin(bw.gate) : undefined, up: await lin(bw.up), down: await lin(bw.down),
      qNorm: bw.qNorm ? await rd(bw.qNorm) : undefined, kNorm: bw.kNorm ? await rd(bw.kNorm) : undefined,
      postAttnNorm: bw.postAttnNorm ? await norm(bw.postAttnNorm) : undefined, postMlpNorm: bw.postMlpNorm ? await norm(bw.postMlpNorm) : undefined,
    });
  }
  return { blocks, lnFinal: await norm(w.lnFinal), unembed: await lin({ w: w.unembed }), unembedBias: w.unembedBias ? await rd(w.unembedBias) : undefined, params };
}

/** dx [T, in] = dy [T, out] · W [out, in] (the input gradient of y = x·Wᵀ + b), four rows of W per pass over dx. */
function matTBack(dy: Float64Array, p: HostLinear, T: number): Float64Array {
  const n = p.in, w = p.w, dx = new Float64Array(T * n);
  const o4 = p.out - (p.out % 4);
  for (let t = 0; t < T; t++) {
    const xo = t * n, yo = t * p.out;
    for (let o = 0; o < o4; o += 4) {
      const a0 = dy[yo + o], a1 = dy[yo + o + 1], a2 = dy[yo + o + 2], a3 = dy[yo + o + 3];
      if (a0 === 0 && a1 === 0 && a2 === 0 && a3 === 0) continue;
      const w0 = o * n, w1 = w0 + n, w2 = w1 + n, w3 = w2 + n;
      for (let i = 0; i < n; i++) dx[xo + i] += a0 * w[w0 + i] + a1 * w[w1 + i] + a2 * w[w2 + i] + a3 * w[w3 + i];
    }
    for (let o = o4; o < p.out; o++) {
      const a = dy[yo + o];
      if (a === 0) continue;
      const wo = o * n;
      for (let i = 0; i < n; i++) dx[xo + i] += a * w[wo + i];
    }
  }
  return dx;
}

/** y [T, out] = x [T, in] · Wᵀ + b in float64 (recomputes a projection no hook holds), four positions per pass over a row of W. */
function matForward(x: ArrayLike<number>, p: HostLinear, T: number): Float64Array {
  const n = p.in, w = p.w, y = new Float64Array(T * p.out);
  const t4 = T - (T % 4);
  for (let o = 0; o < p.out; o++) {
    const wo = o * n, bias = p.b ? p.b[o] : 0;
    for (let t = 0; t < t4; t += 4) {
      const x0 = t * n, x1 = x0 + n, x2 = x1 + n, x3 = x2 + n;
      let a0 = bias, a1 = bias, a2 = bias, a3 = bias;
      for (let i = 0; i < n; i++) { const wi = w[wo + i]; a0 += x[x0 + i] * wi; a1 += x[x1 + i] * wi; a2 += x[x2 + i] * wi; a3 += x[x3 + i] * wi; }
      y[t * p.out + o] = a0; y[(t + 1) * p.out + o] = a1; y[(t + 2) * p.out + o] = a2; y[(t + 3) * p.out + o] = a3;
    }
    for (let t = t4; t < T; t++) {
      let a = bias;
      for (let i = 0; i < n; i++) a += x[t * n + i] * w[wo + i];
      y[t * p.out + o] = a;
    }
  }
  return y;
}

function addInto(a: Float64Array, b: Float64Array): Float64Array {
  for (let i = 0; i < a.length; i++) a[i] += b[i];
  return a;
}

/** The logit rows an objective reads (positions, ascending, distinct). */
export function objectiveRows(obj: Objective, T: number): number[] {
  const rows = obj.kind === 'margin' ? [obj.position ?? T - 1] : [...new Set(obj.positions)].sort((a, b) => a - b);
  for (const p of rows) if (!Number.isInteger(p) || p < 0 || p >= T) throw new Error(`objective position ${p} is outside 0..${T - 1}`);
  if (obj.kind === 'logprob' && obj.positions.length !== obj.targets.length) throw new Error('logprob objective: positions and targets differ in length');
  return rows;
}

/**
 * The value of the objective and ∂objective/∂logits on its rows (float64 [rows.length, V]), from
 * the logits of those rows ([rows.length, V], after final soft-capping), rows = objectiveRows(obj, T).
 */
export function objectiveGrad(logits: Float32Array, T: number, V: number, obj: Objective): { value: number; rows: number[]; dLogits: Float64Array } {
  const rows = objectiveRows(obj, T);
  const at = (p: number) => (logits.length === T * V ? p : rows.indexOf(p));
  const d = new Float64Array(rows.length * V);
  const logSoftmaxRow = (p: number): Float64Array => {
    const row = logits.subarray(at(p) * V, (at(p) + 1) * V);
    const lse = logSumExp(row);
    return Float64Array.from(row, (x) => x - lse);
  };
  if (obj.kind === 'margin') {
    const p = rows[0];
    const lp = logSoftmaxRow(p);
    const side = (set: readonly number[], sign: number): number => {
      const lse = logSumExp(set.map((i) => lp[i]));
      // ∂ log p(set)/∂ logit_v = [v ∈ set]·p_v/p(set) − p_v; the −p_v terms of the two sets cancel
      for (const i of new Set(set)) d[i] += sign * Math.exp(lp[i] - lse);
      return lse;
    };
    const value = side(obj.good, 1) - side(obj.bad, -1);
    return { value, rows, dLogits: d };
  }
  let value = 0;
  obj.positions.forEach((p, k) => {
    const lp = logSoftmaxRow(p), o = rows.indexOf(p) * V;
    value += lp[obj.targets[k]];
    for (let v = 0; v < V; v++) d[o + v] -= Math.exp(lp[v]);
    d[o + obj.targets[k]] += 1;
  });
  return { value, rows, dLogits: d };
}

/**
 * One recorded forward over ids (positions 0..T−1, the KV cache overwritten) and the backward of
 * `obj`: every kept hook's gradient.
 * @throws Error when the backward would exceed the memory budget (the numbers named), or for a bad objective.
 */
export async function backward(model: Transformer, ids: readonly number[], obj: Objective, opts: BackwardOptions = {}): Promise<GradResult> {
  const s = model.spec, b = model.backend, T = ids.length;
  const hw = await hostWeights(model);
  const keep = opts.keep ?? (() => true);
  const rowsNeeded = objectiveRows(obj, T).length;
  let keptWidth = 0;
  for (const h of gradHookNames(s)) if (keep(h)) keptWidth += gradWidth(s, h);
  const mem = backwardMemory(s, T, hw.params, keptWidth, rowsNeeded);
  const budget = opts.budgetBytes ?? DEFAULT_BACKWARD_BUDGET;
  if (mem.total > budget) {
    throw new Error(`a backward over ${T} tokens needs ${MiB(mem.total)} (activations ${MiB(mem.activations)}, attention patterns ${MiB(mem.patterns)}, host weights ${MiB(mem.weights)}, logits ${MiB(mem.logits)}, gradients ${MiB(mem.gradients)}), over the budget of ${MiB(budget)}: shorten the prompt`);
  }
  const rows = objectiveRows(obj, T);
  const lastOnly = rows.length === 1 && rows[0] === T - 1;
  // the recording forward: the engine's own, capturing what the rules read
  const want = new Set(recordedHooks(s));
  const ctx = new RunContext(b, { pos0: 0, n: T, nPrompt: T, step: 0 }, (n) => want.has(n), opts.interventions ?? []);
  const acts = new Map<string, Float32Array>();
  let logits: Float32Array;
  try {
    const out = model.forward(Int32Array.from(ids), ctx, lastOnly ? 'last' : 'all')!;
    for (const [name, t] of ctx.captured) acts.set(name, await b.read(t));
    logits = await b.read(out);
    b.release(out);
  } finally {
    ctx.release();
  }
  if (!lastOnly) logits = Float32Array.from(rows.flatMap((p) => Array.from(logits.subarray(p * s.dVocab, (p + 1) * s.dVocab))));
  const { value, dLogits } = objectiveGrad(logits, T, s.dVocab, obj);
  const grads = backwardFrom(s, hw, acts, rows, logits, dLogits, T, keep);
  return { value, grads, acts, T };
}

/** The reverse pass from ∂m/∂logits on the objective's rows [rows.length, V] over the recorded activations. */
function backwardFrom(s: ModelSpec, w: HostWeights, acts: Map<string, Float32Array>, rows: number[], logits: Float32Array, dLogits: Float64Array, T: number, keep: (h: string) => boolean): Map<string, Float64Array> {
  const grads = new Map<string, Float64Array>();
  const put = (name: string, g: Float64Array) => { if (keep(name)) grads.set(name, g); };
  const act = (name: string): Float32Array => { const a = acts.get(name); if (!a) throw new Error(`backward: the forward did not record ${name}`); return a; };
  const normBack = (x: ArrayLike<number>, n: HostNorm, dy: Float64Array): Float64Array =>
    s.norm === 'rms' ? rmsNormBackward(x, n.w, s.normEps, s.normOffset, dy) : layerNormBackward(x, n.w, s.normEps, dy);
  const L = s.nLayers;

  // unembed: logits = cap·tanh(W_U·ln_f(x)/cap): d/du = 1 − (logit/cap)² from the capped logits
  const dl = s.finalSoftcap > 0 ? Float64Array.from(dLogits, (g, i) => { const c = logits[i] / s.finalSoftcap; return g * (1 - c * c); }) : dLogits;
  const dRows = matTBack(dl, w.unembed, rows.length);
  const dNf = new Float64Array(T * s.dModel);
  rows.forEach((p, r) => dNf.set(dRows.subarray(r * s.dModel, (r + 1) * s.dModel), p * s.dModel));
  put('ln_final.hook_normalized', dNf);
  let dResid = normBack(act(`blocks.${L - 1}.hook_resid_post`), w.lnFinal, dNf);

  for (let l = L - 1; l >= 0; l--) {
    const h = `blocks.${l}.`, bw = w.blocks[l];
    put(`${h}hook_resid_post`, dResid);
    const x = act(`${h}hook_resid_pre`);
    // MLP branch: mlp_out = [postNorm](down(post)); the MLP reads resid_mid, or x with parallel residual
    const dMlpOut = dResid;
    put(`${h}hook_mlp_out`, dMlpOut);
    const post = act(`${h}mlp.hook_post`), pre = act(`${h}mlp.hook_pre`), n2 = act(`${h}ln2.hook_normalized`);
    const dDown = bw.postMlpNorm ? normBack(matForward(post, bw.down, T), bw.postMlpNorm, dMlpOut) : dMlpOut;
    const dPost = matTBack(dDown, bw.down, T);
    put(`${h}mlp.hook_post`, dPost);
    const dPre = new Float64Array(pre.length);
    let dN2: Float64Array;
    if (s.gatedMlp) {
      const up = matForward(n2, bw.up, T);
      const dUp = new Float64Array(pre.length);
      for (let i = 0; i < pre.length; i++) {
        dPre[i] = dPost[i] * up[i] * activateGrad(pre[i], s.act);
        dUp[i] = dPost[i] * activate(pre[i], s.act);
      }
      dN2 = addInto(matTBack(dPre, bw.gate!, T), matTBack(dUp, bw.up, T));
    } else {
      for (let i = 0; i < pre.length; i++) dPre[i] = dPost[i] * activateGrad(pre[i], s.act);
      dN2 = matTBack(dPre, bw.up, T);
    }
    put(`${h}mlp.hook_pre`, dPre);
    put(`${h}ln2.hook_normalized`, dN2);
    const mlpIn = s.parallelResidual ? x : act(`${h}hook_resid_mid`);
    const dMlpIn = normBack(mlpIn, bw.ln2, dN2);
    // attention branch: resid_mid = x + attn_out (parallel: resid_post = x + attn_out + mlp_out)
    let dAttnOut: Float64Array, dX: Float64Array;
    if (s.parallelResidual) {
      dAttnOut = dResid;
      dX = addInto(Float64Array.from(dResid), dMlpIn);
    } else {
      const dMid = addInto(Float64Array.from(dResid), dMlpIn);
      put(`${h}hook_resid_mid`, dMid);
      dAttnOut = dMid;
      dX = Float64Array.from(dMid);
    }
    put(`${h}hook_attn_out`, dAttnOut);
    const z = act(`${h}attn.hook_z`);
    const dO = bw.postAttnNorm ? normBack(matForward(z, bw.o, T), bw.postAttnNorm, dAttnOut) : dAttnOut;
    const dZ = matTBack(dO, bw.o, T);
    put(`${h}attn.hook_z`, dZ);
    const q = act(`${h}attn.hook_q`), k = act(`${h}attn.hook_k`), v = act(`${h}attn.hook_v`);
    const att = attentionBackward(q, k, v, act(`${h}attn.hook_pattern`), s.attnSoftcap > 0 ? act(`${h}attn.hook_attn_scores`) : undefined, dZ,
      { T, nHeads: s.nHeads, nKvHeads: s.nKvHeads, headDim: s.dHead, scale: s.attnScale, softcap: s.attnSoftcap, window: s.windows[l] });
    put(`${h}attn.hook_q`, att.dq); put(`${h}attn.hook_k`, att.dk); put(`${h}attn.hook_v`, att.dv);
    let dq = att.dq, dk = att.dk;
    if (s.positional === 'rotary') {
      const invFreq = s.invFreqPerLayer?.[l] ?? s.invFreq;
      dq = ropeBackward(dq, T, s.nHeads, s.dHead, s.rotaryDims, 0, invFreq);
      dk = ropeBackward(dk, T, s.nKvHeads, s.dHead, s.rotaryDims, 0, invFreq);
    }
    const n1 = act(`${h}ln1.hook_normalized`);
    if (s.qkNorm) {
      dq = rmsNormBackward(matForward(n1, bw.q, T), bw.qNorm!, s.normEps, s.normOffset, dq);
      dk = rmsNormBackward(matForward(n1, bw.k, T), bw.kNorm!, s.normEps, s.normOffset, dk);
    }
    const dN1 = addInto(addInto(matTBack(dq, bw.q, T), matTBack(dk, bw.k, T)), matTBack(att.dv, bw.v, T));
    put(`${h}ln1.hook_normalized`, dN1);
    addInto(dX, normBack(x, bw.ln1, dN1));
    put(`${h}hook_resid_pre`, dX);
    dResid = dX;
  }
  // resid_pre of block 0 = hook_embed (+ hook_pos_embed): the same gradient
  put('hook_embed', dResid);
  if (s.positional === 'learned') put('hook_pos_embed', dResid);
  return grads;
}
