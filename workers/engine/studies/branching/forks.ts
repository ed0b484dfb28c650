/**
 * Fork points of a generation (DESIGN.md §3 "Fork points"; Bigelow et al. arXiv 2412.07961,
 * "Forking Paths in Neural Text Generation"): at each generated position of a path,
 * - the gap p(top-1) − p(top-2) of the distribution the token was drawn from (small = a near tie), and
 * - the forking-tokens measurement: force the chosen token and each of the next `alternatives`
 *   most likely tokens there, resample `samples` continuations of up to `horizon` tokens after each
 *   (seeded), and record each continuation's outcome margin Δ = log p(good) − log p(bad) of the next
 *   token after it. The outcome distribution per alternative is those Δ values (and the fraction
 *   with Δ > 0); the position's score is the largest |mean Δ(alternative) − mean Δ(chosen)|, in nats:
 *   how far forcing another token there moves the outcome.
 * Continuations share the path's prefix through the explorer's KV cache (only their own positions run).
 */
import type { Intervention } from '../../model/intervention';
import type { BranchExplorer } from './explorer';
import { nodeOf, pathOf, type DrawSettings } from './tree';
import type { Progress } from '../../progress';

export interface ForkPointsRequest {
  /** The node whose path is scored (default 0, the trunk). */
  node?: number;
  /** Continuations per forced token (≥ 1). */
  samples: number;
  /** Alternatives forced besides the chosen token (default 1: the most likely other token). */
  alternatives?: number;
  /** Sampling temperature of the continuations (default 1) and top-k (default 0 = all). */
  temperature?: number;
  topK?: number;
  /** Seed of the whole measurement (default 0); each continuation's seed derives from it. */
  seed?: number;
  /** Tokens drawn after the forced token (default: to the end of the path). */
  horizon?: number;
  /** Score only positions whose top-1/top-2 gap is at most this (default 1: every position). */
  maxGap?: number;
  /** Continuations under the active interventions (from the fork on). */
  steered?: boolean;
}

/** Outcomes after forcing one token. */
export interface ForkOutcome {
  id: number;
  token: string;
  /** Its probability in the path's distribution at that position. */
  prob: number;
  /** Outcome margin Δ of each continuation, nats [samples]. */
  outcomes: number[];
  mean: number;
  /** Fraction of continuations with Δ > 0 (the good future ahead). */
  fracGood: number;
}

export interface ForkPoint {
  position: number;
  /** New-token index (position − n_prompt). */
  step: number;
  id: number;
  token: string;
  /** p(top-1) − p(top-2). */
  gap: number;
  /** [0] = the chosen token, then the alternatives in decreasing probability; empty for an unscored position. */
  forced: ForkOutcome[];
  /** max over alternatives of |mean Δ(alternative) − mean Δ(chosen)| (nats); NaN when unscored. */
  score: number;
}

export interface ForkPointsResult {
  node: number;
  samples: number;
  horizon: number;
  temperature: number;
  seed: number;
  /** The gap at or under which a position was to be scored (1: every position); the others keep score NaN. */
  maxGap: number;
  points: ForkPoint[];
  /** Stopped by cancel: the points scored so far are kept (the rest have score NaN). */
  cancelled: boolean;
}

/**
 * How far a fork-points run is, after each continuation: continuations `done` of `total`; positions
 * whose continuations are all done (`scored`) of those to score (`positions`, gap ≤ maxGap); and the
 * token positions those continuations push through the model (`tokens` of `tokensTotal`: each runs
 * from its position to its end), the unit of equal cost for the time left.
 */
export interface ForkProgress extends Progress { scored: number; positions: number; tokens: number; tokensTotal: number }

/** A continuation's seed from the measurement's seed and its place (position, forced token, sample): order-free, so a partial run and a full run agree. */
export function continuationSeed(seed: number, position: number, forced: number, sample: number): number {
  let h = (seed ^ 0x9e3779b9) >>> 0;
  for (const v of [position, forced, sample]) h = Math.imul(h ^ (v + 0x7f4a7c15), 0x85ebca6b) >>> 0;
  return (h ^ (h >>> 13)) >>> 0;
}

