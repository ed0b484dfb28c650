/**
 * What "Find fork points" will cost before it runs, and how long is left while it runs. The
 * measurement (workers/engine/branching/forks.ts) forces the chosen token and `alternatives` others
 * at each scored position and samples `samples` continuations after each, every one run from that
 * position to the end of the path; the seconds come from this load's own measured decode speed.
 */
import type { TopTokens } from '../../workers/protocol';

/** The work of one fork-points run. */
export interface ForkWork {
  /** Generated positions scored (those with p(top-1) − p(top-2) ≤ maxGap). */
  positions: number;
  /** Continuations sampled: Σ over scored positions of (1 + alternatives available) × samples. */
  continuations: number;
  /** Token positions those continuations push through the model: each runs from its position to the end. */
  tokens: number;
}

/**
 * The work forks.ts will do on a path. Gap and forced tokens as it computes them.
 * @param top the path's top alternatives per position (TreePath.top; null for position 0)
 * @param nPrompt prompt length T (positions T … top.length − 1 are the generated ones)
 * @param end the tree's last position + 1 (n_prompt + max new tokens): continuations run to it
 * @param maxGap score only positions whose gap is at most this (1: every position)
 */
export function forkWork(top: readonly (TopTokens | null)[], nPrompt: number, end: number, samples: number, maxGap: number, alternatives = 1): ForkWork {
  let positions = 0, continuations = 0, tokens = 0;
  for (let pos = nPrompt; pos < top.length; pos++) {
    const t = top[pos];
    const p = (t?.logProbs ?? []).map(Math.exp);
    if ((p[0] ?? 0) - (p[1] ?? 0) > maxGap) continue;
    const forced = 1 + Math.min(alternatives, Math.max(0, (t?.ids.length ?? 0) - 1));
    positions++;
    continuations += forced * samples;
    tokens += forced * samples * Math.max(1, end - pos);
  }
  return { positions, continuations, tokens };
}

/** Seconds per token position of this load's decode (measured on a trunk or a fork), for estimates. */
export interface DecodeRate {
  /** lib/model_identity.ts identity of the load it was measured on. */
  identity: string;
  secondsPerToken: number;
}

/** The measured rate of a run: seconds over the positions it pushed through the model (null when none). */
export function decodeRate(identity: string, seconds: number, positions: number): DecodeRate | null {
  return identity && positions > 0 && seconds > 0 ? { identity, secondsPerToken: seconds / positions } : null;
}

/** Seconds the work should take at `rate` when it was measured on the load `identity` (null: no measurement of this load). */
export function forkSeconds(work: ForkWork, rate: DecodeRate | null, identity: string | null): number | null {
  return rate && identity && rate.identity === identity ? work.tokens * rate.secondsPerToken : null;
}

/**
 * Seconds left of a job that has done `done` of `total` steps in `elapsed` seconds, at its own pace
 * so far; null before the first step (no pace yet) or once done.
 */
export function etaSeconds(elapsed: number, done: number, total: number): number | null {
  if (!(done > 0) || done >= total || !(elapsed >= 0)) return null;
  return (elapsed / done) * (total - done);
}

/** "about 40 s", "about 3 min"; "under a second". */
export function duration(seconds: number): string {
  if (seconds < 1) return 'under a second';
  if (seconds < 90) return `about ${Math.round(seconds)} s`;
  return `about ${Math.round(seconds / 60)} min`;
}
