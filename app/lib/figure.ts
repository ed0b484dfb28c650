/**
 * Print-quality figures: a view describes what it plots (title, caption, panels, colour scales) as a
 * FigureSpec, and buildFigureSvg lays it out as one standalone SVG — vector shapes, text as text,
 * heatmap cells as <rect>s carrying their values — sized to its content so nothing is clipped.
 * PNGs are this SVG rasterised at a chosen scale (export.ts figurePng), so both files show the same
 * figure. Always drawn on white (print), whatever the page's theme.
 */

/** A colour scale as the figure draws it: a bar from domain[0] to domain[1] with ticks and notes. */
export interface ColorScaleSpec {
  color: (v: number) => string;
  domain: [number, number];
  /** Says what the colour measures, with units ("Δ (nats)"). */
  title: string;
  /** What the low and high ends mean ("favours ·she" / "favours ·he"). */
  lowNote?: string;
  highNote?: string;
}

/** A layer × token (or any rows × columns) grid, drawn as one <rect> per cell. */
export interface HeatmapPanel {
  kind: 'heatmap';
  title?: string;
  /** Row-major [nRows, nCols]; non-finite values are drawn grey. */
  values: ArrayLike<number>;
  nRows: number;
  nCols: number;
  rowLabels: readonly string[];
  colLabels: readonly string[];
  rowTitle: string;
  colTitle: string;
  /** Row 0 at the bottom (layers growing upward). */
  rowsUpward?: boolean;
  scale: ColorScaleSpec;
  /** Text inside a cell, lines split at "\n", drawn where the cell holds it. */
  annotate?: (row: number, col: number) => string | null;
}

/** A chart already on screen as SVG (LineChart, BarChart): embedded as vector with its text styles inlined. */
export interface SvgPanel {
  kind: 'svg';
  title?: string;
  element: SVGSVGElement;
  /** The colour scale of a chart whose marks are coloured by a value (the branch tree): drawn under it. */
  scale?: ColorScaleSpec;
}

export type Panel = HeatmapPanel | SvgPanel;

/** Everything a figure file shows. */
export interface FigureSpec {
  title: string;
  /** Lines under the title: what is compared, the model, the prompt, the interventions. Wrapped to the figure's width. */
  caption: readonly string[];
  /** Stacked top to bottom. */
  panels: readonly Panel[];
}

/** A laid-out figure: the SVG document text and its size in CSS pixels. */
export interface BuiltFigure {
  svg: string;
  width: number;
  height: number;
}

/** Width in CSS pixels of `text` drawn in `font` (a CSS font shorthand). */
export type Measure = (text: string, font: string) => number;

const FAMILY = 'system-ui, -apple-system, "Segoe UI", Helvetica, Arial, sans-serif';
const F = { title: `600 17px ${FAMILY}`, caption: `13px ${FAMILY}`, panel: `600 14px ${FAMILY}`, label: `13px ${FAMILY}`, small: `11px ${FAMILY}` };
const INK = '#1f2328';
const MUTED = '#57606a';
const PAD = 16;
const MIN_WIDTH = 560;
const ANGLE = 45;
const MAX_LABEL = 18;

const esc = (s: string) => s.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;').replace(/"/g, '&quot;');
const num = (v: number) => String(+v.toFixed(2));
const fmt = (v: number) => (Number.isFinite(v) ? String(+v.toPrecision(6)) : String(v));
const tickText = (v: number) => v.toLocaleString('en', { maximumFractionDigits: 3 }).replace('-', '−');
const clip = (s: string) => (s.length > MAX_LABEL ? `${s.slice(0, MAX_LABEL - 1)}…` : s);

/** Text width measured on a 2D canvas (the browser's own font metrics). */
export function canvasMeasure(): Measure {
  const ctx = document.createElement('canvas').getContext('2d')!;
  return (text, font) => {
    ctx.font = font;
    return ctx.measureText(text).width;
  };
}

