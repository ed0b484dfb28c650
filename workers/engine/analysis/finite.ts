/**
 * Index of the first NaN or ±Infinity in `a`, or −1 when every value is finite. A plain loop (no
 * callback per element: the loaders check every weight of a checkpoint with it).
 */
export function firstNonFinite(a: ArrayLike<number>): number {
  for (let i = 0; i < a.length; i++) if (!Number.isFinite(a[i])) return i;
  return -1;
}
