/**
 * Linear probes per layer (DESIGN.md §3 "Linear probes per layer": where the decision becomes
 * visible). Two labelled prompt sets are run through the model; at one token position of each
 * prompt the residual stream is read at every layer — the embeddings (blocks.0.hook_resid_pre,
 * row 0, as in the logit-lens grid) and blocks.l.hook_resid_post (row l + 1) — and per row:
 * - k-fold cross-validated L2 logistic regression (analysis/logistic.ts): held-out accuracy and
 *   AUROC (Alain & Bengio, "Understanding intermediate layers using linear classifier probes",
 *   arXiv 1610.01644);
 * - the same pipeline on one seeded permutation of the labels, the control curve: a probe that
 *   scores well on shuffled labels memorises rather than reads (Hewitt & Liang 2019, "Designing and
 *   Interpreting Probes with Control Tasks"; selectivity = accuracy − control accuracy);
 * - the difference-of-means direction mean(positive) − mean(negative) (the CAA vector of the two
 *   sets at that hook and position, Rimsky et al. arXiv 2312.06681), which the UI can send to
 *   the vector library;
 * and the first row whose accuracy reaches 95 % of the best row's.
 */
import type { ChatTurn } from '../prompt';
import { promptWith } from '../prompt';
import type { Engine } from '../engine';
import { crossValidate, shuffle, stratifiedFolds } from '../analysis/logistic';
import { seededRandom } from '../analysis/sampling';
import type { Progress } from '../progress';

/** Token read in each prompt: 'last', or an index (negative counts from the end: −1 = last). */
export type ProbePosition = 'last' | number;

export interface ProbeOptions {
  /** Folds of the cross-validation (default 5, lowered to the smaller class's size, at least 2). */
  folds?: number;
  /** Seed of the fold assignment and of the control permutation (default 0). */
  seed?: number;
  /** L2 strength λ on standardised features (default 1, sklearn's C = 1). */
  l2?: number;
}

export interface ProbeRequest extends ProbeOptions, ChatTurn {
  /** Prompts of the positive class (label 1) and of the negative class (label 0). */
  positive: readonly string[];
  negative: readonly string[];
  /** Display names of the classes [negative, positive] (default ["negative", "positive"]). */
  classes?: [string, string];
  position?: ProbePosition;
}

/** Per-row scores of probes on given activations (probeActivations). */
export interface ProbeScores {
  /** Held-out accuracy per row [rows]. */
  accuracy: number[];
  /** Held-out AUROC per row [rows]. */
  auroc: number[];
  /** Accuracy and AUROC of the same pipeline on permuted labels per row [rows] (≈ 0.5 for a probe that does not memorise). */
  controlAccuracy: number[];
  controlAuroc: number[];
  /** mean(positive) − mean(negative) per row, [rows][d]. */
  directions: Float32Array[];
  /** Held-out decision value w·z + b of each example per row, [rows][n] (> 0 predicts the positive class). */
  heldOut: Float64Array[];
  /** Highest accuracy over rows. */
  bestAccuracy: number;
  /** First row with accuracy ≥ 0.95 · bestAccuracy. */
  firstLayer95: number;
  /** Folds used. */
  folds: number;
}

/** The result of probeLayers: ProbeScores plus what was read where. */
export interface ProbeResult extends ProbeScores {
  /** Hook of each row: row 0 = blocks.0.hook_resid_pre (embeddings), row l + 1 = blocks.l.hook_resid_post. */
  hooks: string[];
  classes: [string, string];
  nPositive: number;
  nNegative: number;
  position: ProbePosition;
  /** Token read in each prompt (positives first, then negatives) and its index. */
  readTokens: string[];
  readPositions: number[];
  seed: number;
  l2: number;
}

/**
 * Probes on activations already read: rows × (n prompts × d) with labels.
 * @param rows activations per row, each [n, d] row-major.
 * @param labels [n] in {0, 1}.
 * @param onRow called after each row's probes (it may throw to stop, e.g. on cancel).
 * @throws Error when a class has fewer than 2 examples, sizes disagree, a label is not 0/1, or the
 *   classes are indistinguishable (every row: the same distinct vectors in both).
 */
