import { area, line, scaleLinear } from 'd3';
import type { RefObject } from 'react';
import { residShort, RESID_AXIS } from '../lib/layer_names';

/** One panel's data: a curve over integer x with an optional band, a reference line and a marked x. */
export interface ReportPanel {
  title: string;
  yLabel: string;
  /** y per x = 0 … n−1. */
  curve: readonly number[];
  band?: readonly [readonly number[], readonly number[]] | null;
  /**
   * Second curve (e.g. probe accuracy), dashed, on its own scale `domain` with a right axis, its
   * band and its own marked x (e.g. the probe's first layer at 95 % of its best).
   */
  extra?: { name: string; curve: readonly number[]; domain: [number, number]; band?: readonly [readonly number[], readonly number[]] | null; mark?: { x: number | null; label: string } } | null;
  /** Horizontal reference (threshold). */
  reference: { y: number; label: string };
  /** The answer: marked x (null: not reached), with its interval. */
  mark: { x: number | null; label: string; interval?: readonly [number, number] | null };
  /** Shown instead of a plot (e.g. "no intervention given"). */
  empty?: string;
  testId: string;
}

/**
 * Each panel: its title on line 1, its answer (left) and the second curve's legend (right) on line 2,
 * then the plot, whose right margin holds the second curve's axis and the reference line's label
 * (outside the plot, so it never covers a point: inside, at the right end, it hid the final layer's).
 */
const W = 640, PANEL_H = 164, M = { top: 40, bottom: 34, left: 60 };
/** Width of the second curve's right-axis tick labels, and of one character of an 11 px label (a bound for digits and lower case). */
const EXTRA_AXIS = 26, CHAR_11PX = 6.5;
const LINE1 = 14, LINE2 = 30;
const INK = '#1f2328', MUTED = '#57606a', GRID = '#eaeef2', LINE = '#0969da', MARK = '#d9480f';
const num = (v: number) => String(+v.toFixed(2)).replace('-', '−');

const EXTRA = '#8250df';

/** The panel's second curve on its own y scale (right axis), with its band and marked x. */
function Extra({ e, x, top, right }: { e: NonNullable<ReportPanel['extra']>; x: (v: number) => number; top: number; right: number }) {
  const y = scaleLinear().domain(e.domain).range([top + PANEL_H - M.bottom, top + M.top]);
  const path = line<number>().x((_, i) => x(i)).y((v) => y(v)).defined(Number.isFinite);
  const band = e.band ? area<number>().x((_, i) => x(i)).y0((_, i) => y(e.band![0][i])).y1((_, i) => y(e.band![1][i]))(e.curve.map((_, i) => i)) : null;
  return (
    <g data-testid="report-extra" data-mark={e.mark?.x ?? 'none'}>
      {band && <path d={band} fill={EXTRA} opacity={0.12} />}
      <path d={path(e.curve as number[]) ?? ''} fill="none" stroke={EXTRA} strokeWidth={1.5} strokeDasharray="5 3" />
      {e.curve.map((v, i) => Number.isFinite(v) && <circle key={i} cx={x(i)} cy={y(v)} r={2.5} fill={EXTRA} data-x={i} data-y={v}><title>{`${e.name}, ${residShort(i)}: ${num(v)}`}</title></circle>)}
      {y.ticks(3).map((t) => <text key={t} x={W - right + 3} y={y(t)} dominantBaseline="middle" fill={EXTRA} fontSize="10">{num(t)}</text>)}
      <text x={W - 8} y={top + LINE2} textAnchor="end" fill={EXTRA} fontSize="11">{e.name}{e.mark ? ` · ${e.mark.label}` : ''}</text>
      {e.mark && e.mark.x !== null && <line x1={x(e.mark.x)} x2={x(e.mark.x)} y1={top + M.top} y2={top + PANEL_H - M.bottom} stroke={EXTRA} strokeWidth={2} strokeDasharray="3 2" />}
    </g>
  );
}

