/**
 * Ranks with ties given their average rank (1-based), NaN entries skipped by the caller.
 */
export function averageRanks(x: ArrayLike<number>): Float64Array {
  const idx = Array.from({ length: x.length }, (_, i) => i).sort((a, b) => x[a] - x[b]);
  const r = new Float64Array(x.length);
  for (let i = 0; i < idx.length;) {
    let j = i;
    while (j + 1 < idx.length && x[idx[j + 1]] === x[idx[i]]) j++;
    for (let k = i; k <= j; k++) r[idx[k]] = (i + j) / 2 + 1;
    i = j + 1;
  }
  return r;
}

/** Pearson correlation of two equal-length arrays (NaN when either is constant). */
export function pearson(a: ArrayLike<number>, b: ArrayLike<number>): number {
  const n = a.length;
  let ma = 0, mb = 0;
  for (let i = 0; i < n; i++) { ma += a[i]; mb += b[i]; }
  ma /= n; mb /= n;
  let sab = 0, saa = 0, sbb = 0;
  for (let i = 0; i < n; i++) { const da = a[i] - ma, db = b[i] - mb; sab += da * db; saa += da * da; sbb += db * db; }
  return saa > 0 && sbb > 0 ? sab / Math.sqrt(saa * sbb) : NaN;
}

/** Spearman's rank correlation: Pearson of the average ranks, over the pairs where both are finite. */
export function spearman(a: ArrayLike<number>, b: ArrayLike<number>): number {
  const xa: number[] = [], xb: number[] = [];
  for (let i = 0; i < a.length; i++) if (Number.isFinite(a[i]) && Number.isFinite(b[i])) { xa.push(a[i]); xb.push(b[i]); }
  return pearson(averageRanks(xa), averageRanks(xb));
}
