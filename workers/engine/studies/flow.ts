/**
 * Forward-only information-flow attribution of the margin to source tokens and spans (DESIGN.md §3
 * "Attribution"), after Information Flow Routes (Ferrando & Voita 2024, arXiv 2403.00824) and
 * FlashTrace (arXiv 2602.01914, `wbopan/flashtrace` core.py: the residual stream decomposed layer
 * by layer into value-weighted attention terms A[h,i,j]·(v_j W_O^h), the MLP term at its own
 * position and the residual term; multi-hop through generated tokens). Where IFR and FlashTrace
 * weigh each term by its L1 "proximity" to the sum (unsigned importances), this study projects each
 * term on the MARGIN direction instead, so every number is signed, in nats, and they add up:
 *
 * Definition (value-weighted, margin-projected flow; attention patterns and every norm's σ frozen
 * at the run, MLPs credited to their position). The target is the frozen-norm margin readout
 * g·x^L_t + c of the final residual at the last position t (forward_weights.ts MarginReadout; for a
 * LayerNorm the mean subtraction is on g). A direction D^l_i [d_model] per (layer boundary, position)
 * starts as D^L_t = g, D^L_i = 0 (i ≠ t), and goes down through block l = L−1 … 0:
 *   - MLP (terminal): token i is credited D_i · mlp_out^l_i (and nothing flows through the MLP);
 *   - attention, head h, query i ≥ key j: the term A^l[h,i,j] · v^l_{h,j} W_O^h (through Gemma 2's
 *     post-attention norm, frozen) carries D_i·(term) of the margin from position j through head h
 *     (`headSource`); since v_j = W_V^h · ln1(x_j) + b_V and ln1 is affine with σ_j frozen, the
 *     direction at x^l_j gains Σ_{h,i} A[h,i,j] · ln1ᵀ W_V^hᵀ W_O^hᵀ D_i (biases b_V, b_O and ln1's
 *     bias are constants, credited to `bias`);
 *   - the residual: D^l_i = D^{l+1}_i + the attention's share above.
 * At the bottom, token j is credited D^0_j · (hook_embed_j + hook_pos_embed_j). Then
 *   Σ_j attribution_j + bias = frozen margin
 * exactly in exact arithmetic (a linear decomposition of the residual with the patterns and scales
 * frozen; `sumError` is the float32 rounding of the captured values, ~1e-6). The query/key paths are
 * not followed (attention is read as routing, as in IFR), and an MLP's output is the token's own.
 *
 * Recursive through generated tokens (FlashTrace's multi-hop): with N generated tokens, the credit
 * landing on generated token p (it is there because the model chose it at p−1) is handed back over
 * the earlier tokens in proportion to the flow of that choice — the chosen token's logit against
 * the mean logit, W_U[id_p] − mean_v W_U[v], read at p−1 — f_p / Δ_p (Σ f_p + bias_p = Δ_p, so the
 * total is kept), latest first, until only prompt tokens (and bias) hold credit.
 * Cost: one forward capturing the hooks below, then per target O(L·(T²·d_model + T·d_model·H·d_head)).
 */
import type { Engine } from '../engine';
import type { SharedPrefix } from '../decision_point';
import type { FutureInput, ResolvedFuture, ChatTurn } from '../prompt';
import { promptWith } from '../prompt';
import type { ModelSpec } from '../arch/spec';
import type { Tensor } from '../backend/backend';
import { dot, frozenNormReadout, normScale } from '../analysis/frozen_norm';
import { hostWeights, marginReadout, meanUnembedRow, unembedRows, type HostWeights } from './forward_weights';
import { logitMargin } from '../analysis/margin';
import { faithfulnessCurves, type FaithfulnessCurves } from './faithfulness';

/** A named range of token positions [start, end). */
export interface TokenSpan {
  label: string;
  start: number;
  end: number;
}