/** Splits text into lines no wider than `width` (at spaces; a longer word gets a line of its own). */
function wrap(text: string, width: number, font: string, measure: Measure): string[] {
  const out: string[] = [];
  let line = '';
  for (const word of text.split(' ')) {
    const next = line ? `${line} ${word}` : word;
    if (line && measure(next, font) > width) {
      out.push(line);
      line = word;
    } else line = next;
  }
  out.push(line);
  return out;
}

function text(x: number, y: number, s: string, font: string, attrs = ''): string {
  const [weight, size] = font.startsWith('600') ? ['600', font.split(' ')[1]] : ['normal', font.split(' ')[0]];
  return `<text x="${num(x)}" y="${num(y)}" font-size="${size}" font-weight="${weight}" ${attrs}>${esc(s)}</text>`;
}

/** Ticks at "nice" round values inside [lo, hi] (D3's algorithm, without the dependency in this pure module). */
function ticks(lo: number, hi: number, count = 5): number[] {
  if (!(hi > lo)) return [lo];
  const step0 = (hi - lo) / count;
  const mag = 10 ** Math.floor(Math.log10(step0));
  const step = [1, 2, 5, 10].map((m) => m * mag).find((s) => s >= step0) ?? 10 * mag;
  const out: number[] = [];
  for (let v = Math.ceil(lo / step) * step; v <= hi + step * 1e-9; v += step) out.push(Math.abs(v) < step * 1e-9 ? 0 : +v.toPrecision(12));
  return out;
}

/** Least space between a colour bar's two end notes on one line (CSS px). */
const NOTE_GAP = 16;

/** A colour bar with ticks, title and end notes; returns its markup and height. */
function colorBar(s: ColorScaleSpec, x: number, y: number, measure: Measure): { svg: string; height: number; width: number } {
  const W = 320, H = 14, steps = 64;
  const [lo, hi] = s.domain;
  const parts = [text(x, y + 13, s.title, F.label, `fill="${MUTED}"`)];
  const top = y + 20;
  for (let i = 0; i < steps; i++) {
    const v = lo + ((hi - lo) * (i + 0.5)) / steps;
    parts.push(`<rect x="${num(x + (i * W) / steps)}" y="${num(top)}" width="${num(W / steps + 0.4)}" height="${H}" fill="${s.color(v)}"/>`);
  }
  parts.push(`<rect x="${num(x)}" y="${num(top)}" width="${W}" height="${H}" fill="none" stroke="#8c959f"/>`);
  for (const t of ticks(lo, hi)) {
    const tx = x + ((t - lo) / (hi - lo || 1)) * W;
    parts.push(`<line x1="${num(tx)}" x2="${num(tx)}" y1="${num(top + H)}" y2="${num(top + H + 5)}" stroke="${MUTED}"/>`);
    parts.push(text(tx, top + H + 17, tickText(t), F.small, `text-anchor="middle" fill="${INK}" class="tick"`));
  }
  let height = 20 + H + 22;
  // the end notes side by side when they fit with NOTE_GAP between them, else the high one on a line of its own (long futures ran together)
  const lowW = measure(s.lowNote ?? '', F.small), highW = measure(s.highNote ?? '', F.small);
  const span = Math.max(W, lowW, highW);
  if (s.lowNote || s.highNote) {
    const oneLine = lowW + NOTE_GAP + highW <= span;
    parts.push(text(x, top + H + 34, s.lowNote ?? '', F.small, `fill="${MUTED}" class="end-note"`));
    parts.push(text(x + span, top + H + (oneLine ? 34 : 50), s.highNote ?? '', F.small, `fill="${MUTED}" text-anchor="end" class="end-note"`));
    height += oneLine ? 16 : 32;
  }
  const width = Math.max(span, measure(s.title, F.label)) + 8;
  return { svg: `<g class="color-scale" data-domain="${fmt(lo)} ${fmt(hi)}">${parts.join('')}</g>`, height, width };
}

