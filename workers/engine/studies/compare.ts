/**
 * Model comparison (DESIGN.md §3 "Model comparison": how post-training reshapes a decision). Two
 * loaded Engines, A (the base) and B (the fine-tune), on the same prompt and futures:
 * - weightDiff: ‖W_B − W_A‖_F / ‖W_A‖_F per (layer, module) and for the embeddings, unembedding
 *   and final norm (float64 over the weights read back from each backend; exactly 0 where equal);
 * - sideBySide: each model's logit-lens margins (Engine.analyse), B − A, the residual stream's
 *   divergence per layer and token (‖h_B − h_A‖/‖h_A‖ and cosine; Engine.run captures), and the
 *   sink divergence A vs B (analysis/sinks.ts sinkDivergence: Δα_0 and JS per head) with each
 *   model's sink rate. Across tokenizers it still returns each model's lens, labelled, without the
 *   token-aligned differences;
 * - crossPatch (studies/cross_patch.ts): the other model's activation patched in;
 * - steeringTransfer: CAA vectors of one contrastive set built on both (studies/vectors.ts) and
 *   their cosine per layer; transferIntervention applies a vector built on one model to the other;
 * - compareModels: all of it as one job with progress and cancel (what the runner prints).
 * Sources: DESIGN.md §3; Surgery (arXiv 2602.05228: sink divergence under fine-tuning); model
 * diffing / crosscoders (arXiv 2504.02922); Rimsky et al. (arXiv 2312.06681) for CAA.
 */
import { modelRouteDivergence } from './model_route_divergence';
import type { LayerDivergence } from '../analysis/route_divergence';
import type { Engine } from '../engine';
import type { Tensor } from '../backend/backend';
import type { Analysis } from '../api';
import type { FutureInput, PromptInput } from '../prompt';
import { promptWith, type ChatTurn } from '../prompt';
import type { Progress } from '../progress';
import type { Intervention, PositionSelector } from '../model/intervention';
import { weightModules } from '../model/weight_modules';
import { hookWidth } from '../model/hook_width';
import { difference, relativeDifference, rowDivergence } from '../analysis/model_diff';
import { sinkDivergence } from '../analysis/sinks';
import { checkRecoveryDenominator, type DenominatorCheck } from '../analysis/recovery_denominator';
import type { SteeringVector } from '../steering/vector';
import { caaVector, type CaaVector } from './vectors';
import { assertComparable, tokenizerDifferences } from './compare_check';
import { crossPatch, type CrossDirection, type CrossPatchResult } from './cross_patch';
import type { PatchHook } from './patching';

/** Relative weight differences of two models (dimensionless ratios ‖W_B − W_A‖_F / ‖W_A‖_F). */
export interface WeightDiff {
  nLayers: number;
  /** Block module (attn_norm, q, k, v, o, mlp_norm, gate, up, down, and q_norm / k_norm / post_*_norm where the architecture has them) → [n_layers]. */
  modules: Map<string, Float64Array>;
  /** embed (W_E), unembed (W_U with its bias), final_norm (LN_f), pos_embed (learned positions only): one number each. */
  globals: Map<string, number>;
}

/**
 * ‖W_B − W_A‖_F / ‖W_A‖_F for every (layer, module) and for each whole-model tensor, in float64
 * over the weights as each backend holds them (read back with backend.read; a module's weight and
 * bias count as one vector). Exactly 0 where the two models' values are equal.
 * @throws ModelMismatchError when the architectures or shapes differ (named).
 */
