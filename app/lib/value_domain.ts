/**
 * The value axis of a chart: the data's extent padded by 8 % on each side, and never a zero-width
 * domain. One value (a batch of one row: its mean, interval and dot coincide), or values that agree
 * to within 1e-6 of their size, get ±10 % of that value (±0.5 around 0), so that D3's nice() and
 * ticks() step in readable units; a domain padded by a mere 1e-9 ticked in steps of 2e-10 and
 * labelled them with every float digit ("4.8608770002"), over the axis title.
 * @param values the values the axis shows (non-finite ones are skipped).
 * @returns [lo, hi] with lo < hi; [−1, 1] when no value is finite.
 */
export function valueDomain(values: readonly number[]): [number, number] {
  const ys = values.filter(Number.isFinite);
  if (!ys.length) return [-1, 1];
  const lo = Math.min(...ys), hi = Math.max(...ys);
  const size = Math.max(Math.abs(lo), Math.abs(hi));
  if (hi - lo <= 1e-6 * Math.max(1, size)) {
    const pad = size * 0.1 || 0.5;
    return [lo - pad, hi + pad];
  }
  const pad = (hi - lo) * 0.08;
  return [lo - pad, hi + pad];
}
