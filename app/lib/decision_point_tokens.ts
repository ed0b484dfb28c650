import { sharedPrefixLength } from '../../workers/shared';
import type { FutureChips } from '../store/results';

/** The title every prefix token carries, in the token strip and the margin heatmap's readout. */
export const PREFIX_TITLE = 'teacher-forced shared prefix of the futures';

/** A run's tokens: ids and display strings [T], of which the last `prefix` are the futures' shared prefix. */
export interface RunTokens {
  ids: number[];
  tokens: string[];
  /** How many of the last positions are the teacher-forced shared prefix (0: none). */
  prefix: number;
}

/**
 * The positions a run at the decision point has (workers/engine/decision_point.ts): the prompt's
 * tokens, then the futures' shared prefix, teacher-forced. `shown` is what the strip holds — a
 * tokenized prompt (prefix 0) or an analysis's tokens (its prefix included); when both futures'
 * chips are resolved for the prompt and texts as they are now (`keys`, lib/futures.ts futureKey),
 * their shared prefix (sharedPrefixLength, as the engine computes it) replaces the one `shown`
 * carries, so the last position is the decision point before Analyse runs too (the strip shows the
 * bare prompt until then). Stale or failed
 * chips leave `shown` as it is.
 */
export function decisionPointTokens(
  shown: { ids: number[]; tokens: string[]; prefix?: number },
  chips: { good: FutureChips | null; bad: FutureChips | null },
  keys: { good: string; bad: string },
): RunTokens {
  const { good, bad } = chips;
  if (!good || !bad || !('resolved' in good) || !('resolved' in bad) || good.key !== keys.good || bad.key !== keys.bad) {
    return { ids: shown.ids, tokens: shown.tokens, prefix: shown.prefix ?? 0 };
  }
  const n = shown.ids.length - (shown.prefix ?? 0);
  const g = good.resolved, k = sharedPrefixLength(g.sequences, bad.resolved.sequences);
  return {
    ids: [...shown.ids.slice(0, n), ...g.sequences[0].slice(0, k)],
    tokens: [...shown.tokens.slice(0, n), ...g.tokens[0].slice(0, k)],
    prefix: k,
  };
}

/** True when position `i` of a run of T positions lies in its last `prefix` positions (the shared prefix). */
export function inPrefix(i: number, T: number, prefix: number): boolean {
  return prefix > 0 && i >= T - prefix && i < T;
}

/** The shared prefix of run tokens `t` as decisionPointText reads it (its ids), or null when it has none. */
export function prefixOf(t: RunTokens | null): { ids: number[] } | null {
  return t && t.prefix > 0 ? { ids: t.ids.slice(t.ids.length - t.prefix) } : null;
}
