/**
 * What an SAE says about a prompt: the features that fire per token, how well the SAE
 * reconstructs the activation, which features carry the margin between two futures, and what a
 * feature's decoder direction promotes. Composes Engine.run calls (as studies/sweep.ts does).
 *
 * Definitions (per position t, x_t the activation at the SAE's hook, x̂_t its reconstruction):
 * - L0_t = #{i : f_i(x_t) > 0}; MSE_t = mean_d (x̂_t − x_t)² (per element, as SAELens reports it).
 * - Explained variance over the prompt: EV = 1 − Σ_t ‖x_t − x̂_t‖² / Σ_t ‖x_t − x̄‖², x̄ the mean
 *   over the prompt's positions (SAELens evals); per position, EV_t = 1 − ‖x_t − x̂_t‖² / ‖x_t − x̄‖².
 * With both futures the run is the prompt at their decision point (Engine.decisionPoint: a shared
 * prefix teacher-forced after it), so "the last position" is where the futures first differ.
 * - Direct logit attribution of feature i to the margin at the last position (linear approximation:
 *   the final norm's scale frozen at its value on h_final, later layers ignored):
 *   DLA_i = f_i · ⟨W_dec[i], g ⊙ u⟩ / rms(h_final), u = ∂Δ/∂logits · W_U = Σ_good p̃·W_U[good] − Σ_bad p̃·W_U[bad]
 *   (p̃ the member's share of its set's probability; one token per future gives W_U[good] − W_U[bad]);
 *   for LayerNorm models ⟨W_dec[i] − mean, g ⊙ u⟩ / σ(h_final). Elhage et al. 2021 (direct logit
 *   attribution); Marks et al. 2024, arXiv 2403.19647 (feature attribution).
 * - Ablation Δ margin of feature i: the margin with f_i clamped to 0 at every position (the SAE's
 *   error term kept: x' = x − f_i(x)·W_dec[i]) minus the margin without.
 * - Splice cost: the margin with the activation replaced by x̂ (error term dropped) minus the margin without.
 */
import type { Engine } from '../engine';
import type { FutureInput, PromptInput } from '../prompt';
import type { SharedPrefix } from '../decision_point';
import { lensTopK } from '../model/lens';
import { rowMargin } from '../analysis/margin';
import { logSoftmaxCpu, topkCpu } from '../ops/logits.cpu';
import { neuronpediaUrl } from '../sae/config';
import type { Sae } from '../sae/sae';

export interface SaeAnalysisRequest extends PromptInput {
  /** Features kept per token (default 8). */
  topK?: number;
  /** Features whose activations are returned at every position (the heatmap's rows). */
  pinned?: readonly number[];
  /** With both futures: DLA ranking, ablation of the top candidates, splice cost. */
  good?: FutureInput;
  bad?: FutureInput;
  /** Features active at the last position, ranked by |DLA|, that are returned (default 10). */
  attributionTop?: number;
  /** Of those, how many are ablated (one forward pass each; default 5). */
  ablateTop?: number;
  /** Positions kept per feature in maxPositions (default 5). */
  maxK?: number;
}

export interface SaeFeatureAttribution {
  feature: number;
  /** f_i at the last position. */
  activation: number;
  /** DLA_i (linear approximation; see the module docstring); NaN when d_in ≠ d_model (e.g. attn.hook_z SAEs, ranked by activation instead). */
  dla: number;
  /** Ablation Δ margin, for the first ablateTop features; undefined for the rest. */
  ablationDelta?: number;
}

