/**
 * Direct logit attribution of the margin (DESIGN.md §3 "Attribution"; Elhage et al. 2021, "A
 * Mathematical Framework for Transformer Circuits"; TransformerLens `decompose_resid` /
 * `stack_head_results` + `apply_ln_to_stack`): the final residual at one position is the sum of its
 * parts — the token embedding (hook_embed), the position embedding (hook_pos_embed, learned
 * positions), and every layer's hook_attn_out and hook_mlp_out — and with the final norm's scale σ
 * FROZEN at its value on the run (the standard linear approximation: a part's number is what it
 * adds to the margin through the norm as it is, not what removing it would change, since σ would
 * move) the margin is a linear readout g·x + constant (forward_weights.ts MarginReadout), so
 *
 *   frozen_margin = g·embed + g·pos_embed + Σ_l (g·attn_out_l + g·mlp_out_l) + constant
 *
 * exactly (float64, x̂ rebuilt from the captured parts; constant = the final norm's bias and the
 * unembedding bias, `finalBias`). The LayerNorm's mean subtraction is linear, so it moves onto g
 * (analysis/frozen_norm.ts). Each layer's attn_out is split further over its heads, head h's part
 * being g·(W_O[:, h]·z_h) from attn.hook_z, plus the output bias b_O (`attnBias`); Gemma 2's
 * post-attention norm is frozen the same way at its σ on the run. `headResidual` is what the heads
 * and bias miss of the layer's attn_out (float32 rounding of the forward pass, ~1e-6).
 *
 * frozen_margin against the true margin: at x̂, Δ = frozen_margin + H(π_good) − H(π_bad) (the futures'
 * set entropies, 0 for single tokens; MarginReadout), and the engine's float32 Δ differs from Δ(x̂)
 * by the rounding of the residual sum (`margin` − `frozenMargin` − `entropyGap` is reported as
 * `remainder`); with a final soft-cap the readout is of the uncapped logits.
 */
import type { Engine } from '../engine';
import type { SharedPrefix } from '../decision_point';
import type { FutureInput, ResolvedFuture, ChatTurn } from '../prompt';
import { promptWith } from '../prompt';
import { dot, frozenNormReadout, normScale } from '../analysis/frozen_norm';
import { logitMargin } from '../analysis/margin';
import { hostWeights, marginReadout, unembedRows } from './forward_weights';

export interface DlaRequest extends ChatTurn {
  prompt: string;
  good: FutureInput;
  bad: FutureInput;
  /** Position whose next-token margin is decomposed (default the last; negative counts from the end). */
  position?: number;
}

/** The approximation, in words, for every output. */
export const DLA_APPROXIMATION = 'final norm frozen at its scale on the run (linear approximation): parts sum to frozen_margin exactly';

export interface DlaResult {
  /** The futures' shared prefix, teacher-forced after the prompt (decision_point.ts), or null: the margins are read after it. */
  sharedPrefix?: SharedPrefix | null;
  ids: number[];
  tokens: string[];
  position: number;
  nLayers: number;
  nHeads: number;
  good: ResolvedFuture;
  bad: ResolvedFuture;
  /** g·hook_embed at the position. */
  embed: number;
  /** g·hook_pos_embed (0 without learned positions). */
  posEmbed: number;
  /** g·attn_out per layer [n_layers]. */
  attn: Float64Array;
  /** g·mlp_out per layer [n_layers]. */
  mlp: Float64Array;
  /** g·(W_O[:, h] z_h) per (layer, head) [n_layers·n_heads], row-major. */
  heads: Float64Array;
  /** The attention's constant part per layer (b_O through the frozen post-norm) [n_layers]. */
  attnBias: Float64Array;
  /** attn − Σ_h heads − attnBias per layer [n_layers]. */
  headResidual: Float64Array;
  /** The readout's constant: final norm bias and unembedding bias. */
  finalBias: number;
  /** Σ of the parts = the frozen readout of x̂ (nats). */
  frozenMargin: number;
  /** The engine's margin at the position (nats, float32 forward). */
  margin: number;
  /** H(π_good) − H(π_bad): the true margin at x̂ is frozenMargin + entropyGap. */
  entropyGap: number;
  /** margin − frozenMargin − entropyGap (float32 rounding; a final soft-cap). */
  remainder: number;
  /** The final norm's σ at the position. */
  sigma: number;
  approximation: string;
}

/** A position index: in [0, T), or negative from the end. @throws Error outside the prompt. */
export function resolvePosition(position: number | undefined, T: number): number {
  const p = position === undefined ? T - 1 : position < 0 ? T + position : position;
  if (!Number.isInteger(p) || p < 0 || p >= T) throw new Error(`position ${position}: the prompt has ${T} tokens (0..${T - 1}; negative counts from the end)`);
  return p;
}