export interface FlowRequest extends ChatTurn {
  prompt: string;
  good: FutureInput;
  bad: FutureInput;
  /** Spans of prompt tokens to sum the attribution over. */
  spans?: TokenSpan[];
  /** Generate this many tokens greedily first and attribute the decision after them back to the prompt (default 0). */
  generated?: number;
  /**
   * The tokens after the prompt, given instead of generated (a branch of the tree, sampled or forced):
   * the decision after them is attributed back through them to the prompt. Its length is the number
   * of generated tokens (`generated`, when given too, must equal it).
   */
  continuation?: number[];
  /** Deletion / insertion curves (default true). */
  faithfulness?: boolean;
  /** The token deleted tokens are replaced by (default the BOS id, else 0). */
  baselineId?: number;
}

/** One hand-back of a generated token's credit (the recursion). */
export interface FlowHop {
  position: number;
  token: string;
  /** The credit that had landed on it (nats of the final margin). */
  mass: number;
  /** Δ_p: its chosen logit against the mean logit at p−1 (frozen norm). */
  margin: number;
}

export interface FlowResult {
  /** The futures' shared prefix, teacher-forced after the prompt (decision_point.ts), or null: the margin at the end of the prompt (no continuation) is read after it; the prefix's tokens are prompt tokens. */
  sharedPrefix?: SharedPrefix | null;
  ids: number[];
  tokens: string[];
  /** Prompt tokens (the rest were generated). */
  nPrompt: number;
  nLayers: number;
  nHeads: number;
  good: ResolvedFuture;
  bad: ResolvedFuture;
  /** Credit per prompt token after the recursion [n_prompt] (= direct without generated tokens). */
  attribution: Float64Array;
  /** Credit per token of the whole sequence before the recursion [T]. */
  direct: Float64Array;
  /** Direct credit by where it was made [(n_layers+1)·T]: row 0 the embeddings, row l+1 layer l's MLP. */
  byLayer: Float64Array;
  /** Margin flowing through each head [n_layers·n_heads] (final target). */
  heads: Float64Array;
  /** Margin through head h from source position j [n_layers·n_heads·T] (final target). */
  headSource: Float64Array;
  /** The constants (norm and projection biases) after the recursion. */
  bias: number;
  /** The frozen-norm margin at the last position (nats). */
  frozenMargin: number;
  /** The engine's margin there. */
  margin: number;
  /** Σ attribution + bias − frozenMargin (float32 rounding of the captures). */
  sumError: number;
  spans: (TokenSpan & { value: number })[];
  hops: FlowHop[];
  faithfulness?: FaithfulnessCurves;
  definition: string;
}

export const FLOW_DEFINITION = 'value-weighted attention terms A·(v W_O) projected on the frozen-norm margin direction, propagated layer by layer with patterns and norm scales frozen; MLP output credited to its position; generated tokens hand their credit back (Ferrando & Voita 2024; FlashTrace arXiv 2602.01914)';

/** The captured run the flow reads: per layer [T, ·] arrays, by hook name. */
export type FlowCaptures = Map<string, Float32Array>;

/** The hooks one flow needs captured. */
export function flowHooks(s: ModelSpec): string[] {
  const per = (l: number) => [`blocks.${l}.hook_resid_pre`, `blocks.${l}.attn.hook_pattern`, `blocks.${l}.attn.hook_v`, `blocks.${l}.hook_attn_out`, `blocks.${l}.hook_mlp_out`, ...(s.sandwichNorms ? [`blocks.${l}.attn.hook_z`] : [])];
  return ['hook_embed', ...(s.positional === 'learned' ? ['hook_pos_embed'] : []), ...Array.from({ length: s.nLayers }, (_, l) => per(l)).flat()];
}

/** The final residual at position p rebuilt from its parts (float64). */
export function finalResidual(s: ModelSpec, cap: FlowCaptures, p: number): Float64Array {
  const D = s.dModel, x = new Float64Array(D);
  const add = (name: string) => { const v = cap.get(name)!; for (let c = 0; c < D; c++) x[c] += v[p * D + c]; };
  add('hook_embed');
  if (s.positional === 'learned') add('hook_pos_embed');
  for (let l = 0; l < s.nLayers; l++) { add(`blocks.${l}.hook_attn_out`); add(`blocks.${l}.hook_mlp_out`); }
  return x;
}