export function probeActivations(rows: readonly Float32Array[], labels: ArrayLike<number>, d: number, opts: ProbeOptions = {}, onRow?: (row: number) => void): ProbeScores {
  const n = labels.length;
  for (const r of rows) if (r.length !== n * d) throw new Error(`probe: a row holds ${r.length} values; expected ${n} examples × ${d}`);
  let nPos = 0;
  for (let i = 0; i < n; i++) {
    if (labels[i] !== 0 && labels[i] !== 1) throw new Error(`probe: label ${labels[i]} of example ${i} is not 0 or 1`);
    nPos += labels[i];
  }
  const minClass = Math.min(nPos, n - nPos);
  if (minClass < 2) throw new Error(`a probe needs at least 2 examples in each set for cross-validation (got ${nPos} positive, ${n - nPos} negative)`);
  if (rows.length > 0 && rows.every((X) => indistinguishable(X, labels, d))) {
    throw new Error(`the two classes are indistinguishable: at every layer each positive example's activation equals a negative example's and vice versa (${nPos} positive, ${n - nPos} negative), so a probe has nothing to separate (its held-out accuracy would be an artefact of the folds, not 0.5); give classes whose prompts differ`);
  }
  const seed = opts.seed ?? 0, l2 = opts.l2 ?? 1;
  const { folds, fold } = probeFolds(labels, opts);
  const shuffled = shuffle(Array.from(labels), seededRandom(seed + 0x9e3779b9));
  const controlFold = stratifiedFolds(shuffled, folds, seed + 1);
  const out: ProbeScores = { accuracy: [], auroc: [], controlAccuracy: [], controlAuroc: [], directions: [], heldOut: [], bestAccuracy: 0, firstLayer95: 0, folds };
  for (const [r, X] of rows.entries()) {
    const cv = crossValidate(X, labels, n, d, fold, l2);
    const ctl = crossValidate(X, shuffled, n, d, controlFold, l2);
    out.accuracy.push(cv.accuracy);
    out.auroc.push(cv.auroc);
    out.heldOut.push(cv.scores);
    out.controlAccuracy.push(ctl.accuracy);
    out.controlAuroc.push(ctl.auroc);
    const dir = new Float64Array(d);
    for (let i = 0; i < n; i++) {
      const s = labels[i] === 1 ? 1 / nPos : -1 / (n - nPos);
      for (let j = 0; j < d; j++) dir[j] += s * X[i * d + j];
    }
    out.directions.push(Float32Array.from(dir));
    onRow?.(r);
  }
  out.bestAccuracy = Math.max(...out.accuracy);
  out.firstLayer95 = out.accuracy.findIndex((a) => a >= 0.95 * out.bestAccuracy);
  return out;
}

/**
 * The folds probeActivations uses: k = opts.folds (default 5) lowered to the smaller class (at
 * least 2), and each example's fold (stratifiedFolds with opts.seed, default 0).
 * @throws Error as stratifiedFolds, for a class with fewer than 2 examples.
 */
export function probeFolds(labels: ArrayLike<number>, opts: ProbeOptions = {}): { folds: number; fold: Int32Array } {
  let nPos = 0;
  for (let i = 0; i < labels.length; i++) nPos += labels[i];
  const folds = Math.max(2, Math.min(opts.folds ?? 5, nPos, labels.length - nPos));
  return { folds, fold: stratifiedFolds(labels, folds, opts.seed ?? 0) };
}

/** Whether every activation vector [d] of one class also occurs in the other (the same sets of distinct vectors). */
function indistinguishable(X: Float32Array, labels: ArrayLike<number>, d: number): boolean {
  const key = (i: number) => new Uint32Array(X.buffer, X.byteOffset + i * d * 4, d).join(',');
  const seen: [Set<string>, Set<string>] = [new Set(), new Set()];
  for (let i = 0; i < labels.length; i++) seen[labels[i]].add(key(i));
  if (seen[0].size !== seen[1].size) return false;
  for (const k of seen[0]) if (!seen[1].has(k)) return false;
  return true;
}

