/**
 * Pure maths of model comparison (DESIGN.md §3 "Model comparison"; model diffing as in
 * crosscoders, arXiv 2504.02922): the relative Frobenius difference of two weight tensors and the
 * divergence of two residual streams row by row. Everything is accumulated in float64 from the
 * float32 values, so equal inputs give exactly 0 (each difference is exactly 0).
 */

/**
 * ‖W_B − W_A‖_F / ‖W_A‖_F over one module made of several tensors (e.g. a weight and its bias),
 * the parts taken together as one vector; accumulated in float64.
 * @param a the parts of model A's module (float32 values, any shapes).
 * @param b model B's parts, in the same order and of the same lengths.
 * @returns a dimensionless ratio ≥ 0: exactly 0 when every value is equal; Infinity when ‖W_A‖ = 0
 *   and W_B differs (0 when both are all zero).
 * @throws Error when the parts' counts or lengths differ (both named).
 */
export function relativeDifference(a: readonly ArrayLike<number>[], b: readonly ArrayLike<number>[]): number {
  if (a.length !== b.length) throw new Error(`relative difference: ${a.length} tensors vs ${b.length}`);
  let diff = 0, norm = 0;
  for (let p = 0; p < a.length; p++) {
    const x = a[p], y = b[p];
    if (x.length !== y.length) throw new Error(`relative difference: tensor ${p} has ${x.length} values vs ${y.length}`);
    for (let i = 0; i < x.length; i++) {
      const d = y[i] - x[i];
      diff += d * d;
      norm += x[i] * x[i];
    }
  }
  if (diff === 0) return 0;
  return Math.sqrt(diff) / Math.sqrt(norm);
}

/** Row-by-row divergence of two stacks of vectors. */
export interface RowDivergence {
  /** ‖h_B − h_A‖ / ‖h_A‖ per row [rows] (0 exactly for equal rows; Infinity when h_A = 0 ≠ h_B). */
  relNorm: Float32Array;
  /** cos(h_A, h_B) per row [rows] (1 exactly for equal nonzero rows; NaN when either is 0). */
  cosine: Float32Array;
}

/**
 * Per row r of two [rows, d] stacks (e.g. residual streams [(n_layers+1)·n_tokens, d_model] of
 * two models on one prompt): ‖h_B − h_A‖/‖h_A‖ and cos(h_A, h_B), accumulated in float64.
 * @throws Error when the stacks' lengths differ or are not rows·d.
 */
export function rowDivergence(a: ArrayLike<number>, b: ArrayLike<number>, rows: number, d: number): RowDivergence {
  if (a.length !== rows * d || b.length !== rows * d) throw new Error(`row divergence: ${a.length} and ${b.length} values, expected ${rows}·${d}`);
  const relNorm = new Float32Array(rows), cosine = new Float32Array(rows);
  for (let r = 0; r < rows; r++) {
    let dd = 0, aa = 0, bb = 0, ab = 0, same = true;
    for (let i = r * d; i < (r + 1) * d; i++) {
      const x = a[i], y = b[i], e = y - x;
      if (e !== 0) same = false;
      dd += e * e; aa += x * x; bb += y * y; ab += x * y;
    }
    relNorm[r] = dd === 0 ? 0 : Math.sqrt(dd) / Math.sqrt(aa);
    cosine[r] = aa === 0 || bb === 0 ? NaN : same ? 1 : ab / Math.sqrt(aa * bb);
  }
  return { relNorm, cosine };
}

/** b − a elementwise [n] (float32). @throws Error for different lengths. */
export function difference(a: ArrayLike<number>, b: ArrayLike<number>): Float32Array {
  if (a.length !== b.length) throw new Error(`difference: ${a.length} vs ${b.length} values`);
  return Float32Array.from({ length: a.length }, (_, i) => b[i] - a[i]);
}