/** A heatmap panel at (x, y): cells as rects with data-row/-col/-value, labels, axis titles, colour bar. */
function heatmap(p: HeatmapPanel, x: number, y: number, measure: Measure): { svg: string; width: number; height: number } {
  const cw = Math.max(10, Math.min(32, Math.floor(900 / Math.max(1, p.nCols))));
  const ch = Math.max(14, Math.min(28, cw));
  const rowW = Math.max(0, ...p.rowLabels.map((s) => measure(clip(s), F.label)));
  const colW = Math.max(0, ...p.colLabels.map((s) => measure(clip(s), F.label)));
  const gx = x + 22 + rowW + 8;
  const gy = y + 16;
  const sin = Math.SQRT1_2;
  const parts: string[] = [];
  for (let r = 0; r < p.nRows; r++) {
    const ry = gy + (p.rowsUpward ? p.nRows - 1 - r : r) * ch;
    parts.push(text(gx - 6, ry + ch / 2 + 4, clip(p.rowLabels[r] ?? ''), F.label, `text-anchor="end" fill="${INK}"`));
    for (let c = 0; c < p.nCols; c++) {
      const v = p.values[r * p.nCols + c];
      const fill = Number.isFinite(v) ? p.scale.color(v) : '#d0d7de';
      parts.push(`<rect class="cell" x="${num(gx + c * cw)}" y="${num(ry)}" width="${cw - 1}" height="${ch - 1}" fill="${fill}" data-row="${r}" data-col="${c}" data-value="${fmt(v)}"><title>${esc(`${p.rowLabels[r] ?? r} · ${p.colLabels[c] ?? c}: ${fmt(v)}`)}</title></rect>`);
      const lines = p.annotate?.(r, c)?.split('\n') ?? [];
      if (lines.length && ch >= 13 * lines.length + 2 && lines.every((t) => measure(t, F.small) <= cw - 4)) {
        lines.forEach((t, i) => parts.push(text(gx + c * cw + cw / 2, ry + ch / 2 + 4 + (i - (lines.length - 1) / 2) * 13, t, F.small, `text-anchor="middle" fill="${INK}"`)));
      }
    }
  }
  const every = Math.max(1, Math.ceil(14 / cw));
  const bottom = gy + p.nRows * ch;
  for (let c = 0; c < p.nCols; c += every) {
    const cx = gx + c * cw + cw / 2;
    parts.push(text(cx, gy - 4, String(c), F.small, `text-anchor="middle" fill="${MUTED}"`));
    parts.push(`<text transform="translate(${num(cx)},${num(bottom + 12)}) rotate(-${ANGLE})" text-anchor="end" dominant-baseline="middle" font-size="13px" fill="${INK}">${esc(clip(p.colLabels[c] ?? ''))}</text>`);
  }
  const labelsH = colW * sin + 16;
  parts.push(text(gx + (p.nCols * cw) / 2, bottom + labelsH + 16, p.colTitle, F.label, `text-anchor="middle" fill="${MUTED}"`));
  parts.push(`<text transform="translate(${num(x + 12)},${num(gy + (p.nRows * ch) / 2)}) rotate(-90)" text-anchor="middle" font-size="13px" fill="${MUTED}">${esc(p.rowTitle)}</text>`);
  const barY = bottom + labelsH + 28;
  const bar = colorBar(p.scale, gx, barY, measure);
  parts.push(bar.svg);
  // The first column's label reaches left of the grid by up to colW·cos 45°.
  const width = Math.max(gx - x + p.nCols * cw + 12, gx - x + bar.width, gx - x - colW * sin + 12);
  return { svg: `<g class="heatmap" data-rows="${p.nRows}" data-cols="${p.nCols}">${parts.join('')}</g>`, width, height: barY - y + bar.height };
}

/** The chart's own size, grown to its drawn extent (a legend past the right edge is kept, not clipped). */
function svgExtent(el: SVGSVGElement): { x: number; y: number; width: number; height: number } {
  const w = Number(el.getAttribute('width')) || el.getBoundingClientRect().width;
  const h = Number(el.getAttribute('height')) || el.getBoundingClientRect().height;
  let b = { x: 0, y: 0, width: w, height: h };
  try {
    const bb = el.getBBox();
    const x0 = Math.min(0, bb.x), y0 = Math.min(0, bb.y);
    b = { x: x0, y: y0, width: Math.max(w, bb.x + bb.width) - x0, height: Math.max(h, bb.y + bb.height) - y0 };
  } catch { /* not rendered: keep the declared size */ }
  return b;
}