/** One panel at vertical offset `top`; its x axis spans `xMax` + 1 integer positions; the plot ends `right` px before W. */
function Panel({ p, top, xMax, xLabel, right }: { p: ReportPanel; top: number; xMax: number; xLabel: (x: number) => string; right: number }) {
  const x = scaleLinear().domain([-0.5, xMax + 0.5]).range([M.left, W - right]);
  const ys = [...p.curve, ...(p.band ? [...p.band[0], ...p.band[1]] : []), p.reference.y, 0].filter(Number.isFinite);
  const lo = Math.min(...ys), hi = Math.max(...ys), pad = (hi - lo) * 0.08 || 1;
  const y = scaleLinear().domain([lo - pad, hi + pad]).nice().range([top + PANEL_H - M.bottom, top + M.top]);
  const pts = p.curve.map((v, i) => [i, v] as [number, number]);
  const path = line<[number, number]>().x((d) => x(d[0])).y((d) => y(d[1])).defined((d) => Number.isFinite(d[1]));
  const band = p.band ? area<number>().x((_, i) => x(i)).y0((_, i) => y(p.band![0][i])).y1((_, i) => y(p.band![1][i]))(p.curve.map((_, i) => i)) : null;
  const ticks = Array.from({ length: xMax + 1 }, (_, i) => i);
  return (
    <g data-testid={p.testId} data-mark={p.mark.x ?? 'none'} data-interval={p.mark.interval ? p.mark.interval.join(' ') : 'none'}>
      <text x={M.left} y={top + LINE1} fill={INK} fontWeight={600}>{p.title}</text>
      <text x={M.left} y={top + LINE2} fill={p.mark.x === null ? MUTED : MARK} data-testid={`${p.testId}-answer`}>{p.mark.label}</text>
      {p.empty ? (
        <text x={(M.left + W - right) / 2} y={top + PANEL_H / 2} fill={MUTED} textAnchor="middle">{p.empty}</text>
      ) : (
        <>
          {y.ticks(4).map((t) => (
            <g key={t}>
              <line x1={M.left} x2={W - right} y1={y(t)} y2={y(t)} stroke={GRID} />
              <text x={M.left - 6} y={y(t)} textAnchor="end" dominantBaseline="middle" fill={MUTED}>{num(t)}</text>
            </g>
          ))}
          {p.mark.interval && <rect x={x(p.mark.interval[0] - 0.5)} width={x(p.mark.interval[1] + 0.5) - x(p.mark.interval[0] - 0.5)} y={top + M.top} height={PANEL_H - M.top - M.bottom} fill={MARK} opacity={0.12} />}
          {band && <path d={band} fill={LINE} opacity={0.18} />}
          <line x1={M.left} x2={W - right} y1={y(p.reference.y)} y2={y(p.reference.y)} stroke={MUTED} strokeDasharray="4 3" />
          <text x={W - right + (p.extra ? EXTRA_AXIS : 0) + 4} y={y(p.reference.y)} dominantBaseline="middle" fill={MUTED} fontSize="11" data-testid={`${p.testId}-reference`}>{p.reference.label}</text>
          <path d={path(pts) ?? ''} fill="none" stroke={LINE} strokeWidth={2} />
          {pts.map(([i, v]) => Number.isFinite(v) && <circle key={i} cx={x(i)} cy={y(v)} r={3} fill={LINE} data-x={i} data-y={v}><title>{`${xLabel(i)}: ${num(v)}`}</title></circle>)}
          {p.extra && <Extra e={p.extra} x={x} top={top} right={right} />}
          {p.mark.x !== null && <line x1={x(p.mark.x)} x2={x(p.mark.x)} y1={top + M.top} y2={top + PANEL_H - M.bottom} stroke={MARK} strokeWidth={2} />}
          {ticks.map((t) => <text key={t} x={x(t)} y={top + PANEL_H - M.bottom + 14} textAnchor="middle" fill={MUTED} fontSize="11">{xLabel(t)}</text>)}
        </>
      )}
      <text x={16} y={top + (PANEL_H - M.bottom + M.top) / 2} transform={`rotate(-90 16 ${top + (PANEL_H - M.bottom + M.top) / 2})`} textAnchor="middle" fill={MUTED} fontSize="11">{p.yLabel}</text>
    </g>
  );
}

/**
 * The decision-point report's figure: panels stacked over one x axis per kind (the layer panels
 * share their scale, so the three answers line up), each with its curve, reference line, band and
 * marked answer. One SVG, so it exports as one picture.
 */
export function ReportFigure({ layerPanels, stepPanel, nLayers, svgRef, testId }: { layerPanels: ReportPanel[]; stepPanel: ReportPanel; nLayers: number; svgRef?: RefObject<SVGSVGElement | null>; testId: string }) {
  const H = (layerPanels.length + 1) * PANEL_H + 22;
  const steps = Math.max(stepPanel.curve.length - 1, 1);
  // one right margin for every panel (the layer panels share their x scale): the widest reference label, after the right axis where there is one
  const panels = [...layerPanels, stepPanel];
  const right = 8 + (panels.some((p) => p.extra) ? EXTRA_AXIS : 0) + CHAR_11PX * Math.max(0, ...panels.map((p) => p.reference.label.length));
  return (
    <svg ref={svgRef} className="chart report-figure" width={W} height={H} viewBox={`0 0 ${W} ${H}`} role="img" aria-label="Decision-point report: visible, causal and changeable" data-testid={testId} fontSize="12">
      {layerPanels.map((p, i) => <Panel key={p.testId} p={p} top={i * PANEL_H} xMax={nLayers} xLabel={residShort} right={right} />)}
      <text x={W / 2} y={layerPanels.length * PANEL_H - 4} textAnchor="middle" fill={MUTED} fontSize="11">{RESID_AXIS}: embed, then after block L0 … L{nLayers - 1} (final)</text>
      <Panel p={stepPanel} top={layerPanels.length * PANEL_H + 10} xMax={steps} xLabel={(k) => String(k)} right={right} />
      <text x={W / 2} y={H - 4} textAnchor="middle" fill={MUTED} fontSize="11">step k at which the intervention switches on</text>
    </svg>
  );
}

