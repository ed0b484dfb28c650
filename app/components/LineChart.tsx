import { extent, line, scaleLinear } from 'd3';
import type { RefObject } from 'react';

export interface Series {
  name: string;
  color: string;
  points: readonly [number, number][];
  /** Drawn dashed (e.g. the reference run). */
  dashed?: boolean;
}

export interface LineChartProps {
  series: readonly Series[];
  xLabel: string;
  yLabel: string;
  /** Fixed x domain (else the data's extent). */
  xDomain?: [number, number];
  /** Draw y = 0 as a reference line (and keep it in view). */
  zeroLine?: boolean;
  /** x ticks at exactly these values (else D3's integer ticks). */
  xTicks?: readonly number[];
  /** Text of an x tick (else the number): residual rows as "embed", "L0", … (lib/layer_names.ts). */
  xTickFormat?: (x: number) => string;
  /** Name the series in a legend right of the plot. */
  legend?: boolean;
  /** Vertical reference lines at these x values, each labelled at the top (a marked layer or step). */
  xMarks?: readonly { x: number; label: string; color: string }[];
  /** Shaded x intervals [from, to] behind the lines, each labelled at the top (an operating window). */
  xBands?: readonly { from: number; to: number; label: string; color: string }[];
  /** Makes the dots clickable: called with the series and point index. */
  onPointClick?: (series: number, point: number) => void;
  width?: number;
  height?: number;
  svgRef?: RefObject<SVGSVGElement | null>;
  label: string;
  testId?: string;
}

const MARGIN = { top: 12, right: 16, bottom: 44, left: 60 };

/**
 * Lines over a shared x axis, with D3 scales and ticks, dots at the data points (each with its
 * values in a tooltip and data-x/data-y), an optional zero line, legend and clickable points.
 */
export function LineChart({ series, xLabel, yLabel, xDomain, zeroLine, xTicks, xTickFormat, legend, xMarks, xBands, onPointClick, width = 720, height = 240, svgRef, label, testId }: LineChartProps) {
  const legendW = legend ? 44 + 7 * Math.max(0, ...series.map((s) => s.name.length)) : 0;
  const M = { ...MARGIN, right: legend ? legendW : MARGIN.right };
  const all = series.flatMap((s) => s.points);
  const ext = extent(all, (p) => p[0]);
  const xd: [number, number] = xDomain ?? (ext[0] === undefined ? [0, 1] : [ext[0], ext[1]!]);
  const ys = all.map((p) => p[1]).filter(Number.isFinite);
  if (zeroLine) ys.push(0);
  const y0 = ys.length ? Math.min(...ys) : -1;
  const y1 = ys.length ? Math.max(...ys) : 1;
  const pad = (y1 - y0) * 0.08 || 1;
  const x = scaleLinear().domain(xd[0] === xd[1] ? [xd[0], xd[0] + 1] : xd).range([M.left, width - M.right]);
  const y = scaleLinear().domain([y0 - pad, y1 + pad]).nice().range([height - M.bottom, M.top]);
  const path = line<readonly [number, number]>().x((p) => x(p[0])).y((p) => y(p[1])).defined((p) => Number.isFinite(p[1]));
  return (
    <svg ref={svgRef} className="chart line-chart" width={width} height={height} viewBox={`0 0 ${width} ${height}`} role="img" aria-label={label} data-testid={testId}>
      {xBands?.map((b) => (
        <g key={`band${b.from}${b.label}`} className="x-band" data-from={b.from} data-to={b.to}>
          <rect x={x(b.from) - (b.from === b.to ? 3 : 0)} width={Math.max(6, x(b.to) - x(b.from))} y={M.top} height={height - M.bottom - M.top} fill={b.color} fillOpacity={0.16} />
          <text x={x(b.from) + 4} y={M.top + 10} fill={b.color}>{b.label}</text>
        </g>
      ))}
      {y.ticks(5).map((t) => (
        <g key={`y${t}`} transform={`translate(0,${y(t)})`}>
          <line x1={M.left} x2={width - M.right} stroke="#eaeef2" />
          <text x={M.left - 6} textAnchor="end" dominantBaseline="middle">{String(t).replace('-', '−')}</text>
        </g>
      ))}
      {(xTicks ?? x.ticks(Math.min(10, Math.max(2, Math.floor(xd[1] - xd[0])))).filter(Number.isInteger)).map((t) => (
        <g key={`x${t}`} className="x-tick" transform={`translate(${x(t)},${height - M.bottom})`}>
          <line y2={5} stroke="#57606a" />
          <text y={18} textAnchor="middle">{xTickFormat ? xTickFormat(t) : String(t).replace('-', '−')}</text>
        </g>
      ))}
      <line x1={M.left} x2={width - M.right} y1={height - M.bottom} y2={height - M.bottom} stroke="#57606a" />
      <line x1={M.left} x2={M.left} y1={M.top} y2={height - M.bottom} stroke="#57606a" />
      {zeroLine && <line className="zero-line" x1={M.left} x2={width - M.right} y1={y(0)} y2={y(0)} stroke="#1f2328" strokeDasharray="4 3" />}
      {xMarks?.map((m) => (
        <g key={`mark${m.x}${m.label}`} className="x-mark" data-x={m.x}>
          <line x1={x(m.x)} x2={x(m.x)} y1={M.top + 14} y2={height - M.bottom} stroke={m.color} strokeWidth={1.5} strokeDasharray="5 3" />
          <text x={x(m.x) + (x(m.x) > (M.left + width - M.right) / 2 ? -4 : 4)} y={M.top + 8} textAnchor={x(m.x) > (M.left + width - M.right) / 2 ? 'end' : 'start'} fill={m.color}>{m.label}</text>
        </g>
      ))}
      {series.map((s, si) => (
        <g key={s.name} className="series" data-series={s.name}>
          <path d={path(s.points) ?? ''} fill="none" stroke={s.color} strokeWidth={2} strokeDasharray={s.dashed ? '6 4' : undefined} />
          {s.points.map(([px, py], pi) => Number.isFinite(py) && (
            <circle
              key={px} cx={x(px)} cy={y(py)} r={onPointClick ? 4.5 : 3} fill={s.color} data-x={px} data-y={py}
              className={onPointClick ? 'clickable' : undefined} onClick={onPointClick ? () => onPointClick(si, pi) : undefined}
            >
              <title>{`${xLabel} ${px}: ${s.name} ${py.toFixed(4)}${onPointClick ? ' (click to use)' : ''}`}</title>
            </circle>
          ))}
        </g>
      ))}
      {legend && (
        <g className="legend-items" transform={`translate(${width - legendW + 12},${M.top + 4})`}>
          {series.map((s, i) => (
            <g key={s.name} transform={`translate(0,${i * 18})`} data-testid={testId ? `${testId}-legend-${i}` : undefined}>
              <line x1={0} x2={22} y1={0} y2={0} stroke={s.color} strokeWidth={2.5} strokeDasharray={s.dashed ? '6 4' : undefined} />
              <circle cx={11} cy={0} r={3} fill={s.color} />
              <text x={28} dominantBaseline="middle">{s.name}</text>
            </g>
          ))}
        </g>
      )}
      <text className="axis-title" x={(M.left + width - M.right) / 2} y={height - 6} textAnchor="middle">{xLabel}</text>
      <text className="axis-title" transform={`translate(14,${(M.top + height - M.bottom) / 2}) rotate(-90)`} textAnchor="middle">{yLabel}</text>
    </svg>
  );
}