/** One target's flow: credit per position, by layer, per head and source, and the constants. */
export interface FlowSweep {
  credit: Float64Array;
  byLayer: Float64Array;
  heads: Float64Array;
  headSource: Float64Array;
  bias: number;
}

/**
 * The flow of one readout dir·x^L_t + constant down to the tokens (the module's definition). The
 * two per-layer products through W_O and W_V run as GEMMs in `products` (float32, as the forward);
 * the pattern sums, the masses, the norms' readouts and the directions accumulate in float64.
 * With `perHead` false (the recursion's hand-backs, which read only credit and bias) the pattern
 * sums run on the backend too (FlowProducts.valueDirection) and only the direction on ln1's output
 * comes back per layer; `heads` and `headSource` are then left 0.
 * @param T positions in the captures; t the target position.
 */
export async function flowSweep(s: ModelSpec, hw: HostWeights, products: FlowProducts, cap: FlowCaptures, T: number, t: number, dir: Float64Array, constant: number, perHead = true): Promise<FlowSweep> {
  const L = s.nLayers, H = s.nHeads, Hkv = s.nKvHeads, dh = s.dHead, D = s.dModel, HD = H * dh;
  const group = H / Hkv;
  const Dir = new Float64Array(T * D);
  Dir.set(dir, t * D);
  const credit = new Float64Array(T), byLayer = new Float64Array((L + 1) * T), heads = new Float64Array(L * H), headSource = new Float64Array(L * H * T);
  let bias = constant;
  const live = t + 1; // positions > t never receive a direction (causal)
  for (let l = L - 1; l >= 0; l--) {
    const mlpOut = cap.get(`blocks.${l}.hook_mlp_out`)!;
    for (let i = 0; i < live; i++) {
      const c = dot(Dir, mlpOut, D, i * D, i * D);
      credit[i] += c;
      byLayer[(l + 1) * T + i] += c;
    }
    const bw = hw.blocks[l];
    const A = cap.get(`blocks.${l}.attn.hook_pattern`)!; // [H, T, T]
    const v = cap.get(`blocks.${l}.attn.hook_v`)!; // [T, Hkv·dh]
    const x = cap.get(`blocks.${l}.hook_resid_pre`)!;
    const z = bw.postAttn ? cap.get(`blocks.${l}.attn.hook_z`)! : null;
    /** The direction dn [live, d_model] on ln1's output moved onto x_j through the frozen ln1, into Dir. */
    const addLn1Readout = (dn: Float32Array) => {
      for (let j = 0; j < live; j++) {
        const fr = frozenNormReadout(dn.subarray(j * D, (j + 1) * D), bw.ln1, normScale(x, bw.ln1.kind, bw.ln1.eps, j * D, D));
        bias += fr.constant;
        for (let c = 0; c < D; c++) Dir[j * D + c] += fr.dir[c];
      }
    };
    // r_{h,i} = W_O^hᵀ Dq_i [dh], Dq_i the direction on the attention output before any post-norm:
    // one GEMM Dq [live, d_model] · W_O [d_model, H·dh] → [live, H·dh] (float32 products).
    const Dq = new Float32Array(live * D);
    for (let i = 0; i < live; i++) {
      let Di: ArrayLike<number> = Dir.subarray(i * D, (i + 1) * D);
      if (bw.postAttn) {
        const o = new Float64Array(D);
        for (let c = 0; c < D; c++) o[c] = dot(bw.wo, z!, HD, c * HD, i * HD) + (bw.bo ? bw.bo[c] : 0);
        const fr = frozenNormReadout(Di, bw.postAttn, normScale(o, bw.postAttn.kind, bw.postAttn.eps));
        Di = fr.dir;
        bias += fr.constant;
      }
      if (bw.bo) bias += dot(Di, bw.bo, D);
      for (let c = 0; c < D; c++) Dq[i * D + c] = Di[c];
    }
    if (!perHead) {
      const { dn, biasV } = await products.valueDirection(Dq, live, l, A, v, T, bw.bv);
      bias += biasV;
      addLn1Readout(dn);
      continue;
    }
    const r = await products.dyW(Dq, live, l, 'o');
    // e_{h,j} = Σ_{i≥j} A[h,i,j] r_{h,i} [dh]
    const e = new Float64Array(T * HD);
    for (let h = 0; h < H; h++) {
      for (let i = 0; i < live; i++) {
        const ri = i * HD + h * dh, arow = (h * T + i) * T;
        for (let j = 0; j <= i; j++) {
          const a = A[arow + j];
          if (a === 0) continue;
          const ej = j * HD + h * dh;
          for (let k = 0; k < dh; k++) e[ej + k] += a * r[ri + k];
        }
      }
    }
    // through the values: mass per head and source; ê_j summed over each KV group [live, Hkv·dh]
    const eKv = new Float32Array(live * Hkv * dh);
    for (let j = 0; j < live; j++) {
      for (let h = 0; h < H; h++) {
        const kv = Math.floor(h / group), ej = j * HD + h * dh;
        const m = dot(e, v, dh, ej, j * Hkv * dh + kv * dh);
        heads[l * H + h] += m;
        headSource[(l * H + h) * T + j] = m;
        if (bw.bv) bias += dot(e, bw.bv, dh, ej, kv * dh);
        const eo = (j * Hkv + kv) * dh;
        for (let k = 0; k < dh; k++) eKv[eo + k] += e[ej + k];
      }
    }
    // the direction on ln1's output: one GEMM ê [live, Hkv·dh] · W_V [Hkv·dh, d_model]; then on x_j
    addLn1Readout(await products.dyW(eKv, live, l, 'v'));
  }
  const emb = cap.get('hook_embed')!, pos = s.positional === 'learned' ? cap.get('hook_pos_embed')! : null;
  for (let j = 0; j < live; j++) {
    let c = dot(Dir, emb, D, j * D, j * D);
    if (pos) c += dot(Dir, pos, D, j * D, j * D);
    credit[j] += c;
    byLayer[j] += c;
  }
  return { credit, byLayer, heads, headSource, bias };
}

