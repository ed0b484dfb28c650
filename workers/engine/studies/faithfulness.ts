/**
 * Faithfulness of a token attribution (DESIGN.md §3 "Attribution": every attribution map carries a
 * deletion/insertion curve; Petsiuk et al. 2018, RISE, arXiv 1806.07421, deletion and insertion
 * metrics; Samek et al. 2017 for the perturbation curve). Tokens are ranked by their attribution of
 * the margin, largest first (the most evidence for the good future); then
 *   deletion:  the top k are replaced by a baseline token, the rest kept — Δ should fall fast;
 *   insertion: every candidate replaced by the baseline, then the top k restored — Δ should rise fast;
 * for k = 0 … n (n candidates; at most `steps` + 1 points, evenly spaced in k). Δ is the first-token
 * margin at the last position of the (possibly edited) sequence, one forward per point. Works for any
 * attribution vector (flow.ts, and the gradient methods' maps), and for spans (`groups`: each a set of
 * positions deleted or restored together, ranked by its own attribution; span_faithfulness.ts).
 */
import type { Engine } from '../engine';
import { logitMargin } from '../analysis/margin';

export interface FaithfulnessRequest {
  /** The sequence scored (prompt, and any generated tokens kept as they are). */
  ids: readonly number[];
  /** One number per position of the prompt (or of the sequence) [≥ max(candidate)+1]; with `groups`, one per group. */
  attribution: ArrayLike<number>;
  /** Positions that may be replaced (default every position of `attribution`; ignored with `groups`). */
  positions?: readonly number[];
  /** Units replaced together (spans: their positions) instead of single positions; `attribution` then scores each group. */
  groups?: readonly (readonly number[])[];
  good: readonly number[];
  bad: readonly number[];
  /** The replacement token (default the BOS id, else 0). */
  baselineId?: number;
  /** At most this many steps after k = 0 (default 16). */
  steps?: number;
  /** Prompt length, for the runs' 'prompt' intervention selectors (default ids.length). */
  nPrompt?: number;
}

export interface FaithfulnessCurves {
  baselineId: number;
  /** Candidate positions (with groups: group indices), most positive attribution first. */
  order: number[];
  /** Tokens (with groups: groups) replaced (deletion) / restored (insertion) at each point. */
  k: number[];
  /** Δ with the top k deleted [points]. */
  deletion: number[];
  /** Δ with only the top k present [points]. */
  insertion: number[];
  /** Mean Δ over the points (the curves' normalised area; lower deletion, higher insertion = more faithful). */
  deletionArea: number;
  insertionArea: number;
}

/**
 * Deletion and insertion curves of one attribution (see the module comment).
 * @throws Error for a baseline id outside the vocabulary or a position outside the sequence.
 */
export async function faithfulnessCurves(engine: Engine, req: FaithfulnessRequest, signal?: AbortSignal): Promise<FaithfulnessCurves> {
  const V = engine.spec.dVocab, T = req.ids.length;
  const baselineId = req.baselineId ?? engine.spec.bosTokenId ?? 0;
  if (!(Number.isInteger(baselineId) && baselineId >= 0 && baselineId < V)) throw new Error(`baseline token ${baselineId} is outside the vocabulary (0..${V - 1})`);
  if (req.groups && req.groups.length !== req.attribution.length) throw new Error(`faithfulness: ${req.groups.length} groups but ${req.attribution.length} scores`);
  for (const g of req.groups ?? []) for (const p of g) if (!(Number.isInteger(p) && p >= 0 && p < T)) throw new Error(`faithfulness: position ${p} is outside the ${T} tokens`);
  const units = req.groups ?? null;
  const positions = units ? units.map((_, i) => i) : req.positions ?? Array.from({ length: req.attribution.length }, (_, i) => i);
  if (!units) for (const p of positions) if (!(Number.isInteger(p) && p >= 0 && p < T && p < req.attribution.length)) throw new Error(`faithfulness: position ${p} is outside the ${Math.min(T, req.attribution.length)} attributed tokens`);
  const order = [...positions].sort((a, b) => req.attribution[b] - req.attribution[a] || a - b);
  const replace = (ids: number[], u: number) => { for (const p of units ? units[u] : [u]) ids[p] = baselineId; };
  const n = order.length, steps = Math.max(1, Math.min(req.steps ?? 16, n));
  const k = [...new Set(Array.from({ length: steps + 1 }, (_, i) => Math.round((i * n) / steps)))];
  const score = async (ids: number[]): Promise<number> => {
    await new Promise((r) => setTimeout(r, 0));
    signal?.throwIfAborted();
    const out = await engine.run(ids, { logits: 'last', nPrompt: req.nPrompt ?? ids.length });
    return logitMargin(out.logits, req.good, req.bad);
  };
  const deletion: number[] = [], insertion: number[] = [];
  for (const kk of k) {
    const del = [...req.ids], ins = [...req.ids];
    for (let r = 0; r < n; r++) {
      if (r < kk) replace(del, order[r]);
      else replace(ins, order[r]);
    }
    deletion.push(await score(del));
    insertion.push(await score(ins));
  }
  const mean = (xs: number[]) => xs.reduce((a, b) => a + b, 0) / xs.length;
  return { baselineId, order, k, deletion, insertion, deletionArea: mean(deletion), insertionArea: mean(insertion) };
}
