/**
 * log p(set) = logsumexp of member log-probs; margin Δ = log p(A) − log p(B)
 * (DESIGN.md §3 "Margin").
 */
export function logSumExp(xs: ArrayLike<number>): number {
  let m = -Infinity;
  for (let i = 0; i < xs.length; i++) if (xs[i] > m) m = xs[i];
  if (m === -Infinity) return -Infinity;
  let s = 0;
  for (let i = 0; i < xs.length; i++) s += Math.exp(xs[i] - m);
  return m + Math.log(s);
}

/**
 * Margins of two token sets for every row of gathered log-probs.
 * @param gathered [rows, cols] log-probs of the columns `cols`.
 * @param cols the gathered vocabulary ids (good ∪ bad).
 * @returns Δ [rows] = lse(logp[good]) − lse(logp[bad]).
 */
export function setMargins(gathered: Float32Array, cols: number[], good: number[], bad: number[]): Float32Array {
  const c = cols.length;
  const rows = gathered.length / c;
  const gi = good.map((id) => cols.indexOf(id));
  const bi = bad.map((id) => cols.indexOf(id));
  const out = new Float32Array(rows);
  for (let r = 0; r < rows; r++) {
    out[r] = logSumExp(gi.map((j) => gathered[r * c + j])) - logSumExp(bi.map((j) => gathered[r * c + j]));
  }
  return out;
}

/** Margin of two token sets in one row of full-vocabulary log-probs. */
export function rowMargin(logProbs: Float32Array, good: number[], bad: number[]): number {
  return logSumExp(good.map((i) => logProbs[i])) - logSumExp(bad.map((i) => logProbs[i]));
}

/** Δ of two first-token sets from one row of logits (the normaliser cancels: lse_A ℓ − lse_B ℓ). */
export function logitMargin(row: ArrayLike<number>, good: readonly number[], bad: readonly number[]): number {
  return logSumExp(good.map((i) => row[i])) - logSumExp(bad.map((i) => row[i]));
}
