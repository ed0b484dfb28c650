/** Lists typed into a field ("1, 2, 5", "0-4", "-8,-4,0,4,8") → numbers, with messages that say what is wrong. */

/**
 * Integers from "all", "" (both: 0..count−1), "3", "1,2,5" or ranges "0-4" (inclusive), each in [0, count).
 * @param what how the message names the list ("layers").
 * @throws Error naming the item that is not an integer or is out of range.
 */
export function parseIndexList(text: string, count: number, what: string): number[] {
  const t = text.trim();
  if (t === '' || t === 'all') return Array.from({ length: count }, (_, i) => i);
  const out: number[] = [];
  for (const item of t.split(/[\s,]+/).filter(Boolean)) {
    const m = /^(\d+)(?:[-–](\d+))?$/.exec(item);
    if (!m) throw new Error(`${what}: "${item}" is not an index or a range like 0-4`);
    const a = Number(m[1]), b = m[2] === undefined ? a : Number(m[2]);
    if (b < a) throw new Error(`${what}: the range "${item}" runs backwards`);
    for (let i = a; i <= b; i++) {
      if (i >= count) throw new Error(`${what}: ${i} does not exist (0..${count - 1})`);
      if (!out.includes(i)) out.push(i);
    }
  }
  if (!out.length) throw new Error(`${what}: the list is empty`);
  return out;
}

/**
 * Finite numbers separated by commas or spaces ("−8, −4, 0, 4, 8"; a typographic minus is accepted).
 * @throws Error naming the item that is not a number, or for an empty list.
 */
export function parseNumberList(text: string, what: string): number[] {
  const items = text.replace(/−/g, '-').split(/[\s,;]+/).filter(Boolean);
  if (!items.length) throw new Error(`${what}: the list is empty`);
  return items.map((item) => {
    const v = Number(item);
    if (!Number.isFinite(v)) throw new Error(`${what}: "${item}" is not a number`);
    return v;
  });
}

/**
 * Non-negative integers separated by commas or spaces ("3, 5, 7") for explicit positions.
 * @throws Error naming the item that is not a non-negative integer.
 */
export function parsePositionList(text: string): number[] {
  return text.split(/[\s,]+/).filter(Boolean).map((item) => {
    if (!/^\d+$/.test(item)) throw new Error(`"${item}" is not a position (write non-negative integers)`);
    return Number(item);
  });
}
