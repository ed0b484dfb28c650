/** Summaries of one next-token distribution given as log-probabilities [d_vocab]. */

/** Shannon entropy H = −Σ p_i log p_i in nats (terms with p_i = 0 contribute 0), accumulated in float64. */
export function entropy(logProbs: ArrayLike<number>): number {
  let h = 0;
  for (let i = 0; i < logProbs.length; i++) {
    const p = Math.exp(logProbs[i]);
    if (p > 0) h -= p * logProbs[i];
  }
  return h;
}

/**
 * The k most likely ids in decreasing log-prob (ties: lower id first), by one pass with a sorted
 * buffer of k — O(V·k), no sort of the whole vocabulary.
 * @returns ids and their log-probs, min(k, V) of each.
 */
export function topIds(logProbs: ArrayLike<number>, k: number): { ids: number[]; logProbs: number[] } {
  const ids: number[] = [], lps: number[] = [];
  const n = Math.min(k, logProbs.length);
  for (let i = 0; i < logProbs.length; i++) {
    const v = logProbs[i];
    if (ids.length === n && !(v > lps[n - 1])) continue;
    let j = ids.length === n ? n - 1 : ids.length;
    while (j > 0 && v > lps[j - 1]) j--;
    ids.splice(j, 0, i); lps.splice(j, 0, v);
    if (ids.length > n) { ids.pop(); lps.pop(); }
  }
  return { ids, logProbs: lps };
}
