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
 * tied or untied W_U), with the per-op rules as Backend ops (ops/*_backward.cpu.ts, *_backward.wgsl.ts).
 *
 * The forward is the engine's own: `backward` runs Transformer.forward once with a RunContext
 * capturing the hooks the rules need (interventions apply as in any run; captured values are after
 * them, so ∂m/∂h is the gradient at the value the run continued with), and holding the gated MLP's
 * up projection, which no hook exposes (RunContext.hold, `blocks.{l}.mlp.up`). What else no hook
 * holds is recomputed from a captured input (the norms' scales, the branch outputs before a sandwich
 * norm, q/k before QK-norm). The reverse pass then runs **on the run's
 * backend**, in float32 like the forward, through the Backend's backward ops (backend.ts:
 * linearBackward, linearBackwardSum (the input gradients of q/k/v, and of gate/up, as one product
 * each over the weights stacked by rows), rmsNormBackward, layerNormBackward, actBackward,
 * gatedActBackward, attentionBackward; rotary's backward is rotary by −θ, `rope` with the frequencies negated): the
 * WASM GEMM on the CPU, WGSL kernels on WebGPU (ops/*_backward.wgsl.ts, each checked against its CPU
 * op). Only ∂m/∂logits on the objective's rows is formed on the host (float64; with a margin's few
 * non-zero entries, its product with W_U too, over the gathered rows), and the kept gradients are
 * read back. The reverse pass stops at the lowest layer holding a kept hook.
 *
 * Memory (backwardMemory): a backward keeps the recorded activations on the backend (float32, per
 * layer 6 rows of d_model, q/z of n_heads·d_head, k/v of n_kv_heads·d_head, pre/post (and a gated MLP's up) of d_mlp, and
 * the attention pattern H·T² — plus the scores with soft-capping), the kept gradients (float32 on the
 * backend until read, then float64 on the host), one layer's working gradients (with attention's
 * dS [H, T, T]), the logit rows the objective reads, and, on the CPU, a transposed float32 copy of
 * each block matrix (W_Q, W_K, W_V stacked as one, W_gate and W_up as one; made by the first
 * backward, kept with the model; WebGPU reads the weights as stored, quantised ones too). A prompt over the budget (default 2 GiB) is refused with the
 * numbers before the forward runs. SmolLM-135M, T = 256, keeping resid_pre on the CPU: ≈ 0.81 GiB
 * (0.4 of it the transposed weights); the patterns grow as T²: ≈ 1 GiB of them alone at T = 1024,
 * so T = 1024 is refused at 2 GiB.
 */
import type { Backend, Tensor } from '../backend/backend';
import type { ModelSpec, ModelWeights, NormWeights } from '../arch/spec';
import type { Transformer } from './transformer';
import { RunContext } from './run_context';
import type { Intervention } from './intervention';
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
  /** The recorded activations (float32) of the kept hooks the forward records (hook_embed, resid_pre, attn_out, mlp_out, hook_z, …), as it captured them. */
  acts: Map<string, Float32Array>;
  T: number;
}

/** What one backward over T tokens keeps, in bytes. */
export interface BackwardMemory { activations: number; patterns: number; weights: number; logits: number; gradients: number; total: number }

/**
 * The bytes a backward over T tokens holds at its peak: the recorded activations (float32: per
 * layer 6·T·d_model, q and z 2·T·n_heads·d_head, k and v 2·T·n_kv_heads·d_head, pre/post 2·T·d_mlp and
 * a gated MLP's up T·d_mlp),
 * the attention patterns (L·H·T² float32, twice with soft-capping), the weight copies the backward
 * keeps (`weightCopies` float32 values: on the CPU the transposed block matrices, backwardWeightCopies),
 * the logit rows the objective reads (logitRows·d_vocab, float32 and float64), the kept gradients
 * (`keptWidth` values per position summed over the kept hooks, float32 on the backend and float64
 * on the host) and one layer's working gradients (float32, with attention's dS [H, T, T]).
 * SmolLM-135M at T = 256 keeping resid_pre on the CPU: ≈ 281 MiB activations + 68 patterns + 405
 * transposed weights + 72 gradients ≈ 0.81 GiB.
 */
