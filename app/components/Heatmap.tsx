import { useEffect, useLayoutEffect, useMemo, useRef, useState, type RefObject } from 'react';
import { lab } from 'd3';
import { inPrefix } from '../lib/decision_point_tokens';

/** A cell of a heatmap, in data coordinates (row 0 = first row of `values`). */
export interface Cell {
  row: number;
  col: number;
}

export interface HeatmapProps {
  /** Row-major [nRows, nCols]. */
  values: ArrayLike<number>;
  nRows: number;
  nCols: number;
  color: (v: number) => string;
  rowLabels: readonly string[];
  colLabels: readonly string[];
  rowTitle: string;
  colTitle: string;
  /** Draw row 0 at the bottom, so layers grow upward. */
  rowsUpward?: boolean;
  /** Cell width bounds: cells share the width of the box, within [min, max] (then it scrolls). */
  cellWidth: { min: number; max: number };
  /** Cell height; 'square' = the cell width. */
  cellHeight: number | 'square';
  /** Text drawn inside a cell, lines split at "\n" (only where the cell is large enough to hold it). */
  annotate?: (c: Cell) => string | null;
  /** Outlined thinly (the cell under the pointer). */
  active?: Cell | null;
  /** Outlined boldly (the cell clicked). */
  selected?: Cell | null;
  /** Text drawn beside marked rows, right of the grid, after an orange bar (e.g. "#1 add α=4"). */
  rowMarks?: ReadonlyMap<number, string>;
  /**
   * The text above column c (default: its index c), e.g. "all" over a whole-layer column; null: no
   * index row, for columns whose labels already name them ("H0", "H1", … under a grid of heads).
   */
  colIndex?: ((c: number) => string) | null;
  /**
   * Keep the last column in view while the grid scrolls sideways (a sticky copy at the box's right
   * edge): the patching grid's whole-layer column "all" (trials at 1440 px found it off-screen).
   */
  pinLastColumn?: boolean;
  /**
   * How many of the last columns are the futures' teacher-forced shared prefix (decision_point.ts):
   * their labels are drawn muted, in italics, and listed in data-prefix-cols.
   */
  prefixCols?: number;
  /** Cells outlined with an orange dashed line (e.g. the positions an intervention steers). */
  markedCells?: readonly Cell[];
  onHover?: (c: Cell | null) => void;
  onSelect?: (c: Cell) => void;
  canvasRef?: RefObject<HTMLCanvasElement | null>;
  /** Accessible name of the picture. */
  label: string;
  testId: string;
}

const FONT = '13px system-ui, -apple-system, "Segoe UI", sans-serif';
const SMALL = '11px system-ui, -apple-system, "Segoe UI", sans-serif';
const INK = '#1f2328';
const MUTED = '#57606a';
const MAX_LABEL = 14;
const ANGLE = Math.PI / 4;
/** Line height a column label needs across its baseline (px): labels closer than this overlap. */
export const LABEL_PITCH = 15;
const MARK = '#d9480f';
/** Gap between the grid's bottom edge and where each rotated column label ends (glyphs reach ~5 px up from there). */
const LABEL_GAP = 12;

const clip = (s: string) => (s.length > MAX_LABEL ? `${s.slice(0, MAX_LABEL - 1)}…` : s);

/** The columns of the shared prefix (HeatmapProps.prefixCols), ascending. */
const prefixColumns = (p: HeatmapProps) => Array.from({ length: Math.min(p.prefixCols ?? 0, p.nCols) }, (_, i) => p.nCols - Math.min(p.prefixCols ?? 0, p.nCols) + i);

/** Column c's label style: a shared-prefix column's is muted and italic. */
function labelStyle(ctx: CanvasRenderingContext2D, p: HeatmapProps, c: number) {
  const pre = inPrefix(c, p.nCols, p.prefixCols ?? 0);
  ctx.font = pre ? `italic ${FONT}` : FONT;
  ctx.fillStyle = pre ? MUTED : INK;
}

/** Where the cells sit inside the canvas and how large they are, in CSS pixels. */
interface Geometry {
  x0: number;
  y0: number;
  width: number;
  height: number;
  cw: number;
  ch: number;
  /** Column labels' rotation: 45° where the columns are wide enough for the labels not to touch, else vertical. */
  angle: number;
  /** Label every n-th column (n > 1 only where even vertical labels would touch). */
  labelEvery: number;
}

