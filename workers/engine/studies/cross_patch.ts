/**
 * Cross-model activation patching (DESIGN.md §3 "Model comparison"): run one model and replace its
 * activation at a hook by the other model's on the same prompt — at all positions of a layer, per
 * (layer, position), or per (layer, head) at attn.hook_z — and measure the margin Δ again. With A
 * the base and B the fine-tune, one formula in both directions (as patching.ts's denoise / noise):
 *
 *   r = (Δ_patched − Δ_A) / (Δ_B − Δ_A)
 *
 * - 'b_into_a': A's run with B's values patched in. r = 1: the component carries the whole change
 *   fine-tuning made to the decision (sufficient); r = 0: it carries none of it.
 * - 'a_into_b': B's run with A's values patched in. r = 0: undoing the change there removes the
 *   fine-tune's effect (necessary); r = 1: B's decision does not depend on it.
 * A value equal in both models (every activation upstream of the first changed weight) is not
 * patched (r = 0 exactly for b_into_a, 1 for a_into_b). The runs are patching.ts's: patchSource on
 * the source model, patchRuns (prefix KV reuse, progress, cancel) on the patched one.
 * Sources: DESIGN.md §3; Surgery (arXiv 2602.05228) and model diffing / crosscoders
 * (arXiv 2504.02922) for comparing a base and its fine-tune; Heimersheim & Nanda (arXiv 2404.15255)
 * for normalised recovery. The denominator's reliability rule is analysis/recovery_denominator.ts.
 */
import type { Engine } from '../engine';
import type { SharedPrefix } from '../decision_point';
import type { FutureInput, ResolvedFuture, ChatTurn } from '../prompt';
import { promptWith } from '../prompt';
import type { Progress } from '../progress';
import { checkRecoveryDenominator, type DenominatorCheck } from '../analysis/recovery_denominator';
import { assertComparable } from './compare_check';
import { patchRuns, patchSource, recoveryOf, type PatchHook, type PatchMetric, type PatchPlan } from './patching';

/** Which model is run and which one's values are patched into it. */
export type CrossDirection = 'b_into_a' | 'a_into_b';

export interface CrossPatchRequest extends ChatTurn {
  prompt: string;
  good: FutureInput;
  bad: FutureInput;
  hook: PatchHook;
  /** Default 'b_into_a'. */
  direction?: CrossDirection;
  /** Default 'final' (first-token margin at the last prompt position). */
  metric?: PatchMetric;
  /** false: the whole-layer patches only (recovery per cell is NaN; z's per-head cells are always run). Default true. */
  cells?: boolean;
  /** false: a full forward per patched run (the naive loop, for equality tests). Default true. */
  reuse?: boolean;
}

export interface CrossPatchResult {
  /** The futures' shared prefix, teacher-forced after the prompt (decision_point.ts), or null: the margins are read after it. */
  sharedPrefix?: SharedPrefix | null;
  hook: PatchHook;
  /** "blocks.{l}.hook_mlp_out", … */
  hookTemplate: string;
  direction: CrossDirection;
  metric: PatchMetric;
  nLayers: number;
  columns: 'position' | 'head';
  /** n_tokens, or n_heads for z. */
  nCols: number;
  ids: number[];
  tokens: string[];
  good: ResolvedFuture;
  bad: ResolvedFuture;
  /** Δ_A and Δ_B of the unpatched runs (nats). */
  marginA: number;
  marginB: number;
  /** Δ per cell [n_layers·n_cols] (NaN where not run). */
  patchedMargin: Float32Array;
  /** r per cell [n_layers·n_cols], r = (Δ_patched − Δ_A)/(Δ_B − Δ_A). */
  recovery: Float32Array;
  /** r with every position (z: every head) of a layer patched at once [n_layers]. */
  layerRecovery: Float32Array;
  /** Δ_B − Δ_A against MIN_RECOVERY_DENOMINATOR (a small one makes r noise). */
  denominator: DenominatorCheck;
  positionsComputed: number;
  cellsSkipped: number;
}

/**
 * Cross-model patching of one hook as one job (see the file comment for r and the directions).
 * @param a model A (the base), b model B (the fine-tune): same tokenizer, architecture and shapes.
 * @param onProgress after each patched run (patchRuns' done/total).
 * @param signal checked between runs; when aborted the job throws signal.reason.
 * @throws ModelMismatchError naming what differs (vocabulary, prompt ids, d_model, n_layers, …);
 *   Error when Δ_A = Δ_B (r undefined), for an unknown hook, a bad prompt or future.
 */
export async function crossPatch(a: Engine, b: Engine, req: CrossPatchRequest, onProgress?: (p: Progress) => void, signal?: AbortSignal): Promise<CrossPatchResult> {
  const direction = req.direction ?? 'b_into_a', metric = req.metric ?? 'final';
  if (direction !== 'b_into_a' && direction !== 'a_into_b') throw new Error(`direction "${direction as string}": use b_into_a or a_into_b`);
  if (metric !== 'final' && metric !== 'sequence') throw new Error(`metric "${metric as string}": use final or sequence`);
  const p = promptWith(req.prompt, req);
  assertComparable(a, b, 'weights', { ...p, good: req.good, bad: req.bad });
  const { promptIds: ids, good, bad, sharedPrefix } = a.decisionPoint(p, req.good, req.bad);
  const plan: PatchPlan = { hook: req.hook, metric, good, bad, reuse: req.reuse, cells: req.hook === 'z' || (req.cells ?? true), promptLabel: req.prompt };
  const [run, src] = direction === 'b_into_a' ? [a, b] : [b, a];
  const source = await patchSource(src, ids, plan);
  let marginA = 0, marginB = 0;
  const runs = await patchRuns(run, ids, source, plan, (runMargin) => {
    [marginA, marginB] = direction === 'b_into_a' ? [runMargin, source.margin] : [source.margin, runMargin];
    if (Math.abs(marginB - marginA) < 1e-6) throw new Error(`models A and B give the same margin on this prompt (Δ = ${marginA.toFixed(4)}), so cross-model recovery (Δ_patched − Δ_A)/(Δ_B − Δ_A) is undefined: choose a prompt where the fine-tune changes the decision`);
  }, onProgress, signal);
  const r = (m: number) => recoveryOf(m, marginB, marginA);
  return {
    hook: req.hook, hookTemplate: runs.hookTemplate, direction, metric, nLayers: a.spec.nLayers, columns: runs.columns, nCols: runs.nCols,
    ids, tokens: a.tokenStrings(ids), good, bad, sharedPrefix, marginA, marginB,
    patchedMargin: Float32Array.from(runs.patchedMargin), recovery: Float32Array.from(runs.patchedMargin, r), layerRecovery: Float32Array.from(runs.layerPatched, r),
    denominator: checkRecoveryDenominator(marginB, marginA),
    positionsComputed: runs.positionsComputed, cellsSkipped: runs.cellsSkipped,
  };
}
