import { scaleBand, scaleLinear } from 'd3';
import type { RefObject } from 'react';

export interface BarChartProps {
  labels: readonly string[];
  values: ArrayLike<number>;
  /** Fixed value domain, e.g. [0, 1] for rates. */
  domain: [number, number];
  xLabel: string;
  yLabel: string;
  format: (v: number) => string;
  width?: number;
  height?: number;
  svgRef?: RefObject<SVGSVGElement | null>;
  label: string;
  testId?: string;
}

const M = { top: 18, right: 12, bottom: 44, left: 52 };

/** Vertical bars with their values printed on top. */
export function BarChart({ labels, values, domain, xLabel, yLabel, format, width = 360, height = 220, svgRef, label, testId }: BarChartProps) {
  const x = scaleBand<number>().domain(labels.map((_, i) => i)).range([M.left, width - M.right]).padding(0.25);
  const y = scaleLinear().domain(domain).range([height - M.bottom, M.top]);
  return (
    <svg ref={svgRef} className="chart" width={width} height={height} role="img" aria-label={label} data-testid={testId}>
      {y.ticks(4).map((t) => (
        <g key={t} transform={`translate(0,${y(t)})`}>
          <line x1={M.left} x2={width - M.right} stroke="#eaeef2" />
          <text x={M.left - 6} textAnchor="end" dominantBaseline="middle">{t}</text>
        </g>
      ))}
      {labels.map((l, i) => (
        <g key={l}>
          <rect x={x(i)} y={y(values[i])} width={x.bandwidth()} height={Math.max(0, y(domain[0]) - y(values[i]))} fill="#0969da" />
          <text x={x(i)! + x.bandwidth() / 2} y={y(values[i]) - 4} textAnchor="middle">{format(values[i])}</text>
          <text x={x(i)! + x.bandwidth() / 2} y={height - M.bottom + 16} textAnchor="middle">{l}</text>
        </g>
      ))}
      <line x1={M.left} x2={width - M.right} y1={height - M.bottom} y2={height - M.bottom} stroke="#57606a" />
      <text className="axis-title" x={(M.left + width - M.right) / 2} y={height - 6} textAnchor="middle">{xLabel}</text>
      <text className="axis-title" transform={`translate(14,${(M.top + height - M.bottom) / 2}) rotate(-90)`} textAnchor="middle">{yLabel}</text>
    </svg>
  );
}