export async function weightDiff(a: Engine, b: Engine): Promise<WeightDiff> {
  assertComparable(a, b, 'weights');
  const ma = weightModules(a.model.weights), mb = weightModules(b.model.weights);
  const L = a.spec.nLayers;
  const diff = async (ta: readonly Tensor[], tb: readonly Tensor[]): Promise<number> => {
    const ha: Float32Array[] = [], hb: Float32Array[] = [];
    for (const t of ta) ha.push(await a.backend.read(t));
    for (const t of tb) hb.push(await b.backend.read(t));
    return relativeDifference(ha, hb);
  };
  const modules = new Map<string, Float64Array>();
  for (let l = 0; l < L; l++) {
    for (const [name, ta] of ma.blocks[l]) {
      const tb = mb.blocks[l].get(name);
      if (!tb) throw new Error(`weight diff: block ${l} of model B has no ${name}`);
      if (!modules.has(name)) modules.set(name, new Float64Array(L).fill(NaN));
      modules.get(name)![l] = await diff(ta, tb);
    }
  }
  const globals = new Map<string, number>();
  for (const [name, ta] of ma.globals) {
    const tb = mb.globals.get(name);
    if (!tb) throw new Error(`weight diff: model B has no ${name}`);
    globals.set(name, await diff(ta, tb));
  }
  return { nLayers: L, modules, globals };
}

/** The prompt and futures every comparison reads. */
export interface CompareInput extends PromptInput {
  good: FutureInput;
  bad: FutureInput;
  /** Sink threshold ε (default 0.3). */
  sinkEps?: number;
}

/** Lens, residual stream and sinks of A and B on one prompt. */
export interface SideBySide {
  labelA: string;
  labelB: string;
  /** Each model's full analysis (Engine.analyse): lensMargin [(n_layers+1)·n_tokens], finalMargin, sinks, tokens, … */
  a: Analysis;
  b: Analysis;
  /** What stops token-aligned differences ([] when the tokenizers and prompt ids agree). */
  mismatch: string[];
  /** The token-aligned differences; null when `mismatch` is not empty (the lenses are then each model's own, labelled). */
  aligned: {
    /** Lens margin B − A [(n_layers+1)·n_tokens] (nats). */
    lensMarginDiff: Float32Array;
    /** ‖h_B − h_A‖/‖h_A‖ of the residual stream [(n_layers+1)·n_tokens] (row 0: embeddings, row l: after block l−1). */
    residRelDiff: Float32Array;
    /** cos(h_A, h_B) [(n_layers+1)·n_tokens]. */
    residCosine: Float32Array;
    /** α_0(B) − α_0(A) per head [n_layers·n_heads]. */
    sinkDAlpha0: Float32Array;
    /** Jensen–Shannon divergence (nats) of the per-head key distributions α/Σα [n_layers·n_heads]. */
    sinkJs: Float32Array;
  } | null;
}

/**
 * Lens margins of A and B, B − A, the residual divergence and the sink divergence on one prompt:
 * Engine.analyse of each model, plus one Engine.run of each capturing the residual stream
 * (blocks.0.hook_resid_pre and every hook_resid_post). Sink and residual divergences need the same
 * layer and head counts as well as the same tokens.
 * @throws Error for a bad prompt or future (in either model).
 */
export async function sideBySide(a: Engine, b: Engine, req: CompareInput): Promise<SideBySide> {
  const ar: CompareInput = { ...promptWith(req.prompt, req), good: req.good, bad: req.bad, sinkEps: req.sinkEps };
  const A = await a.analyse(ar), B = await b.analyse(ar);
  const mismatch = tokenizerDifferences(a, b, ar);
  const sa = a.spec, sb = b.spec;
  if (mismatch.length === 0) {
    for (const [what, x, y] of [['n_layers', sa.nLayers, sb.nLayers], ['n_heads', sa.nHeads, sb.nHeads], ['d_model', sa.dModel, sb.dModel]] as const) {
      if (x !== y) mismatch.push(`${what} ${x} vs ${y}`);
    }
  }
  if (mismatch.length > 0) return { labelA: a.label, labelB: b.label, a: A, b: B, mismatch, aligned: null };
  const L = sa.nLayers, T = A.ids.length;
  const names = ['blocks.0.hook_resid_pre', ...Array.from({ length: L }, (_, l) => `blocks.${l}.hook_resid_post`)];
  const stack = async (e: Engine): Promise<Float32Array> => {
    const { captured } = await e.run(A.ids, { capture: names, logits: 'last' });
    const out = new Float32Array((L + 1) * T * sa.dModel);
    names.forEach((n, i) => out.set(captured.get(n)!, i * T * sa.dModel));
    return out;
  };
  const resid = rowDivergence(await stack(a), await stack(b), (L + 1) * T, sa.dModel);
  const sinks = sinkDivergence(A.sinks, B.sinks, T);
  return {
    labelA: a.label, labelB: b.label, a: A, b: B, mismatch,
    aligned: { lensMarginDiff: difference(A.lensMargin, B.lensMargin), residRelDiff: resid.relNorm, residCosine: resid.cosine, sinkDAlpha0: sinks.dAlpha0, sinkJs: sinks.js },
  };
}