export interface SaeAnalysis {
  ids: number[];
  tokens: string[];
  hook: string;
  dSae: number;
  topK: number;
  /** Per position, the topK features by activation (descending; zeros pad) [T·topK]. */
  topIndices: Int32Array;
  topValues: Float32Array;
  /** [T] */
  l0: Int32Array;
  /** [T] mean over d_in of (x̂ − x)². */
  mse: Float32Array;
  /** [T] EV_t (NaN where ‖x_t − x̄‖ = 0, e.g. a one-token prompt). */
  explainedVariancePerToken: Float32Array;
  /** EV over the prompt. */
  explainedVariance: number;
  pinned: number[];
  /** Activations of the pinned features [pinned.length · T] (feature-major). */
  pinnedActs: Float32Array;
  /** Positions kept per feature in maxPositions / maxValues. */
  maxK: number;
  /**
   * Max-activating tokens of the prompt: per feature, the positions where f > 0 is largest
   * (descending; ties by position; −1 pads where it fires at fewer) [d_sae · maxK].
   */
  maxPositions: Int32Array;
  /** f at those positions (0 where padded) [d_sae · maxK]. */
  maxValues: Float32Array;
  /** With both futures: the shared prefix teacher-forced after the prompt (ids, tokens and every position include it), or null. */
  sharedPrefix?: SharedPrefix | null;
  /** Present when both futures are given. */
  margin?: {
    /** Δ at the last position without the SAE. */
    clean: number;
    /** Δ with the activation replaced by x̂. */
    spliced: number;
    /** Features active at the last position ranked by |DLA|, with the ablation Δ for the first ablateTop. */
    attributions: SaeFeatureAttribution[];
    /** Σ_i DLA_i over every feature (the linear approximation of the features' total contribution). */
    dlaTotal: number;
  };
}

/**
 * Runs the prompt with the SAE attached and computes the per-token statistics, and with two
 * futures the margin attributions (definitions in the module docstring).
 * @throws Error for a bad prompt or future, or an SAE that does not fit the model.
 */
export async function analyseSae(engine: Engine, sae: Sae, req: SaeAnalysisRequest): Promise<SaeAnalysis> {
  const { hookName: hook, dIn, dSae } = sae.cfg;
  // with both futures, the prompt at their decision point (the shared prefix teacher-forced, Engine.decisionPoint)
  const d = req.good && req.bad ? engine.decisionPoint(req, req.good, req.bad) : null;
  const ids = d?.promptIds ?? engine.encodePrompt(req);
  const T = ids.length;
  const topK = Math.min(req.topK ?? 8, dSae);
  const L = engine.spec.nLayers;
  const finalHook = `blocks.${L - 1}.hook_resid_post`;
  const acts = `${hook}.hook_sae_acts_post`, recons = `${hook}.hook_sae_recons`;
  const { logits, captured } = await engine.run(ids, { capture: [hook, acts, recons, finalHook], saes: [{ sae }], logits: 'last' });
  const x = captured.get(hook)!, xh = captured.get(recons)!, f = captured.get(acts)!;

  const l0 = new Int32Array(T), mse = new Float32Array(T), evTok = new Float32Array(T);
  const mean = new Float64Array(dIn);
  for (let t = 0; t < T; t++) for (let d = 0; d < dIn; d++) mean[d] += x[t * dIn + d] / T;
  let errSum = 0, varSum = 0;
  for (let t = 0; t < T; t++) {
    let err = 0, v = 0;
    for (let d = 0; d < dIn; d++) {
      const i = t * dIn + d;
      err += (xh[i] - x[i]) ** 2;
      v += (x[i] - mean[d]) ** 2;
    }
    for (let i = 0; i < dSae; i++) if (f[t * dSae + i] > 0) l0[t]++;
    mse[t] = err / dIn;
    evTok[t] = v > 0 ? 1 - err / v : NaN;
    errSum += err; varSum += v;
  }
  const top = topkCpu(f, dSae, topK);
  const pinned = [...(req.pinned ?? [])];
  for (const p of pinned) sae.assertFeature(p);
  const pinnedActs = new Float32Array(pinned.length * T);
  pinned.forEach((p, k) => { for (let t = 0; t < T; t++) pinnedActs[k * T + t] = f[t * dSae + p]; });

  const maxK = Math.min(req.maxK ?? 5, T);
  const { positions: maxPositions, values: maxValues } = maxActivating(f, T, dSae, maxK);

  const out: SaeAnalysis = {
    ids, tokens: engine.tokenStrings(ids), hook, dSae, topK,
    topIndices: top.indices, topValues: top.values, l0, mse, explainedVariancePerToken: evTok,
    explainedVariance: varSum > 0 ? 1 - errSum / varSum : NaN, pinned, pinnedActs, maxK, maxPositions, maxValues,
  };
  if (!d) return out;

  const { good, bad } = d;
  out.sharedPrefix = d.sharedPrefix;
  const lp = logSoftmaxCpu(logits, logits.length);
  const clean = rowMargin(lp, good.firstIds, bad.firstIds);
  const marginOf = async (o: Parameters<Engine['run']>[1]) => {
    const r = await engine.run(ids, { ...o, logits: 'last' });
    return rowMargin(logSoftmaxCpu(r.logits, r.logits.length), good.firstIds, bad.firstIds);
  };
  const spliced = await marginOf({ saes: [{ sae, splice: true }] });

  const fLast = f.subarray((T - 1) * dSae);
  let dla: Float64Array, order: number[];
  if (dIn === engine.spec.dModel) {
    const u = await marginGradientDirection(engine, lp, good.firstIds, bad.firstIds);
    const h = captured.get(finalHook)!.subarray((T - 1) * engine.spec.dModel);
    const g = await engine.backend.read(engine.model.weights.lnFinal.w);
    dla = directLogitAttribution(engine, sae, fLast, h, g, u);
    order = Array.from(dla.keys()).filter((i) => fLast[i] > 0).sort((a, b) => Math.abs(dla[b]) - Math.abs(dla[a]) || a - b);
  } else {
    // A decoder row of another width (attn.hook_z) does not live in the residual stream: no DLA; rank by activation.
    dla = new Float64Array(dSae).fill(NaN);
    order = Array.from(fLast.keys()).filter((i) => fLast[i] > 0).sort((a, b) => fLast[b] - fLast[a] || a - b);
  }
  const attributionTop = Math.min(req.attributionTop ?? 10, order.length), ablateTop = Math.min(req.ablateTop ?? 5, attributionTop);
  const attributions: SaeFeatureAttribution[] = [];
  for (let r = 0; r < attributionTop; r++) {
    const i = order[r];
    const a: SaeFeatureAttribution = { feature: i, activation: fLast[i], dla: dla[i] };
    if (r < ablateTop) {
      const ablated = await marginOf({ interventions: [{ hook, op: { kind: 'sae_clamp', sae, feature: i, value: 0 }, positions: 'all' }] });
      a.ablationDelta = ablated - clean;
    }
    attributions.push(a);
  }
  out.margin = { clean, spliced, attributions, dlaTotal: dla.reduce((a, v) => a + v, 0) };
  return out;
}