export function backwardMemory(spec: ModelSpec, T: number, weightCopies: number, keptWidth = 4 * spec.nLayers * spec.dModel, logitRows = 1): BackwardMemory {
  const s = spec, qW = s.nHeads * s.dHead, kvW = s.nKvHeads * s.dHead;
  const perLayer = T * (6 * s.dModel + 2 * qW + 2 * kvW + (s.gatedMlp ? 3 : 2) * s.dMlp);
  const patterns = s.nLayers * s.nHeads * T * T * 4 * (s.attnSoftcap > 0 ? 2 : 1);
  const activations = s.nLayers * perLayer * 4;
  const gradients = T * keptWidth * (4 + 8) + 2 * perLayer * 4 + s.nHeads * T * T * 4;
  const weights = weightCopies * 4, logits = logitRows * s.dVocab * (4 + 8);
  return { activations, patterns, weights, logits, gradients, total: activations + patterns + weights + logits + gradients };
}

/**
 * Float32 values of the weight copies a backward keeps on this backend: on the CPU a transposed copy
 * of every block matrix (the GEMM operand of Backend.linearBackward and linearBackwardSum, W_Q/W_K/W_V
 * and W_gate/W_up each stacked into one copy; the unembedding too when more than 8
 * logit rows are differentiated); none on WebGPU, whose kernels read the weights as stored.
 */