/**
 * Direct logit attribution of the margin at one position (see the module comment).
 * @throws Error for a bad prompt or future, or a position outside the prompt.
 */
export async function directLogitAttribution(engine: Engine, req: DlaRequest): Promise<DlaResult> {
  const s = engine.spec, L = s.nLayers, H = s.nHeads, D = s.dModel, dh = s.dHead;
  const p0 = promptWith(req.prompt, req);
  const { promptIds: ids, good, bad, sharedPrefix } = engine.decisionPoint(p0, req.good, req.bad);
  const T = ids.length;
  const p = resolvePosition(req.position, T);
  const learned = s.positional === 'learned';
  const layerHooks = (l: number) => [`blocks.${l}.hook_attn_out`, `blocks.${l}.hook_mlp_out`, `blocks.${l}.attn.hook_z`];
  const capture = ['hook_embed', ...(learned ? ['hook_pos_embed'] : []), ...Array.from({ length: L }, (_, l) => layerHooks(l)).flat()];
  const run = await engine.run(ids, { capture, logits: 'all' });
  const row = (name: string, width = D) => run.captured.get(name)!.subarray(p * width, (p + 1) * width);

  // x̂: the final residual rebuilt from its parts in float64.
  const parts: { name: string; v: Float32Array }[] = [{ name: 'hook_embed', v: row('hook_embed') }];
  if (learned) parts.push({ name: 'hook_pos_embed', v: row('hook_pos_embed') });
  for (let l = 0; l < L; l++) parts.push({ name: `blocks.${l}.hook_attn_out`, v: row(`blocks.${l}.hook_attn_out`) }, { name: `blocks.${l}.hook_mlp_out`, v: row(`blocks.${l}.hook_mlp_out`) });
  const x = new Float64Array(D);
  for (const part of parts) for (let c = 0; c < D; c++) x[c] += part.v[c];

  const hw = await hostWeights(engine, { values: false });
  const cols = [...new Set([...good.firstIds, ...bad.firstIds])];
  const ro = marginReadout(x, hw.lnFinal, await unembedRows(engine, cols), cols, good.firstIds, bad.firstIds);
  const g = ro.dir;
  const val = (v: ArrayLike<number>) => dot(g, v, D);

  const attn = new Float64Array(L), mlp = new Float64Array(L), heads = new Float64Array(L * H), attnBias = new Float64Array(L), headResidual = new Float64Array(L);
  for (let l = 0; l < L; l++) {
    attn[l] = val(row(`blocks.${l}.hook_attn_out`));
    mlp[l] = val(row(`blocks.${l}.hook_mlp_out`));
    const z = row(`blocks.${l}.attn.hook_z`, H * dh);
    const bw = hw.blocks[l];
    // o_h = W_O[:, h·dh..(h+1)·dh] z_h [d_model], each head's share of the attention output.
    const oh = Array.from({ length: H }, (_, h) => {
      const o = new Float64Array(D);
      for (let c = 0; c < D; c++) o[c] = dot(bw.wo, z, dh, c * H * dh + h * dh, h * dh);
      return o;
    });
    let gl = g, bias = 0;
    if (bw.postAttn) {
      const o = new Float64Array(D);
      for (const v of oh) for (let c = 0; c < D; c++) o[c] += v[c];
      if (bw.bo) for (let c = 0; c < D; c++) o[c] += bw.bo[c];
      const r = frozenNormReadout(g, bw.postAttn, normScale(o, bw.postAttn.kind, bw.postAttn.eps));
      gl = r.dir;
      bias = r.constant;
    }
    if (bw.bo) bias += dot(gl, bw.bo, D);
    let sum = bias;
    for (let h = 0; h < H; h++) sum += heads[l * H + h] = dot(gl, oh[h], D);
    attnBias[l] = bias;
    headResidual[l] = attn[l] - sum;
  }
  const embed = val(row('hook_embed'));
  const posEmbed = learned ? val(row('hook_pos_embed')) : 0;
  let frozenMargin = embed + posEmbed + ro.constant;
  for (let l = 0; l < L; l++) frozenMargin += attn[l] + mlp[l];
  const V = s.dVocab;
  const margin = logitMargin(run.logits.subarray(p * V, (p + 1) * V), good.firstIds, bad.firstIds);
  return {
    ids, tokens: engine.tokenStrings(ids), position: p, nLayers: L, nHeads: H, good, bad, sharedPrefix,
    embed, posEmbed, attn, mlp, heads, attnBias, headResidual, finalBias: ro.constant,
    frozenMargin, margin, entropyGap: ro.entropyGap, remainder: margin - frozenMargin - ro.entropyGap, sigma: ro.sigma,
    approximation: DLA_APPROXIMATION,
  };
}
