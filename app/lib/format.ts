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

/**
 * A token made visible: spaces as "·", newlines as "↵", tabs as "⇥", the empty string as "∅". Bare,
 * where a box or cell delimits the token (token strip, heatmap axes, chips, table cells).
 */
export function visibleToken(t: string): string {
  if (t.length === 0) return '∅';
  return t.replace(/ /g, '·').replace(/\n/g, '↵').replace(/\t/g, '⇥');
}

/**
 * A token in running text, readouts and lists: visible as in the token strip and quoted, so that a
 * "," or "." token does not read as punctuation of the sentence (trials read the report's
 * "positions 12 ,, 13 ·Tom" as a list).
 */
export function quotedToken(t: string): string {
  return `“${visibleToken(t)}”`;
}

/** Position and token as a list or readout names them: 12 “,”. */
export function positionToken(position: number, t: string): string {
  return `${position} ${quotedToken(t)}`;
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