/** The sweep's products per layer, through the backend. */
export interface FlowProducts {
  /** dy [n, out] · W [out, in] → [n, in] for the block's W_O or W_V. */
  dyW(dy: Float32Array, n: number, layer: number, which: 'o' | 'v'): Promise<Float32Array>;
  /**
   * A layer's whole value path without its per-head masses: r = Dq · W_O [n, H·dh], the pattern
   * sums ê_j = Σ_{i≥j} A[h,i,j]·r_{h,i} summed over each KV group [T, Hkv·dh] (Backend.attentionBackward's
   * dv with q = k = 0), dn = ê · W_V [T, d_model]; only dn's first n rows and the b_V constant
   * Σ_j ê_j·b_V come back (r and ê stay on the backend).
   * @param Dq [n, d_model]; A the layer's pattern [H, T, T]; v its hook_v [T, Hkv·dh]; bv its b_V [Hkv·dh] (absent: none).
   */
  valueDirection(Dq: Float32Array, n: number, layer: number, A: Float32Array, v: Float32Array, T: number, bv?: Float32Array): Promise<{ dn: Float32Array; biasV: number }>;
}

/**
 * The products through the engine's backend (Backend.linearBackward: the WASM GEMM on the CPU;
 * Backend.attentionBackward for the pattern sums). dy for W_O is [n, d_model] → [n, H·dh]; for W_V
 * [n, Hkv·dh] → [n, d_model].
 */