/**
 * Scores every generated position of a path (see the module docstring).
 * @param onProgress after each continuation: done / total continuations.
 * @param signal checked before each continuation; when aborted, resolves with `cancelled: true`.
 * @throws Error for samples < 1, a negative horizon or alternatives count, or an unknown node.
 */
export async function forkPoints(x: BranchExplorer, req: ForkPointsRequest, interventions: readonly Intervention[] = [], onProgress?: (p: ForkProgress) => void, signal?: AbortSignal): Promise<ForkPointsResult> {
  const nodeId = req.node ?? 0;
  nodeOf(x.tree, nodeId);
  if (!Number.isInteger(req.samples) || req.samples < 1) throw new Error(`samples must be a positive integer (got ${req.samples})`);
  const nAlt = req.alternatives ?? 1;
  if (!Number.isInteger(nAlt) || nAlt < 0) throw new Error(`alternatives must be 0 or more (got ${nAlt})`);
  const T = x.tree.promptIds.length;
  const path = pathOf(x.tree, nodeId);
  const horizon = req.horizon ?? x.end;
  if (!Number.isInteger(horizon) || horizon < 0) throw new Error(`horizon must be 0 or more tokens (got ${horizon})`);
  const temperature = req.temperature ?? 1, seed = req.seed ?? 0, maxGap = req.maxGap ?? 1;
  const points: ForkPoint[] = [];
  for (let pos = T; pos < path.ids.length; pos++) {
    const top = path.top[pos]!;
    const probs = top.logProbs.map(Math.exp);
    points.push({ position: pos, step: pos - T, id: path.ids[pos], token: path.tokens[pos], gap: (probs[0] ?? 0) - (probs[1] ?? 0), forced: [], score: NaN });
  }
  const todo = points.filter((p) => p.gap <= maxGap);
  const forcedOf = (p: ForkPoint) => {
    const top = path.top[p.position]!;
    const others = top.ids.map((id, i) => ({ id, i })).filter((o) => o.id !== p.id).slice(0, nAlt);
    return [{ id: p.id, token: p.token, prob: Math.exp(path.logProbs[p.position]) }, ...others.map((o) => ({ id: o.id, token: top.tokens[o.i], prob: Math.exp(top.logProbs[o.i]) }))];
  };
  const total = todo.reduce((s, p) => s + forcedOf(p).length * req.samples, 0);
  // token positions one continuation from `pos` runs through the model (as lib/fork_estimate.ts forkWork counts them)
  const cost = (pos: number) => Math.max(1, Math.min(x.end, pos + 1 + horizon) - pos);
  const tokensTotal = todo.reduce((s, p) => s + forcedOf(p).length * req.samples * cost(p.position), 0);
  let done = 0, scored = 0, tokens = 0, cancelled = false;
  outer: for (const p of todo) {
    const forced: ForkOutcome[] = [];
    const candidates = forcedOf(p);
    for (const [fi, f] of candidates.entries()) {
      const outcomes: number[] = [];
      for (let j = 0; j < req.samples; j++) {
        await new Promise((r) => setTimeout(r, 0)); // lets a cancel message in (worker)
        if (signal?.aborted) { cancelled = true; break outer; }
        const draw: DrawSettings = { temperature, topK: req.topK ?? 0, seed: continuationSeed(seed, p.position, fi, j), steered: req.steered ?? false };
        const r = await x.resample(nodeId, p.position, f.id, draw, horizon, interventions);
        outcomes.push(r.outcome);
        tokens += cost(p.position);
        if (fi === candidates.length - 1 && j === req.samples - 1) scored++;
        onProgress?.({ done: ++done, total, scored, positions: todo.length, tokens, tokensTotal });
      }
      forced.push({ id: f.id, token: f.token, prob: f.prob, outcomes, mean: outcomes.reduce((s, v) => s + v, 0) / outcomes.length, fracGood: outcomes.filter((v) => v > 0).length / outcomes.length });
    }
    p.forced = forced;
    p.score = forced.length > 1 ? Math.max(...forced.slice(1).map((f) => Math.abs(f.mean - forced[0].mean))) : NaN;
  }
  return { node: nodeId, samples: req.samples, horizon, temperature, seed, maxGap, points, cancelled };
}