/** CAA vectors of one set built on both models, per layer, and their agreement. */
export interface SteeringTransfer {
  /** The hook per layer, with {l}. */
  hookTemplate: string;
  layers: number[];
  vectorsA: CaaVector[];
  vectorsB: CaaVector[];
  /** cos(v_A, v_B) per entry of `layers` (1: the fine-tune kept the direction; NaN for a zero vector). */
  cosine: Float32Array;
  /** ‖v_B‖/‖v_A‖ per entry of `layers`. */
  normRatio: Float32Array;
}

/**
 * Steering transfer (DESIGN.md §3 "Model comparison"): the CAA vector (Rimsky et al., arXiv
 * 2312.06681; studies/vectors.ts caaVector) of the same contrastive set built on A and on B at
 * each layer's hook, and their cosine per layer. Cost: 2 · |layers| · (|positive| + |negative|) forwards.
 * @param set.turn the chat turn each text is rendered in (default: as typed).
 * @param hookTemplate default "blocks.{l}.hook_resid_post".
 * @param layers default every layer.
 * @param onProgress after each layer (done/total = layers).
 * @throws ModelMismatchError when the models differ in architecture, shapes or tokenizer; Error
 *   for an empty set, an unknown hook or a layer outside the model.
 */
export async function steeringTransfer(
  a: Engine, b: Engine, set: { positive: readonly string[]; negative: readonly string[]; position?: 'last' | { marker: string }; turn?: ChatTurn },
  opts: { hookTemplate?: string; layers?: number[] } = {}, onProgress?: (p: Progress) => void, signal?: AbortSignal,
): Promise<SteeringTransfer> {
  assertComparable(a, b, 'weights');
  const hookTemplate = opts.hookTemplate ?? 'blocks.{l}.hook_resid_post';
  const layers = opts.layers ?? Array.from({ length: a.spec.nLayers }, (_, l) => l);
  for (const l of layers) if (!Number.isInteger(l) || l < 0 || l >= a.spec.nLayers) throw new Error(`steering transfer: layer ${l} is outside 0..${a.spec.nLayers - 1}`);
  const vectorsA: CaaVector[] = [], vectorsB: CaaVector[] = [];
  const cosine = new Float32Array(layers.length), normRatio = new Float32Array(layers.length);
  for (let i = 0; i < layers.length; i++) {
    signal?.throwIfAborted();
    const req = { positive: set.positive, negative: set.negative, position: set.position, ...(set.turn ? { turn: set.turn } : {}), hook: hookTemplate.replace('{l}', String(layers[i])) };
    const va = await caaVector(a, req), vb = await caaVector(b, req);
    vectorsA.push(va); vectorsB.push(vb);
    let ab = 0, aa = 0, bb = 0;
    for (let k = 0; k < va.vector.length; k++) { ab += va.vector[k] * vb.vector[k]; aa += va.vector[k] ** 2; bb += vb.vector[k] ** 2; }
    cosine[i] = aa === 0 || bb === 0 ? NaN : ab / Math.sqrt(aa * bb);
    normRatio[i] = Math.sqrt(bb) / Math.sqrt(aa);
    onProgress?.({ done: i + 1, total: layers.length });
  }
  return { hookTemplate, layers, vectorsA, vectorsB, cosine, normRatio };
}

/**
 * A steering vector built on one model as an intervention on another (h += alpha·v at the vector's
 * hook): pass it to the target's Engine.analyse / generate / run.
 * @param positions default 'all'.
 * @throws Error when the target has no such hook or its width differs from the vector's length.
 */
