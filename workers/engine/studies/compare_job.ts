/**
 * The model comparison as the workbench runs it (the `compare` row of studies/registry.ts): model
 * A (the session's engine) against model B (StudyContext.modelB) on one prompt, as one job with
 * progress and cancel, its result plain data (no Maps: typed arrays in plain objects and arrays,
 * which cross the worker boundary as transferables).
 *
 * A pair that cannot be compared token by token or weight by weight is not an error here: the
 * result says what differs (`mismatch`) and still carries each model's own lens, labelled
 * (compare.ts sideBySide), with the weight diff and the cross-model patching left out (null / []).
 */
import type { Engine } from '../engine';
import type { Progress } from '../progress';
import type { DenominatorCheck } from '../analysis/recovery_denominator';
import { compareModels, sideBySide, type CompareRequest, type SideBySide } from './compare';
import { assertComparable, ModelMismatchError, type ComparisonNeed } from './compare_check';
import type { CrossPatchResult } from './cross_patch';
import { gridRows } from './report_json';

/** What the app asks: compare.ts CompareRequest (prompt, futures, hooks, positions, reverse). */
export type CompareJob = CompareRequest;

/** The weight diff as plain data: compare.ts WeightDiff without Maps, modules in the architecture's order. */
export interface WeightDiffRows {
  nLayers: number;
  /** ‖W_B − W_A‖_F / ‖W_A‖_F per block module: [n_layers] each (0 exactly where the values are equal). */
  modules: { name: string; values: Float64Array }[];
  /** embed, unembed, final_norm (and pos_embed): one number each. */
  globals: { name: string; value: number }[];
}

/** Everything the Compare view shows. */
export interface ComparisonResult {
  labelA: string;
  labelB: string;
  /** Why the pair cannot be compared weight by weight (or token by token), each difference a phrase; null when it can. */
  mismatch: { need: ComparisonNeed; differences: string[]; message: string } | null;
  /** null when `mismatch` is set. */
  weights: WeightDiffRows | null;
  /** Each model's lens (always), and B − A, residual and sink divergence when token-aligned (sides.aligned). */
  sides: SideBySide;
  /** B's activation patched into A's run, one entry per hook asked ([] when `mismatch` is set). */
  crossPatch: CrossPatchResult[];
  /** A's activation patched into B's run (reverse). */
  crossPatchReverse: CrossPatchResult[];
  /** Δ_B − Δ_A against the reliability threshold; null when `mismatch` is set. */
  denominator: DenominatorCheck | null;
}

/**
 * Runs the comparison of `a` and `b` (compare.ts compareModels), or, for a pair that differs, only
 * the side-by-side lens with what differs.
 * @param onProgress done/total over the weight diff, the side by side and every patched run.
 * @param signal checked between runs; an abort throws signal.reason.
 * @throws Error for a bad prompt or future, an unknown hook, or Δ_A = Δ_B.
 */
export async function compareJob(a: Engine, b: Engine, req: CompareJob, onProgress?: (p: Progress) => void, signal?: AbortSignal): Promise<ComparisonResult> {
  try {
    assertComparable(a, b, 'weights', req);
  } catch (e) {
    if (!(e instanceof ModelMismatchError)) throw e;
    onProgress?.({ done: 0, total: 1 });
    const sides = await sideBySide(a, b, req);
    onProgress?.({ done: 1, total: 1 });
    return { labelA: a.label, labelB: b.label, mismatch: { need: e.need, differences: e.differences, message: e.message }, weights: null, sides, crossPatch: [], crossPatchReverse: [], denominator: null };
  }
  const c = await compareModels(a, b, req, onProgress, signal);
  return {
    labelA: a.label, labelB: b.label, mismatch: null,
    weights: {
      nLayers: c.weights.nLayers,
      modules: [...c.weights.modules].map(([name, values]) => ({ name, values })),
      globals: [...c.weights.globals].map(([name, value]) => ({ name, value })),
    },
    sides: c.sides,
    crossPatch: [...c.crossPatch.values()],
    crossPatchReverse: [...c.crossPatchReverse.values()],
    denominator: c.denominator,
  };
}

const num = (x: number) => (Number.isFinite(x) ? x : null);
const rows = (flat: ArrayLike<number>, n: number) => gridRows(Float64Array.from(flat), n).map((r) => r.map(num));

/**
 * A comparison as JSON (the Compare view's JSON export): the runner's `compare` shapes
 * (cli/compare.ts compareJson: weight_diff, lens_margin_a/_b/_diff, sink_*, cross_patch, …) plus
 * `mismatch` and each model's own tokens.
 */
export function comparisonJson(r: ComparisonResult): Record<string, unknown> {
  const s = r.sides, Ta = s.a.ids.length, Tb = s.b.ids.length, H = s.a.nHeads;
  const weight: Record<string, unknown> = {};
  for (const m of r.weights?.modules ?? []) weight[m.name] = Array.from(m.values, num);
  for (const g of r.weights?.globals ?? []) weight[g.name] = num(g.value);
  const layer = (g: CrossPatchResult[]) => Object.fromEntries(g.map((x) => [x.hook, x.hook === 'z' ? rows(x.recovery, x.nCols) : Array.from(x.layerRecovery, num)]));
  const cells = (g: CrossPatchResult[]) => Object.fromEntries(g.filter((x) => x.hook !== 'z' && Array.from(x.recovery).some(Number.isFinite)).map((x) => [x.hook, rows(x.recovery, x.nCols)]));
  const al = s.aligned;
  return {
    label_a: r.labelA, label_b: r.labelB, mismatch: r.mismatch?.differences ?? null,
    tokens_a: s.a.tokens, tokens_b: s.b.tokens, ids_a: s.a.ids, ids_b: s.b.ids,
    weight_diff: r.weights ? weight : null,
    lens_margin_a: rows(s.a.lensMargin, Ta), lens_margin_b: rows(s.b.lensMargin, Tb),
    margin_a: s.a.finalMargin[Ta - 1], margin_b: s.b.finalMargin[Tb - 1],
    sink_alpha0_a: rows(s.a.sinks.alpha0, H), sink_alpha0_b: rows(s.b.sinks.alpha0, s.b.nHeads),
    sink_rate_a: Array.from(s.a.sinks.sinkRate), sink_rate_b: Array.from(s.b.sinks.sinkRate),
    ...(al ? {
      lens_margin_diff: rows(al.lensMarginDiff, Ta), resid_rel_diff: rows(al.residRelDiff, Ta), resid_cosine: rows(al.residCosine, Ta),
      sink_dalpha0: rows(al.sinkDAlpha0, H), sink_js: rows(al.sinkJs, H),
    } : {}),
    recovery_denominator: r.denominator?.denominator ?? null,
    cross_patch: layer(r.crossPatch), cross_patch_reverse: layer(r.crossPatchReverse),
    cross_patch_positions: cells(r.crossPatch), cross_patch_reverse_positions: cells(r.crossPatchReverse),
  };
}