export function backendProducts(engine: Engine): FlowProducts {
  const b = engine.backend, s = engine.spec, blocks = engine.model.weights.blocks;
  return {
    async dyW(dy, n, layer, which) {
      const w = blocks[layer][which].w;
      const y = b.upload(dy, [n, dy.length / n]);
      const dx = b.linearBackward(y, w);
      b.release(y);
      try { return await b.read(dx); } finally { b.release(dx); }
    },
    async valueDirection(Dq, n, layer, A, v, T, bv) {
      const H = s.nHeads, Hkv = s.nKvHeads, dh = s.dHead, D = s.dModel, bw = blocks[layer];
      const rows = new Float32Array(T * D);
      rows.set(Dq.subarray(0, n * D)); // rows ≥ n carry no direction (causal), so they add nothing to ê
      const temp: Tensor[] = [];
      const keep = (t: Tensor) => { temp.push(t); return t; };
      try {
        const r = keep(b.linearBackward(keep(b.upload(rows, [T, D])), bw.o.w));
        const g = b.attentionBackward(keep(b.zeros([T, H * dh])), keep(b.zeros([T, Hkv * dh])), keep(b.upload(v, [T, Hkv * dh])), keep(b.upload(A, [H, T, T])), undefined, r,
          { n: T, nHeads: H, nKvHeads: Hkv, headDim: dh, scale: s.attnScale, softcap: 0, window: s.windows[layer] });
        keep(g.dq); keep(g.dk); keep(g.dv);
        const dnT = keep(b.linearBackward(g.dv, bw.v.w));
        const dn = keep(n === T ? dnT : b.sliceRows(dnT, 0, n));
        let biasV = 0;
        if (bv) {
          const perRow = await b.read(keep(b.linear(g.dv, keep(b.upload(bv, [1, Hkv * dh])))));
          for (let j = 0; j < n; j++) biasV += perRow[j];
        }
        return { dn: await b.read(dn), biasV };
      } finally {
        for (const t of new Set(temp)) b.release(t);
      }
    },
  };
}

/** Checks spans against n tokens. @throws Error naming the span that does not fit. */
export function checkSpans(spans: readonly TokenSpan[], n: number): void {
  for (const sp of spans) {
    if (!(Number.isInteger(sp.start) && Number.isInteger(sp.end) && sp.start >= 0 && sp.end > sp.start && sp.end <= n)) {
      throw new Error(`span "${sp.label}" [${sp.start}, ${sp.end}) is not a range of the prompt's ${n} tokens (0 ≤ start < end ≤ ${n})`);
    }
  }
}

/**
 * The flow attribution of the margin at the end of the prompt (or of its greedy continuation of
 * `generated` tokens, or of the `continuation` given), spans summed, with deletion/insertion curves (faithfulness.ts).
 * @throws Error for a bad prompt or future, a span outside the prompt, or a generation that does not fit the context.
 */
