/**
 * What "Find fork points" will cost before it runs, and how far it is while it runs. The
 * measurement (workers/engine/studies/branching/forks.ts) forces the chosen token and `alternatives` others
 * at each scored position and samples `samples` continuations after each, every one run from that
 * position to the end of the path; the seconds come from this load's own measured decode speed
 * (streamedRate, then the last run's own pace).
 */
import type { ForkProgress, TopTokens } from '../../workers/protocol';
import type { JobSteps } from '../store/ui';

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

/**
 * This load's rate from a trunk's or fork's streamed tokens, timed as a fork-points continuation
 * decodes: the worker's seconds of each token's forward pass and draw (BranchTokenEvent.seconds;
 * 0 for a token whose logits came with the prompt pass), the first forward left out (warm-up).
 * The wall clock between streamed tokens also counts the token strings, top alternatives and
 * streaming a tree's node adds, and read ~2× the scan's pace (a trial's estimate was 2× too long).
 * @returns null with fewer than two forwards timed.
 */
export function streamedRate(identity: string, stepSeconds: readonly number[]): DecodeRate | null {
  const timed = stepSeconds.filter((s) => s > 0).slice(1);
  return decodeRate(identity, timed.reduce((a, s) => a + s, 0), timed.length);
}

/** Seconds the work should take at `rate` when it was measured on the load `identity` (null: no measurement of this load). */
export function forkSeconds(work: ForkWork, rate: DecodeRate | null, identity: string | null): number | null {
  return rate && identity && rate.identity === identity ? work.tokens * rate.secondsPerToken : null;
}

/** The scored positions in words, one unit for the estimate, the progress and a cancelled run: "22 near-tie tokens", "1 token". */
export function tokensWord(n: number, nearTies: boolean): string {
  return `${nearTies ? 'near-tie ' : ''}token${n === 1 ? '' : 's'}`;
}

/**
 * A fork-points run's progress as the progress line counts it: continuations as the steps, token
 * positions as the work of equal cost (the bar and the time left: continuations from early
 * positions run longer), and the positions scored in the estimate's unit.
 */
export function forkSteps(p: ForkProgress, nearTies: boolean): JobSteps {
  return { done: p.done, total: p.total, work: { done: p.tokens, total: p.tokensTotal }, note: `${p.scored} of ${p.positions} ${tokensWord(p.positions, nearTies)} scored` };
}
