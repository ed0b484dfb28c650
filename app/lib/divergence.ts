/** Where two generations part. */

/**
 * The first step at which two token sequences differ (one ending early counts as differing at its
 * end), or null when they are identical.
 */
export function firstDivergence(a: readonly number[], b: readonly number[]): number | null {
  const n = Math.min(a.length, b.length);
  for (let i = 0; i < n; i++) if (a[i] !== b[i]) return i;
  return a.length === b.length ? null : n;
}