/** A copy of an on-screen SVG chart with the computed text styles written onto its <text> elements. */
function inlineChart(el: SVGSVGElement, x: number, y: number): { svg: string; width: number; height: number } {
  const clone = el.cloneNode(true) as SVGSVGElement;
  const from = el.querySelectorAll('text');
  clone.querySelectorAll('text').forEach((t, i) => {
    const cs = getComputedStyle(from[i]);
    t.setAttribute('font-size', cs.fontSize);
    t.setAttribute('font-weight', cs.fontWeight);
    t.setAttribute('fill', cs.fill && cs.fill !== 'none' ? cs.fill : INK);
  });
  const ext = svgExtent(el);
  clone.removeAttribute('style');
  clone.removeAttribute('class');
  clone.setAttribute('x', num(x));
  clone.setAttribute('y', num(y));
  clone.setAttribute('width', num(ext.width));
  clone.setAttribute('height', num(ext.height));
  clone.setAttribute('viewBox', `${num(ext.x)} ${num(ext.y)} ${num(ext.width)} ${num(ext.height)}`);
  clone.setAttribute('overflow', 'visible');
  return { svg: new XMLSerializer().serializeToString(clone).replace(/ xmlns="http:\/\/www\.w3\.org\/2000\/svg"/, ''), width: ext.width, height: ext.height };
}

/** An on-screen chart panel at (x, y), with its colour bar under it when it has a scale. */
function svgPanel(p: SvgPanel, x: number, y: number, measure: Measure): { svg: string; width: number; height: number } {
  const chart = inlineChart(p.element, x, y);
  if (!p.scale) return chart;
  const bar = colorBar(p.scale, x, y + chart.height + 8, measure);
  return { svg: chart.svg + bar.svg, width: Math.max(chart.width, bar.width), height: chart.height + 8 + bar.height };
}

/**
 * Lays out a figure as one standalone SVG document: title, wrapped caption, then each panel (its
 * title, the plot, its colour scale), on white, sized to fit everything drawn.
 * @param measure text width in CSS pixels (default: a canvas in this document).
 * @returns the SVG text and its width and height in CSS pixels (a PNG at scale s is s·width × s·height).
 */
export function buildFigureSvg(spec: FigureSpec, measure: Measure = canvasMeasure()): BuiltFigure {
  const x = PAD;
  // Lay out panels first (at y = 0) to learn the width the caption wraps to.
  const drafts = spec.panels.map((p) => (p.kind === 'heatmap' ? heatmap(p, x, 0, measure) : svgPanel(p, x, 0, measure)));
  const inner = Math.max(MIN_WIDTH, ...drafts.map((d) => d.width));
  const parts: string[] = [];
  let y = PAD;
  for (const line of wrap(spec.title, inner, F.title, measure)) {
    parts.push(text(x, y + 15, line, F.title, `fill="${INK}" class="figure-title"`));
    y += 22;
  }
  for (const c of spec.caption) {
    for (const line of wrap(c, inner, F.caption, measure)) {
      parts.push(text(x, y + 13, line, F.caption, `fill="${MUTED}" class="caption"`));
      y += 18;
    }
  }
  y += 10;
  spec.panels.forEach((p) => {
    if (p.title) {
      parts.push(text(x, y + 14, p.title, F.panel, `fill="${INK}" class="panel-title"`));
      y += 24;
    }
    const d = p.kind === 'heatmap' ? heatmap(p, x, y, measure) : svgPanel(p, x, y, measure);
    parts.push(d.svg);
    y += d.height + 14;
  });
  const width = Math.ceil(inner + 2 * PAD);
  const height = Math.ceil(y + PAD - 14);
  const svg = `<?xml version="1.0" encoding="UTF-8"?>\n<svg xmlns="http://www.w3.org/2000/svg" width="${width}" height="${height}" viewBox="0 0 ${width} ${height}" font-family='${FAMILY}'>`
    + `<rect width="100%" height="100%" fill="#ffffff"/>${parts.join('')}</svg>\n`;
  return { svg, width, height };
}
