/**
 * At most about `most` ticks from a sorted list of axis values: every s-th value (s = ⌈n / most⌉)
 * and the last one, leaving out a stepped value closer than s / 2 places to the last (a trial saw
 * the faithfulness curve's ticks 19 and 20 drawn over each other). Display only.
 * @param values the axis values, ascending (e.g. the k of a deletion curve).
 * @param most the number of ticks wanted, ≥ 1.
 * @returns the values to tick, ascending; all of them when there are `most` or fewer.
 */
export function sparseTicks(values: readonly number[], most = 8): number[] {
  const n = values.length;
  if (n <= most) return [...values];
  const s = Math.ceil(n / most);
  return values.filter((_, i) => i === n - 1 || (i % s === 0 && n - 1 - i >= s / 2));
}