export function backwardWeightCopies(b: Backend, w: ModelWeights, logitRows: number): number {
  if (b.kind !== 'cpu') return 0;
  let n = logitRows > 8 ? w.unembed.size : 0;
  for (const bw of w.blocks) for (const p of [bw.q, bw.k, bw.v, bw.o, bw.gate, bw.up, bw.down]) n += p ? p.w.size : 0;
  return n;
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

/** The hooks the backward records, per layer: those its rules read, with hook_attn_out, hook_mlp_out and hook_resid_post, whose values GradResult.acts returns (AtP's differences). */
function recordedHooks(spec: ModelSpec): string[] {
  const out = ['hook_embed'];
  for (let l = 0; l < spec.nLayers; l++) {
    const h = `blocks.${l}.`;
    out.push(`${h}hook_resid_pre`, `${h}ln1.hook_normalized`, `${h}attn.hook_q`, `${h}attn.hook_k`, `${h}attn.hook_v`, `${h}attn.hook_pattern`,
      `${h}attn.hook_z`, `${h}hook_attn_out`, `${h}mlp.hook_pre`, `${h}mlp.hook_post`, `${h}hook_mlp_out`, `${h}hook_resid_post`);
    if (!spec.parallelResidual) out.push(`${h}hook_resid_mid`);
    if (spec.attnSoftcap > 0) out.push(`${h}attn.hook_attn_scores`);
  }
  return out;
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
 * `obj` on the model's backend: every kept hook's gradient.
 * @throws Error when the backward would exceed the memory budget (the numbers named), for a bad
 *   objective, or for a mixture-of-experts model (sparse layers have no backward rule).
 */
export async function backward(model: Transformer, ids: readonly number[], obj: Objective, opts: BackwardOptions = {}): Promise<GradResult> {
  const s = model.spec, b = model.backend, T = ids.length;
  for (const [l, bw] of model.weights.blocks.entries()) {
    if (bw.moe || !bw.up || !bw.down) throw new Error(`the backward pass does not cover mixture-of-experts layers (layer ${l} of this ${s.modelType} model is sparse): use the forward-only studies`);
  }
  const keep = opts.keep ?? (() => true);
  const rows = objectiveRows(obj, T);
  let keptWidth = 0;
  for (const h of gradHookNames(s)) if (keep(h)) keptWidth += gradWidth(s, h);
  const mem = backwardMemory(s, T, backwardWeightCopies(b, model.weights, rows.length), keptWidth, rows.length);
  const budget = opts.budgetBytes ?? DEFAULT_BACKWARD_BUDGET;
  if (mem.total > budget) {
    throw new Error(`a backward over ${T} tokens needs ${MiB(mem.total)} (activations ${MiB(mem.activations)}, attention patterns ${MiB(mem.patterns)}, weight copies ${MiB(mem.weights)}, logits ${MiB(mem.logits)}, gradients ${MiB(mem.gradients)}), over the budget of ${MiB(budget)}: shorten the prompt`);
  }
  const lastOnly = rows.length === 1 && rows[0] === T - 1;
  // the recording forward: the engine's own, capturing what the rules read
  const want = new Set(recordedHooks(s));
  const ctx = new RunContext(b, { pos0: 0, n: T, nPrompt: T, step: 0 }, (n) => want.has(n), opts.interventions ?? []);
  if (s.gatedMlp) ctx.holdInternal = (n) => n.endsWith('.mlp.up'); // the up projection gatedActBackward reads
  try {
    const out = model.forward(Int32Array.from(ids), ctx, lastOnly ? 'last' : 'all')!;
    let logits = await b.read(out);
    b.release(out);
    if (!lastOnly) logits = Float32Array.from(rows.flatMap((p) => Array.from(logits.subarray(p * s.dVocab, (p + 1) * s.dVocab))));
    const { value, dLogits } = objectiveGrad(logits, T, s.dVocab, obj);
    const kept = await backwardFrom(model, ctx.captured, ctx.internal, rows, logits, dLogits, T, keep);
    const grads = new Map<string, Float64Array>();
    try {
      for (const [name, t] of kept) grads.set(name, Float64Array.from(await b.read(t)));
    } finally {
      for (const t of new Set(kept.values())) b.release(t);
    }
    const acts = new Map<string, Float32Array>();
    for (const [name, t] of ctx.captured) if (keep(name)) acts.set(name, await b.read(t));
    return { value, grads, acts, T };
  } finally {
    ctx.release();
  }
}

/** rope(x) by −θ: rotary's backward (the rotation is orthogonal), as the forward rope with the frequencies negated (cos(−a) = cos a, sin(−a) = −sin a exactly). */
const negatedFreqs = new WeakMap<Float32Array, Float32Array>();
function negated(invFreq: Float32Array): Float32Array {
  let n = negatedFreqs.get(invFreq);
  if (!n) { n = invFreq.map((f) => -f); negatedFreqs.set(invFreq, n); }
  return n;
}

/**
 * The reverse pass from ∂m/∂logits on the objective's rows [rows.length, V] over the recorded
 * activations (backend tensors). @returns the kept hooks' gradients [T, width] (backend tensors
 * the caller releases; hook_embed and hook_pos_embed may share one).
 */
async function backwardFrom(model: Transformer, acts: Map<string, Tensor>, internal: Map<string, Tensor>, rows: number[], logits: Float32Array, dLogits: Float64Array, T: number, keep: (h: string) => boolean): Promise<Map<string, Tensor>> {
  const s = model.spec, b = model.backend, w = model.weights, D = s.dModel, V = s.dVocab;
  const kept = new Map<string, Tensor>();
  const live: Tensor[] = [];
  /** A working gradient: released at the end unless a kept hook holds it. */
  const tmp = (t: Tensor): Tensor => { live.push(t); return t; };
  const put = (name: string, g: Tensor) => { if (keep(name)) kept.set(name, g); };
  const act = (name: string): Tensor => { const a = acts.get(name) ?? internal.get(name); if (!a) throw new Error(`backward: the forward did not record ${name}`); return a; };
  const normBack = (x: Tensor, n: NormWeights, dy: Tensor): Tensor =>
    tmp(s.norm === 'rms' ? b.rmsNormBackward(x, n.w, s.normEps, s.normOffset, dy) : b.layerNormBackward(x, n.w, s.normEps, dy));
  const add = (a: Tensor, c: Tensor): Tensor => tmp(b.add(a, c));
  try {
    // unembed: logits = cap·tanh(W_U·ln_f(x)/cap): d/du = 1 − (logit/cap)² from the capped logits
    const dl = s.finalSoftcap > 0 ? Float64Array.from(dLogits, (g, i) => { const c = logits[i] / s.finalSoftcap; return g * (1 - c * c); }) : dLogits;
    const dNf = new Float32Array(T * D);
    const nonZero: number[] = [];
    for (let i = 0; i < dl.length && nonZero.length <= 64; i++) if (dl[i] !== 0) nonZero.push(i);
    if (nonZero.length <= 64) {
      // a margin's few non-zero entries: Σ_v dl_v·W_U[v] over the gathered rows, in float64
      const rowsT = b.embed(w.unembed, Int32Array.from(nonZero, (i) => i % V), 1);
      const wu = await b.read(rowsT);
      b.release(rowsT);
      const acc = new Float64Array(rows.length * D);
      nonZero.forEach((i, k) => { const r = Math.floor(i / V); for (let c = 0; c < D; c++) acc[r * D + c] += dl[i] * wu[k * D + c]; });
      rows.forEach((p, r) => dNf.set(acc.subarray(r * D, (r + 1) * D), p * D));
    } else {
      const dlT = b.upload(Float32Array.from(dl), [rows.length, V]);
      const dRowsT = b.linearBackward(dlT, w.unembed);
      b.release(dlT);
      const dRows = await b.read(dRowsT);
      b.release(dRowsT);
      rows.forEach((p, r) => dNf.set(dRows.subarray(r * D, (r + 1) * D), p * D));
    }
    const dNfT = tmp(b.upload(dNf, [T, D]));
    put('ln_final.hook_normalized', dNfT);
    let dResid = normBack(act(`blocks.${s.nLayers - 1}.hook_resid_post`), w.lnFinal, dNfT);

    // nothing below the lowest layer with a kept hook is needed (hook_embed / hook_pos_embed: every layer)
    const layerOf = (name: string): number => { const m = /^blocks\.(\d+)\./.exec(name); return m ? Number(m[1]) : name.startsWith('ln_final') ? s.nLayers : -1; };
    const lowest = Math.min(s.nLayers, ...gradHookNames(s).filter(keep).map(layerOf));
    for (let l = s.nLayers - 1; l >= Math.max(lowest, 0); l--) {
      const h = `blocks.${l}.`, bw = w.blocks[l];
      put(`${h}hook_resid_post`, dResid);
      const x = act(`${h}hook_resid_pre`);
      // MLP branch: mlp_out = [postNorm](down(post)); the MLP reads resid_mid, or x with parallel residual
      const dMlpOut = dResid;
      put(`${h}hook_mlp_out`, dMlpOut);
      const post = act(`${h}mlp.hook_post`), pre = act(`${h}mlp.hook_pre`);
      const dDown = bw.postMlpNorm ? normBack(tmp(b.linear(post, bw.down!.w, bw.down!.b)), bw.postMlpNorm, dMlpOut) : dMlpOut;
      const dPost = tmp(b.linearBackward(dDown, bw.down!.w));
      put(`${h}mlp.hook_post`, dPost);
      let dPre: Tensor, dN2: Tensor;
      if (s.gatedMlp) {
        const g = b.gatedActBackward(pre, act(`${h}mlp.up`), dPost, s.act);
        dPre = tmp(g.dGate); tmp(g.dUp);
        dN2 = tmp(b.linearBackwardSum([dPre, g.dUp], [bw.gate!.w, bw.up!.w])); // one product over [W_gate; W_up]
      } else {
        dPre = tmp(b.actBackward(pre, dPost, s.act));
        dN2 = tmp(b.linearBackward(dPre, bw.up!.w));
      }
      put(`${h}mlp.hook_pre`, dPre);
      put(`${h}ln2.hook_normalized`, dN2);
      const dMlpIn = normBack(s.parallelResidual ? x : act(`${h}hook_resid_mid`), bw.ln2, dN2);
      // attention branch: resid_mid = x + attn_out (parallel: resid_post = x + attn_out + mlp_out)
      const dMid = s.parallelResidual ? dResid : add(dResid, dMlpIn);
      if (!s.parallelResidual) put(`${h}hook_resid_mid`, dMid);
      put(`${h}hook_attn_out`, dMid);
      const z = act(`${h}attn.hook_z`);
      const dO = bw.postAttnNorm ? normBack(tmp(b.linear(z, bw.o.w, bw.o.b)), bw.postAttnNorm, dMid) : dMid;
      const dZ = tmp(b.linearBackward(dO, bw.o.w));
      put(`${h}attn.hook_z`, dZ);
      const att = b.attentionBackward(act(`${h}attn.hook_q`), act(`${h}attn.hook_k`), act(`${h}attn.hook_v`), act(`${h}attn.hook_pattern`),
        s.attnSoftcap > 0 ? act(`${h}attn.hook_attn_scores`) : undefined, dZ,
        { n: T, nHeads: s.nHeads, nKvHeads: s.nKvHeads, headDim: s.dHead, scale: s.attnScale, softcap: s.attnSoftcap, window: s.windows[l] });
      tmp(att.dq); tmp(att.dk); tmp(att.dv);
      put(`${h}attn.hook_q`, att.dq); put(`${h}attn.hook_k`, att.dk); put(`${h}attn.hook_v`, att.dv);
      let dq = att.dq, dk = att.dk;
      if (s.positional === 'rotary') {
        const inv = negated(s.invFreqPerLayer?.[l] ?? s.invFreq);
        dq = tmp(b.rope(dq, s.nHeads, s.dHead, s.rotaryDims, 0, inv));
        dk = tmp(b.rope(dk, s.nKvHeads, s.dHead, s.rotaryDims, 0, inv));
      }
      const n1 = act(`${h}ln1.hook_normalized`);
      if (s.qkNorm) {
        dq = tmp(b.rmsNormBackward(tmp(b.linear(n1, bw.q.w, bw.q.b)), bw.qNorm!, s.normEps, s.normOffset, dq));
        dk = tmp(b.rmsNormBackward(tmp(b.linear(n1, bw.k.w, bw.k.b)), bw.kNorm!, s.normEps, s.normOffset, dk));
      }
      const dN1 = tmp(b.linearBackwardSum([dq, dk, att.dv], [bw.q.w, bw.k.w, bw.v.w])); // one product over [W_Q; W_K; W_V]
      put(`${h}ln1.hook_normalized`, dN1);
      // resid_pre feeds the attention (through ln1), the skip, and with parallel residual the MLP too
      const dSkip = s.parallelResidual ? add(dResid, dMlpIn) : dMid;
      dResid = add(dSkip, normBack(x, bw.ln1, dN1));
      put(`${h}hook_resid_pre`, dResid);
      // this layer's working gradients, except the ones kept and the one carried on
      const held = new Set([...kept.values(), dResid]);
      for (const t of live.splice(0)) if (!held.has(t)) b.release(t); else if (t === dResid) live.push(t);
    }
    // resid_pre of block 0 = hook_embed (+ hook_pos_embed): the same gradient
    if (lowest < 0) {
      put('hook_embed', dResid);
      if (s.positional === 'learned') put('hook_pos_embed', dResid);
    }
    const held = new Set(kept.values());
    for (const t of live.splice(0)) if (!held.has(t)) b.release(t);
    return kept;
  } catch (e) {
    const held = new Set(live);
    for (const t of kept.values()) held.add(t);
    for (const t of held) b.release(t);
    throw e;
  }
}