/**
 * How column labels are drawn under columns `cw` px wide so that neighbours never overlap: labels
 * rotated by angle a sit cw·sin(a) apart across their baselines, which must be ≥ LABEL_PITCH px.
 * 45° where the columns allow it, else vertical (90°), and only every n-th label where even vertical
 * ones would touch.
 */
export function columnLabelSpacing(cw: number): { angle: number; labelEvery: number } {
  const angle = cw * Math.sin(ANGLE) >= LABEL_PITCH ? ANGLE : Math.PI / 2;
  return { angle, labelEvery: Math.max(1, Math.ceil(LABEL_PITCH / (cw * Math.sin(angle)))) };
}

function layout(p: HeatmapProps, measure: CanvasRenderingContext2D, boxWidth: number): Geometry {
  measure.font = FONT;
  const rowW = Math.max(0, ...p.rowLabels.map((s) => measure.measureText(clip(s)).width));
  const colW = Math.max(0, ...p.colLabels.map((s) => measure.measureText(clip(s)).width));
  const x0 = Math.ceil(Math.max(28 + rowW + 8, colW * Math.cos(ANGLE) - p.cellWidth.min / 2 + 8));
  measure.font = SMALL;
  const markW = p.rowMarks?.size ? Math.ceil(Math.max(...[...p.rowMarks.values()].map((t) => measure.measureText(t).width))) + 14 : 0;
  const cw = Math.max(p.cellWidth.min, Math.min(p.cellWidth.max, Math.floor((boxWidth - x0 - RIGHT_PAD - markW) / p.nCols)));
  const ch = p.cellHeight === 'square' ? cw : p.cellHeight;
  const y0 = p.colIndex === null ? 6 : 18;
  const { angle, labelEvery } = columnLabelSpacing(cw);
  const bottom = Math.ceil(colW * Math.sin(angle) + LABEL_GAP + 34);
  return { x0, y0, cw, ch, angle, labelEvery, width: x0 + p.nCols * cw + RIGHT_PAD + markW, height: y0 + p.nRows * ch + bottom };
}

/**
 * The columns whose index is drawn above them: every n-th where indices would touch (two digits need
 * ~13 px plus a gap), and the last one always where the caller names the columns (its text often
 * differs, e.g. "all"), in place of the stride's last pick so that no two touch.
 */
function indexedColumns(cw: number, nCols: number, keepLast: boolean): number[] {
  const every = Math.max(1, Math.ceil((nCols > 10 ? 18 : 12) / cw));
  const cols: number[] = [];
  for (let c = 0; c < nCols; c += every) cols.push(c);
  if (keepLast && nCols > 0 && cols[cols.length - 1] !== nCols - 1) cols[cols.length > 1 ? cols.length - 1 : cols.length] = nCols - 1;
  return cols;
}

const colIndexText = (p: HeatmapProps, c: number) => (p.colIndex ? p.colIndex(c) : String(c));
/** The columns of `p` with an index drawn above them at cell width `cw` (none when `colIndex` is null). */
const columnIndices = (p: HeatmapProps, cw: number) => (p.colIndex === null ? [] : indexedColumns(cw, p.nCols, !!p.colIndex));

/** Margin left of the pinned last column's copy, which separates it from the grid. */
const PIN_PAD = 8;
/** Margin right of the grid. */
const RIGHT_PAD = 12;
/** Height of the column title's line at the bottom of the canvas. */
const TITLE_H = 20;

/** Sizes a canvas to w × h CSS pixels at the device's pixel ratio and returns its context, cleared to white. */
function sized(canvas: HTMLCanvasElement, w: number, h: number): CanvasRenderingContext2D {
  const dpr = window.devicePixelRatio || 1;
  canvas.width = Math.ceil(w * dpr);
  canvas.height = Math.ceil(h * dpr);
  canvas.style.width = `${w}px`;
  canvas.style.height = `${h}px`;
  const ctx = canvas.getContext('2d')!;
  ctx.setTransform(dpr, 0, 0, dpr, 0, 0);
  ctx.fillStyle = '#fff';
  ctx.fillRect(0, 0, w, h);
  return ctx;
}

