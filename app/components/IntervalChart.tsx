import { scaleLinear } from 'd3';
import type { RefObject } from 'react';
import { valueDomain } from '../lib/value_domain';

export interface IntervalGroup {
  /** Position on the x axis and its tick label. */
  x: number;
  label: string;
  mean: number;
  lo: number;
  hi: number;
  n: number;
}

export interface IntervalChartProps {
  groups: readonly IntervalGroup[];
  /** Every row's value at its group's x (drawn as small grey dots). */
  points: readonly [number, number][];
  xLabel: string;
  yLabel: string;
  /** Join the means with a line (numeric x). */
  line?: boolean;
  width?: number;
  height?: number;
  svgRef?: RefObject<SVGSVGElement | null>;
  label: string;
  testId?: string;
}

const M = { top: 12, right: 16, bottom: 44, left: 60 };

/** Means with interval bars per group over the individual values, on D3 scales (a zero line when 0 is in view). */
export function IntervalChart({ groups, points, xLabel, yLabel, line, width = 640, height = 280, svgRef, label, testId }: IntervalChartProps) {
  const xs = groups.map((g) => g.x);
  const x0 = Math.min(...xs), x1 = Math.max(...xs);
  const pad = (x1 - x0) * 0.06 || 0.5;
  const x = scaleLinear().domain([x0 - pad, x1 + pad]).range([M.left, width - M.right]);
  const y = scaleLinear().domain(valueDomain([...points.map((p) => p[1]), ...groups.flatMap((g) => [g.lo, g.hi])])).nice(5).range([height - M.bottom, M.top]);
  const tickLabel = y.tickFormat(5);
  const [d0, d1] = y.domain();
  const ordered = [...groups].sort((a, b) => a.x - b.x);
  return (
    <svg ref={svgRef} className="chart interval-chart" width={width} height={height} viewBox={`0 0 ${width} ${height}`} role="img" aria-label={label} data-testid={testId}>
      {y.ticks(5).map((t) => (
        <g key={`y${t}`} className="y-tick" transform={`translate(0,${y(t)})`}>
          <line x1={M.left} x2={width - M.right} stroke="#eaeef2" />
          <text x={M.left - 6} textAnchor="end" dominantBaseline="middle">{tickLabel(t)}</text>
        </g>
      ))}
      {groups.map((g) => (
        <g key={`x${g.x}`} transform={`translate(${x(g.x)},${height - M.bottom})`}>
          <line y2={5} stroke="#57606a" />
          <text y={18} textAnchor="middle">{g.label}</text>
        </g>
      ))}
      <line x1={M.left} x2={width - M.right} y1={height - M.bottom} y2={height - M.bottom} stroke="#57606a" />
      <line x1={M.left} x2={M.left} y1={M.top} y2={height - M.bottom} stroke="#57606a" />
      {d0 < 0 && d1 > 0 && <line className="zero-line" x1={M.left} x2={width - M.right} y1={y(0)} y2={y(0)} stroke="#1f2328" strokeDasharray="4 3" />}
      {points.map(([px, py], i) => Number.isFinite(py) && <circle key={i} cx={x(px) + (((i * 37) % 11) - 5)} cy={y(py)} r={2.5} fill="#8c959f" opacity={0.6} />)}
      {line && ordered.length > 1 && <path d={ordered.map((g, i) => `${i ? 'L' : 'M'}${x(g.x)},${y(g.mean)}`).join('')} fill="none" stroke="#0969da" strokeWidth={2} />}
      {ordered.map((g) => (
        <g key={g.x} data-testid="interval-point" data-x={g.x} data-mean={g.mean} data-lo={g.lo} data-hi={g.hi} data-n={g.n}>
          <line x1={x(g.x)} x2={x(g.x)} y1={y(g.lo)} y2={y(g.hi)} stroke="#0969da" strokeWidth={2} />
          <line x1={x(g.x) - 6} x2={x(g.x) + 6} y1={y(g.lo)} y2={y(g.lo)} stroke="#0969da" strokeWidth={2} />
          <line x1={x(g.x) - 6} x2={x(g.x) + 6} y1={y(g.hi)} y2={y(g.hi)} stroke="#0969da" strokeWidth={2} />
          <circle cx={x(g.x)} cy={y(g.mean)} r={5} fill="#0969da" />
          <title>{`${xLabel} ${g.label}: mean ${g.mean.toFixed(4)}, 95 % interval [${g.lo.toFixed(4)}, ${g.hi.toFixed(4)}], n = ${g.n}`}</title>
        </g>
      ))}
      <text className="axis-title" x={(M.left + width - M.right) / 2} y={height - 6} textAnchor="middle">{xLabel}</text>
      <text className="axis-title" transform={`translate(14,${(M.top + height - M.bottom) / 2}) rotate(-90)`} textAnchor="middle">{yLabel}</text>
    </svg>
  );
}