export function transferIntervention(vector: SteeringVector, target: Engine, alpha: number, positions: PositionSelector = 'all'): Intervention {
  const w = hookWidth(target.spec, vector.hook).width;
  if (w !== vector.vector.length) throw new Error(`the vector built on ${vector.modelId} has ${vector.vector.length} values, ${vector.hook} of ${target.label} is ${w} wide`);
  return { hook: vector.hook, op: { kind: 'add', v: vector.vector, alpha }, positions };
}

export interface CompareRequest extends CompareInput {
  /** Hooks of the cross-model patching (default all four: resid_pre, attn_out, mlp_out, z). */
  hooks?: PatchHook[];
  /** Also patch per (layer, position) (not only whole layers). Default false. */
  positions?: boolean;
  /** Also patch A into B. Default true. */
  reverse?: boolean;
}

/** Everything compareModels computes. */
export interface ModelComparison {
  weights: WeightDiff;
  sides: SideBySide;
  /** Per hook, B's values patched into A's run. */
  crossPatch: Map<PatchHook, CrossPatchResult>;
  /** Per hook, A's values patched into B's run (empty with reverse: false). */
  crossPatchReverse: Map<PatchHook, CrossPatchResult>;
  /** Δ_B − Δ_A of the patching runs against the reliability threshold. */
  denominator: DenominatorCheck;
  /** Mixture-of-experts pairs: per sparse layer, each token's routing divergence of B from A (model_route_divergence.ts). */
  routeDivergence?: LayerDivergence[];
}

/**
 * The whole comparison of A and B on one prompt as one job: weightDiff, sideBySide, and crossPatch
 * for each hook in each direction.
 * @param onProgress done/total over: weight diff, side by side, then each patched run of each grid.
 * @param signal checked between runs; when aborted the job throws signal.reason.
 * @throws ModelMismatchError (what differs) when the models do not share tokenizer, architecture
 *   and shapes; Error when Δ_A = Δ_B, for an unknown hook, a bad prompt or future.
 */
export async function compareModels(a: Engine, b: Engine, req: CompareRequest, onProgress?: (p: Progress) => void, signal?: AbortSignal): Promise<ModelComparison> {
  const hooks = req.hooks ?? ['resid_pre', 'attn_out', 'mlp_out', 'z'];
  assertComparable(a, b, 'weights', req);
  const L = a.spec.nLayers, T = a.encodePrompt(req).length, H = a.spec.nHeads;
  const dirs: CrossDirection[] = req.reverse === false ? ['b_into_a'] : ['b_into_a', 'a_into_b'];
  const gridRuns = (h: PatchHook) => L + (h === 'z' ? L * H : req.positions ? L * T : 0);
  const total = 2 + dirs.length * hooks.reduce((s, h) => s + gridRuns(h), 0);
  let done = 0;
  const tick = (n = 1) => onProgress?.({ done: (done += n), total });
  const weights = await weightDiff(a, b);
  tick();
  signal?.throwIfAborted();
  const sides = await sideBySide(a, b, req);
  tick();
  const crossPatchAB = new Map<PatchHook, CrossPatchResult>(), crossPatchBA = new Map<PatchHook, CrossPatchResult>();
  for (const direction of dirs) {
    for (const hook of hooks) {
      signal?.throwIfAborted();
      const base = done;
      const r = await crossPatch(a, b, { ...promptWith(req.prompt, req), good: req.good, bad: req.bad, hook, direction, cells: req.positions ?? false },
        (p) => onProgress?.({ done: base + p.done, total }), signal);
      done = base + gridRuns(hook);
      (direction === 'b_into_a' ? crossPatchAB : crossPatchBA).set(hook, r);
    }
  }
  const any = crossPatchAB.values().next().value as CrossPatchResult | undefined;
  const denominator = any ? any.denominator : checkRecoveryDenominator(sides.b.finalMargin[T - 1], sides.a.finalMargin[T - 1]);
  const routeDivergence = await modelRouteDivergence(a, b, req);
  return { weights, sides, crossPatch: crossPatchAB, crossPatchReverse: crossPatchBA, denominator, ...(routeDivergence ? { routeDivergence } : {}) };
}