/** Row labels right-aligned before x0, and the row title turned upright at the left edge. */
function drawRowLabels(ctx: CanvasRenderingContext2D, p: HeatmapProps, g: Geometry, ys: (row: number) => number) {
  ctx.font = FONT;
  ctx.fillStyle = INK;
  ctx.textAlign = 'right';
  ctx.textBaseline = 'middle';
  for (let r = 0; r < p.nRows; r++) ctx.fillText(clip(p.rowLabels[r] ?? ''), g.x0 - 6, ys(r) + g.ch / 2);
  ctx.fillStyle = MUTED;
  ctx.textAlign = 'center';
  ctx.save();
  ctx.translate(12, g.y0 + (p.nRows * g.ch) / 2);
  ctx.rotate(-Math.PI / 2);
  ctx.fillText(p.rowTitle, 0, 0);
  ctx.restore();
}

/** Column c's cells (with their text) at x, its index above and its label below. */
function drawColumn(ctx: CanvasRenderingContext2D, p: HeatmapProps, g: Geometry, c: number, x: number, ys: (row: number) => number, label: boolean) {
  const gap = g.cw >= 10 && g.ch >= 10 ? 1 : 0;
  for (let r = 0; r < p.nRows; r++) {
    const v = p.values[r * p.nCols + c];
    const fill = Number.isFinite(v) ? p.color(v) : '#d0d7de';
    ctx.fillStyle = fill;
    ctx.fillRect(x, ys(r), g.cw - gap, g.ch - gap);
    const lines = p.annotate?.({ row: r, col: c })?.split('\n') ?? [];
    ctx.font = SMALL;
    if (lines.length && g.ch >= 13 * lines.length + 2 && lines.every((t) => ctx.measureText(t).width <= g.cw - 4)) {
      ctx.fillStyle = lab(fill).l < 55 ? '#fff' : INK;
      ctx.textAlign = 'center';
      ctx.textBaseline = 'middle';
      lines.forEach((t, i) => ctx.fillText(t, x + g.cw / 2, ys(r) + g.ch / 2 + (i - (lines.length - 1) / 2) * 13));
    }
  }
  if (!label) return;
  ctx.font = SMALL;
  ctx.fillStyle = MUTED;
  ctx.textAlign = 'center';
  ctx.textBaseline = 'bottom';
  if (p.colIndex !== null) ctx.fillText(colIndexText(p, c), x + g.cw / 2, g.y0 - 3);
  labelStyle(ctx, p, c);
  ctx.textAlign = 'right';
  ctx.textBaseline = 'middle';
  ctx.save();
  ctx.translate(x + g.cw / 2, g.y0 + p.nRows * g.ch + LABEL_GAP);
  ctx.rotate(-g.angle);
  ctx.fillText(clip(p.colLabels[c] ?? ''), 0, 0);
  ctx.restore();
}

/**
 * A dense grid drawn on a canvas, with row and column labels, a column index above each column
 * (unless `colIndex` is null), axis titles, optional per-cell text and pointer/keyboard
 * interaction. It draws what it is given: colours come from the caller's scale.
 */