/**
 * Per feature, the k positions with the largest activation > 0 (descending, ties by the earlier
 * position), by insertion into a k-slot list per feature: one pass over f.
 * @param f activations [T, d_sae].
 * @returns positions (−1 pads) and values (0 pads), each [d_sae · k].
 */
export function maxActivating(f: Float32Array, T: number, dSae: number, k: number): { positions: Int32Array; values: Float32Array } {
  const positions = new Int32Array(dSae * k).fill(-1), values = new Float32Array(dSae * k);
  if (k === 0) return { positions, values };
  for (let t = 0; t < T; t++) {
    for (let i = 0; i < dSae; i++) {
      const v = f[t * dSae + i];
      const base = i * k;
      if (!(v > 0) || (positions[base + k - 1] >= 0 && v <= values[base + k - 1])) continue;
      let j = k - 1;
      while (j > 0 && (positions[base + j - 1] < 0 || v > values[base + j - 1])) {
        positions[base + j] = positions[base + j - 1];
        values[base + j] = values[base + j - 1];
        j--;
      }
      positions[base + j] = t;
      values[base + j] = v;
    }
  }
  return { positions, values };
}

/**
 * u = ∂Δ/∂logits · W_U [d_model]: Σ_good p̃_j W_U[j] − Σ_bad p̃_j W_U[j], p̃_j = p_j / Σ_set p (the
 * gradient of logsumexp over a set; one member gives W_U[j]). Rows of W_U come from the device by
 * an embed() gather, so the unembedding is never read back whole.
 */
async function marginGradientDirection(engine: Engine, lp: Float32Array, good: number[], bad: number[]): Promise<Float64Array> {
  const b = engine.backend, d = engine.spec.dModel;
  const ids = [...good, ...bad];
  const t = b.embed(engine.model.weights.unembed, Int32Array.from(ids), 1);
  const rows = await b.read(t);
  b.release(t);
  const share = (set: number[]) => {
    const p = set.map((i) => Math.exp(lp[i]));
    const s = p.reduce((a, c) => a + c, 0);
    return p.map((x) => (s > 0 ? x / s : 1 / set.length));
  };
  const w = [...share(good), ...share(bad).map((x) => -x)];
  const u = new Float64Array(d);
  ids.forEach((_, k) => { for (let j = 0; j < d; j++) u[j] += w[k] * rows[k * d + j]; });
  return u;
}