/**
 * Refuses two prompt sets that hold the same prompts (as sets): the classes cannot differ in any
 * activation, and cross-validation would report accuracy and AUROC 0 where chance is 0.5.
 * @throws Error naming how many distinct prompts both sets share.
 */
export function assertClassesDiffer(positive: readonly string[], negative: readonly string[], classes: [string, string] = ['negative', 'positive']): void {
  const pos = new Set(positive), neg = new Set(negative);
  if (pos.size === neg.size && [...pos].every((p) => neg.has(p))) {
    throw new Error(`the ${classes[1]} and ${classes[0]} sets hold the same ${pos.size} distinct prompt${pos.size === 1 ? '' : 's'}: a probe needs two classes that differ (is one file loaded as both, or the labels lost?)`);
  }
}

/** Resolves a probe position in a prompt of T tokens. @throws Error naming the prompt when it is outside. */
export function readIndex(position: ProbePosition, T: number, prompt: string): number {
  if (position === 'last') return T - 1;
  if (!Number.isInteger(position)) throw new Error(`probe position ${position} is not 'last' or an integer token index`);
  const t = position < 0 ? T + position : position;
  if (t < 0 || t >= T) throw new Error(`probe position ${position} is outside the ${T} tokens of “${prompt}”`);
  return t;
}

/**
 * Runs every prompt once (capturing the residual stream at every layer), then probes each row.
 * @param onProgress after each prompt's forward pass and each row's probes (total = prompts + rows).
 * @param signal checked before each forward pass and each row; when aborted it throws signal.reason.
 * @throws Error for a set with fewer than 2 prompts, two sets of the same prompts (before any
 *   forward pass), an empty or too-long prompt, a position outside a prompt, or indistinguishable classes.
 */
export async function probeLayers(engine: Engine, req: ProbeRequest, onProgress?: (p: Progress) => void, signal?: AbortSignal): Promise<ProbeResult> {
  const L = engine.spec.nLayers, d = engine.spec.dModel;
  const position = req.position ?? 'last';
  const texts = [...req.positive, ...req.negative];
  const labels = Uint8Array.from(texts, (_, i) => (i < req.positive.length ? 1 : 0));
  if (Math.min(req.positive.length, req.negative.length) < 2) throw new Error(`a probe needs at least 2 prompts in each set for cross-validation (got ${req.positive.length} positive, ${req.negative.length} negative)`);
  assertClassesDiffer(req.positive, req.negative, req.classes);
  const hooks = ['blocks.0.hook_resid_pre', ...Array.from({ length: L }, (_, l) => `blocks.${l}.hook_resid_post`)];
  const rows = hooks.map(() => new Float32Array(texts.length * d));
  const readTokens: string[] = [], readPositions: number[] = [];
  const total = texts.length + hooks.length;
  let done = 0;
  for (let i = 0; i < texts.length; i++) {
    await new Promise((r) => setTimeout(r, 0)); // lets a cancel message in between forwards (worker)
    signal?.throwIfAborted();
    const ids = engine.encodePrompt(promptWith(texts[i], req));
    const t = readIndex(position, ids.length, texts[i]);
    const { captured } = await engine.run(ids.slice(0, t + 1), { capture: hooks, logits: 'last' });
    hooks.forEach((h, r) => rows[r].set(captured.get(h)!.subarray(t * d, (t + 1) * d), i * d));
    readPositions.push(t);
    readTokens.push(engine.tokenStrings(ids.slice(0, t + 1))[t]);
    onProgress?.({ done: ++done, total });
  }
  const scores = probeActivations(rows, labels, d, req, () => {
    signal?.throwIfAborted();
    onProgress?.({ done: ++done, total });
  });
  return {
    ...scores, hooks, classes: req.classes ?? ['negative', 'positive'],
    nPositive: req.positive.length, nNegative: req.negative.length, position, readTokens, readPositions,
    seed: req.seed ?? 0, l2: req.l2 ?? 1,
  };
}