export function Heatmap(p: HeatmapProps) {
  const own = useRef<HTMLCanvasElement | null>(null);
  const ref = p.canvasRef ?? own;
  const pinLeft = useRef<HTMLCanvasElement | null>(null);
  const pinRight = useRef<HTMLCanvasElement | null>(null);
  const box = useRef<HTMLDivElement | null>(null);
  const [boxWidth, setBoxWidth] = useState(800);
  useLayoutEffect(() => {
    const el = box.current;
    if (!el) return;
    setBoxWidth(el.clientWidth);
    const ro = new ResizeObserver(() => setBoxWidth(el.clientWidth));
    ro.observe(el);
    return () => ro.disconnect();
  }, []);
  const measure = useMemo(() => document.createElement('canvas').getContext('2d')!, []);
  const g = useMemo(() => layout(p, measure, boxWidth), [p.rowLabels, p.colLabels, p.nRows, p.nCols, p.cellWidth.min, p.cellWidth.max, p.cellHeight, p.rowMarks, p.colIndex === null, measure, boxWidth]);
  const cellWidth = g.cw, cellHeight = g.ch;

  const ys = (row: number) => g.y0 + (p.rowsUpward ? p.nRows - 1 - row : row) * cellHeight;
  const xs = (col: number) => g.x0 + col * cellWidth;
  // Wider than its box: the row labels stay at the left edge while the grid scrolls, and (pinLastColumn) the last column at the right.
  const scrolls = g.width > boxWidth + 1;
  const pinned = scrolls && !!p.pinLastColumn && p.nCols > 1;

  useEffect(() => {
    // The copies stop above the column title (the grid's bottom line), which stays readable under them.
    if (pinLeft.current) drawRowLabels(sized(pinLeft.current, g.x0, g.height - TITLE_H), p, g, ys);
    if (pinRight.current) {
      // As wide as the column with the grid's right margin: scrolled to the end, the copy lies exactly on the column.
      const ctx = sized(pinRight.current, PIN_PAD + cellWidth + RIGHT_PAD, g.height - TITLE_H);
      ctx.fillStyle = MUTED;
      ctx.fillRect(1, g.y0, 1, p.nRows * cellHeight);
      drawColumn(ctx, p, g, p.nCols - 1, PIN_PAD, ys, true);
      for (const [c, width, colour] of [[p.selected, 3, MARK], [p.active, 2, INK]] as const) {
        if (!c || c.col !== p.nCols - 1) continue;
        ctx.lineWidth = width;
        ctx.strokeStyle = colour;
        ctx.strokeRect(PIN_PAD + width / 2, ys(c.row) + width / 2, cellWidth - 1 - width, cellHeight - 1 - width);
      }
    }
  });

  useEffect(() => {
    const canvas = ref.current;
    if (!canvas) return;
    const dpr = window.devicePixelRatio || 1;
    canvas.width = Math.ceil(g.width * dpr);
    canvas.height = Math.ceil(g.height * dpr);
    canvas.style.width = `${g.width}px`;
    canvas.style.height = `${g.height}px`;
    const ctx = canvas.getContext('2d')!;
    ctx.setTransform(dpr, 0, 0, dpr, 0, 0);
    ctx.fillStyle = '#fff';
    ctx.fillRect(0, 0, g.width, g.height);
    const gap = cellWidth >= 10 && cellHeight >= 10 ? 1 : 0;
    for (let c = 0; c < p.nCols; c++) drawColumn(ctx, p, g, c, xs(c), ys, false);
    drawRowLabels(ctx, p, g, ys);
    ctx.font = SMALL;
    ctx.fillStyle = MUTED;
    ctx.textAlign = 'center';
    ctx.textBaseline = 'bottom';
    for (const c of columnIndices(p, cellWidth)) ctx.fillText(colIndexText(p, c), xs(c) + cellWidth / 2, g.y0 - 3);
    ctx.textAlign = 'right';
    ctx.textBaseline = 'middle';
    const yBottom = g.y0 + p.nRows * cellHeight;
    for (let c = 0; c < p.nCols; c += g.labelEvery) {
      labelStyle(ctx, p, c);
      ctx.save();
      ctx.translate(xs(c) + cellWidth / 2, yBottom + LABEL_GAP);
      ctx.rotate(-g.angle);
      ctx.fillText(clip(p.colLabels[c] ?? ''), 0, 0);
      ctx.restore();
    }
    ctx.fillStyle = MUTED;
    ctx.textAlign = 'center';
    ctx.textBaseline = 'bottom';
    ctx.fillText(p.colTitle, g.x0 + (p.nCols * cellWidth) / 2, g.height - 4);
    const outline = (c: Cell, width: number, colour: string) => {
      ctx.lineWidth = width;
      ctx.strokeStyle = colour;
      ctx.strokeRect(xs(c.col) + width / 2, ys(c.row) + width / 2, cellWidth - gap - width, cellHeight - gap - width);
    };
    ctx.setLineDash([4, 3]);
    for (const c of p.markedCells ?? []) outline(c, 2, MARK);
    ctx.setLineDash([]);
    const xRight = g.x0 + p.nCols * cellWidth;
    ctx.font = SMALL;
    ctx.textAlign = 'left';
    ctx.textBaseline = 'middle';
    for (const [row, text] of p.rowMarks ?? []) {
      ctx.fillStyle = MARK;
      ctx.fillRect(xRight + 1, ys(row), 4, cellHeight - gap);
      ctx.fillText(text, xRight + 9, ys(row) + cellHeight / 2);
    }
    if (p.selected) outline(p.selected, 3, MARK);
    if (p.active) outline(p.active, 2, INK);
  });

  const cellAt = (x: number, y: number): Cell | null => {
    const col = Math.floor((x - g.x0) / cellWidth);
    const i = Math.floor((y - g.y0) / cellHeight);
    if (col < 0 || col >= p.nCols || i < 0 || i >= p.nRows) return null;
    return { row: p.rowsUpward ? p.nRows - 1 - i : i, col };
  };

  const onKey = (e: React.KeyboardEvent) => {
    const cur = p.active ?? { row: p.rowsUpward ? p.nRows - 1 : 0, col: 0 };
    const up = p.rowsUpward ? 1 : -1;
    const moves: Record<string, Cell> = {
      ArrowLeft: { row: cur.row, col: Math.max(0, cur.col - 1) },
      ArrowRight: { row: cur.row, col: Math.min(p.nCols - 1, cur.col + 1) },
      ArrowUp: { row: Math.min(p.nRows - 1, Math.max(0, cur.row + up)), col: cur.col },
      ArrowDown: { row: Math.min(p.nRows - 1, Math.max(0, cur.row - up)), col: cur.col },
    };
    if (moves[e.key]) {
      e.preventDefault();
      p.onHover?.(moves[e.key]);
    } else if ((e.key === 'Enter' || e.key === ' ') && p.active) {
      e.preventDefault();
      p.onSelect?.(p.active);
    }
  };

  const pinnedRow = (y: number): Cell | null => {
    const i = Math.floor((y - g.y0) / cellHeight);
    return i < 0 || i >= p.nRows ? null : { row: p.rowsUpward ? p.nRows - 1 - i : i, col: p.nCols - 1 };
  };

  return (
    <>
    <div className="scroll-x heatmap-box" ref={box}>
      <div className="heatmap-track" style={{ width: g.width }}>
      {scrolls && <div className="heatmap-pin left"><canvas ref={pinLeft} aria-hidden="true" data-testid={`${p.testId}-row-labels`} /></div>}
      <canvas
        ref={ref}
        className={`heatmap${p.onSelect ? ' clickable' : ''}`}
        role="img"
        aria-label={p.label}
        tabIndex={0}
        data-testid={p.testId}
        data-x0={g.x0}
        data-y0={g.y0}
        data-label-every={g.labelEvery}
        data-cell-width={cellWidth}
        data-cell-height={cellHeight}
        data-rows={p.nRows}
        data-rows-upward={p.rowsUpward ? 'true' : 'false'}
        data-col-indices={columnIndices(p, cellWidth).map((c) => colIndexText(p, c)).join(' ')}
        data-marked-rows={[...(p.rowMarks?.keys() ?? [])].join(' ')}
        data-prefix-cols={prefixColumns(p).join(' ') || undefined}
        data-marked-cells={(p.markedCells ?? []).map((c) => `${c.row}:${c.col}`).join(' ')}
        onMouseMove={(e) => p.onHover?.(cellAt(e.nativeEvent.offsetX, e.nativeEvent.offsetY))}
        onMouseLeave={() => p.onHover?.(null)}
        onClick={(e) => {
          const c = cellAt(e.nativeEvent.offsetX, e.nativeEvent.offsetY);
          if (c) p.onSelect?.(c);
        }}
        onKeyDown={onKey}
      />
      {pinned && (
        <div className="heatmap-pin right">
          <canvas
            ref={pinRight} aria-hidden="true" data-testid={`${p.testId}-pinned`} className={p.onSelect ? 'clickable' : undefined}
            onMouseMove={(e) => p.onHover?.(pinnedRow(e.nativeEvent.offsetY))}
            onMouseLeave={() => p.onHover?.(null)}
            onClick={(e) => { const c = pinnedRow(e.nativeEvent.offsetY); if (c) p.onSelect?.(c); }}
          />
        </div>
      )}
      </div>
    </div>
    {scrolls && <p className="hint" data-testid={`${p.testId}-scroll-note`}>{p.nCols} columns, wider than the panel: scroll the grid sideways (shift + wheel) to see them all{pinned ? '; the last column stays pinned at the right' : ''}.</p>}
    </>
  );
}