export async function flowAttribution(engine: Engine, req: FlowRequest, signal?: AbortSignal): Promise<FlowResult> {
  const s = engine.spec, L = s.nLayers, H = s.nHeads, V = s.dVocab;
  const p0 = promptWith(req.prompt, req);
  const given = req.continuation;
  const N = given ? given.length : req.generated ?? 0;
  // at the end of the prompt: its decision point (the futures' shared prefix teacher-forced, Engine.decisionPoint)
  const d = N === 0 ? engine.decisionPoint(p0, req.good, req.bad) : null;
  const promptIds = d?.promptIds ?? engine.encodePrompt(p0);
  const P = promptIds.length;
  checkSpans(req.spans ?? [], P);
  if (!(Number.isInteger(N) && N >= 0)) throw new Error(`generated ${N}: give a whole number of tokens (0 or more)`);
  if (given && req.generated !== undefined && req.generated !== N) throw new Error(`generated ${req.generated} but a continuation of ${N} tokens: give one of them`);
  for (const id of given ?? []) if (!(Number.isInteger(id) && id >= 0 && id < V)) throw new Error(`continuation token ${id} is outside the vocabulary (0..${V - 1})`);
  let ids = promptIds, futureCtx = p0;
  if (given && N > 0) {
    ids = [...promptIds, ...given];
    futureCtx = { ...p0, prompt: req.prompt + engine.continuationText(promptIds, given) };
  } else if (N > 0) {
    const gen = await engine.generate({ ...p0, good: req.good, bad: req.bad, maxNewTokens: N, temperature: 0, stopAtEos: false });
    ids = [...promptIds, ...gen.ids];
    futureCtx = { ...p0, prompt: req.prompt + engine.continuationText(promptIds, gen.ids) };
  }
  signal?.throwIfAborted();
  const T = ids.length;
  const good = d?.good ?? engine.resolveFuture(ids, req.good, futureCtx, 'good');
  const bad = d?.bad ?? engine.resolveFuture(ids, req.bad, futureCtx, 'bad');
  const run = await engine.run(ids, { capture: flowHooks(s), nPrompt: P, logits: 'last' });
  const hw = await hostWeights(engine);
  const cols = [...new Set([...good.firstIds, ...bad.firstIds])];
  const ro = marginReadout(finalResidual(s, run.captured, T - 1), hw.lnFinal, await unembedRows(engine, cols), cols, good.firstIds, bad.firstIds);
  const products = backendProducts(engine);
  const main = await flowSweep(s, hw, products, run.captured, T, T - 1, ro.dir, ro.constant);
  const credit = Float64Array.from(main.credit);
  let bias = main.bias;
  let sumDirect = bias;
  for (const c of main.credit) sumDirect += c;
  const hops: FlowHop[] = [];
  if (N > 0) {
    const mean = await meanUnembedRow(engine);
    const tokens = engine.tokenStrings(ids);
    for (let p = T - 1; p >= P; p--) {
      await new Promise((r) => setTimeout(r, 0));
      signal?.throwIfAborted();
      const x = finalResidual(s, run.captured, p - 1);
      const chosen = await unembedRows(engine, [ids[p]]);
      const u = Float64Array.from(chosen.rows, (w, c) => w - mean.row[c]);
      const fr = frozenNormReadout(u, hw.lnFinal, normScale(x, hw.lnFinal.kind, hw.lnFinal.eps));
      const constant = fr.constant + chosen.bias[0] - mean.bias;
      const dp = dot(fr.dir, x, s.dModel) + constant;
      const mass = credit[p];
      hops.push({ position: p, token: tokens[p], mass, margin: dp });
      if (Math.abs(dp) < 1e-6) continue;
      const f = await flowSweep(s, hw, products, run.captured, T, p - 1, fr.dir, constant, false);
      for (let k = 0; k < p; k++) credit[k] += (mass * f.credit[k]) / dp;
      bias += (mass * f.bias) / dp;
      credit[p] = 0;
    }
  }
  const attribution = credit.slice(0, P);
  const spans = (req.spans ?? []).map((sp) => ({ ...sp, value: attribution.slice(sp.start, sp.end).reduce((a, b) => a + b, 0) }));
  const margin = logitMargin(run.logits.subarray(0, V), good.firstIds, bad.firstIds);
  const faithfulness = req.faithfulness === false ? undefined : await faithfulnessCurves(engine, {
    ids, attribution, positions: candidatePositions(promptIds, s.bosTokenId), good: good.firstIds, bad: bad.firstIds, baselineId: req.baselineId, nPrompt: P,
  }, signal);
  return {
    ids, tokens: engine.tokenStrings(ids), nPrompt: P, nLayers: L, nHeads: H, good, bad, sharedPrefix: d?.sharedPrefix ?? null,
    attribution, direct: main.credit, byLayer: main.byLayer, heads: main.heads, headSource: main.headSource,
    bias, frozenMargin: ro.frozen, margin, sumError: sumDirect - ro.frozen, spans, hops, faithfulness, definition: FLOW_DEFINITION,
  };
}

/** The prompt positions a deletion may replace: all but a leading BOS. */
export function candidatePositions(promptIds: readonly number[], bos: number | null): number[] {
  return promptIds.map((_, i) => i).filter((i) => !(i === 0 && bos !== null && promptIds[0] === bos));
}
