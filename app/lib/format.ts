/** Display helpers shared by the views (no model maths here). */

/** A number with fixed decimals and a real minus sign, "—" for NaN. */
export function fixed(v: number, digits = 4): string {
  if (!Number.isFinite(v)) return Number.isNaN(v) ? '—' : v > 0 ? '∞' : '−∞';
  const s = v.toFixed(digits);
  return s.startsWith('-') ? `−${s.slice(1)}` : s;
}

/** The same, signed: "+1.2345" / "−1.2345". */
export function signed(v: number, digits = 4): string {
  return v > 0 ? `+${fixed(v, digits)}` : fixed(v, digits);
}

/** A token made visible: spaces as "·", newlines as "↵", tabs as "⇥", the empty string as "∅". */
export function visibleToken(t: string): string {
  if (t.length === 0) return '∅';
  return t.replace(/ /g, '·').replace(/\n/g, '↵').replace(/\t/g, '⇥');
}

/** Bytes as B / KiB / MiB / GiB. */
export function bytes(n: number): string {
  const units = ['B', 'KiB', 'MiB', 'GiB'];
  let i = 0;
  while (n >= 1024 && i < units.length - 1) { n /= 1024; i++; }
  return `${n.toFixed(i === 0 ? 0 : 1)} ${units[i]}`;
}

/** A parameter count as "70M" / "1.24B" (a model card's way of writing it). */
export function paramCount(n: number): string {
  return n >= 1e9 ? `${(n / 1e9).toPrecision(3)}B` : `${Math.round(n / 1e6)}M`;
}

/** A library vector as a menu names it: name, hook it was computed at, length. */
export function vectorLabel(v: { name: string; hook: string | null; dModel: number }): string {
  return `${v.name} · ${v.hook ?? 'hook not recorded'} · d ${v.dModel}`;
}

/**
 * A sequence position as every view names it: absolute (prompt tokens first, from 0) with, after
 * the prompt, which new token it is — "position 14 (new token 3)", "position 5 (prompt)".
 */
export function positionLabel(position: number, nPrompt: number): string {
  return `position ${position} (${position >= nPrompt ? `new token ${position - nPrompt}` : 'prompt'})`;
}