/**
 * DLA_i for every feature at one position (module docstring), with the final norm frozen at its
 * scale on h: RMSNorm 1/sqrt(mean(h²) + eps), LayerNorm 1/sqrt(var(h) + eps) with centring.
 * @param f feature activations [d_sae]; h the final residual [d_model]; g the final norm's weight
 *   [d_model] (the model's offset added, Gemma (1 + w)); u from marginGradientDirection.
 * @returns [d_sae]
 */
function directLogitAttribution(engine: Engine, sae: Sae, f: Float32Array, h: Float32Array, g: Float32Array, u: Float64Array): Float64Array {
  const s = engine.spec, d = s.dModel, { dSae } = sae.cfg;
  const layer = s.norm === 'layer';
  let mean = 0;
  if (layer) for (let j = 0; j < d; j++) mean += h[j] / d;
  let ms = 0;
  for (let j = 0; j < d; j++) ms += (h[j] - mean) ** 2 / d;
  const scale = 1 / Math.sqrt(ms + s.normEps);
  const gu = new Float64Array(d);
  for (let j = 0; j < d; j++) gu[j] = (g[j] + s.normOffset) * u[j];
  const out = new Float64Array(dSae);
  for (let i = 0; i < dSae; i++) {
    if (f[i] === 0) continue;
    const row = sae.W_dec.subarray(i * d, (i + 1) * d);
    let rm = 0;
    if (layer) for (let j = 0; j < d; j++) rm += row[j] / d;
    let dot = 0;
    for (let j = 0; j < d; j++) dot += (row[j] - rm) * gu[j];
    out[i] = f[i] * dot * scale;
  }
  return out;
}

export interface SaeFeatureInfo {
  feature: number;
  /** ‖W_dec[f]‖. */
  decoderNorm: number;
  /** Logit lens of the decoder direction: top tokens of log_softmax(W_U · LN_f(W_dec[f])), LN_f recomputed on the row. */
  lensIds: number[];
  lensTokens: string[];
  lensLogProbs: number[];
  /** cos(W_dec[f], v) for each given vector of d_in values. */
  cosines: { name: string; cosine: number }[];
  /** The feature's Neuronpedia page for SAEs from a known release. */
  neuronpedia?: string;
}

/**
 * A feature's decoder direction: its lens (top tokens it promotes after the final norm) and its
 * cosine with the given steering vectors (those of another width are skipped).
 * @throws Error for a feature outside the SAE.
 */
export async function featureInfo(engine: Engine, sae: Sae, feature: number, vectors: readonly { name: string; vector: ArrayLike<number> }[] = [], topK = 10): Promise<SaeFeatureInfo> {
  sae.assertFeature(feature);
  const row = sae.decoderRow(feature);
  let lens = { ids: [] as number[], lps: [] as number[] };
  if (sae.cfg.dIn === engine.spec.dModel) {
    const [top] = await lensTopK(engine.model, row, Math.min(topK, engine.spec.dVocab));
    lens = { ids: Array.from(top.ids), lps: Array.from(top.logProbs) };
  }
  const norm = Math.hypot(...row);
  const cosines = vectors.filter((v) => v.vector.length === row.length).map((v) => {
    let dot = 0, vv = 0;
    for (let j = 0; j < row.length; j++) { dot += row[j] * v.vector[j]; vv += v.vector[j] ** 2; }
    return { name: v.name, cosine: norm > 0 && vv > 0 ? dot / (norm * Math.sqrt(vv)) : 0 };
  });
  const url = neuronpediaUrl(sae.cfg, feature);
  return {
    feature, decoderNorm: norm, lensIds: lens.ids, lensTokens: lens.ids.map((id) => engine.tokenizer.decode([id], { skip_special_tokens: false })),
    lensLogProbs: lens.lps, cosines, ...(url ? { neuronpedia: url } : {}),
  };
}
