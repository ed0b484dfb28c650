import { signed } from '../lib/format';

/** Largest |v| (at least a small floor, so an all-zero chart draws neutral). */
const extent = (vs: readonly number[]): number => Math.max(1e-6, ...vs.map(Math.abs));

/** Widths of text in the chart's sans-serif, per character, px (digits and signs at 11 px; labels at 12 px, generous). */
const NUMBER_CHAR = 6.6, LABEL_CHAR = 7;

/**
 * Horizontal signed bars (span numbers; per-layer components), zero in the middle. Each bar's number sits past its end,
 * so the room for the longest number is kept on both sides of the bars: the longest negative bar's number ends before
 * the row labels (a trial saw the direct logit attribution's numbers drawn over the labels), the longest positive one's
 * inside the chart; the label column is as wide as the longest label, up to 40 % of the chart.
 */
export function SignedBars({ rows, svgRef, testId, label, width = 520 }: { rows: { label: string; value: number; color?: string }[]; svgRef?: React.RefObject<SVGSVGElement | null>; testId: string; label: string; width?: number }) {
  const m = extent(rows.map((r) => r.value));
  const lw = Math.min(Math.round(width * 0.4), Math.max(60, Math.ceil(Math.max(0, ...rows.map((r) => r.label.length)) * LABEL_CHAR) + 12));
  const vw = Math.ceil(Math.max(0, ...rows.map((r) => signed(r.value, 3).length)) * NUMBER_CHAR) + 8;
  const bh = 18, h = rows.length * (bh + 4) + 24, half = (width - lw - 2 * vw) / 2, mid = lw + vw + half;
  return (
    <svg ref={svgRef} className="chart" width={width} height={h} role="img" aria-label={label} data-testid={testId}>
      <line x1={mid} x2={mid} y1={0} y2={h - 18} stroke="#8c959f" />
      {rows.map((r, i) => {
        const y = i * (bh + 4) + 4, w = (Math.abs(r.value) / m) * half;
        return (
          <g key={i} data-label={r.label} data-value={r.value}>
            <text x={lw - 6} y={y + bh / 2} textAnchor="end" dominantBaseline="middle" fontSize={12}>{r.label}</text>
            <rect x={r.value >= 0 ? mid : mid - w} y={y} width={w} height={bh} fill={r.color ?? (r.value >= 0 ? '#2166ac' : '#b2182b')} />
            <text x={r.value >= 0 ? mid + w + 4 : mid - w - 4} y={y + bh / 2} textAnchor={r.value >= 0 ? 'start' : 'end'} dominantBaseline="middle" fontSize={11}>{signed(r.value, 3)}</text>
          </g>
        );
      })}
      <text x={mid} y={h - 4} textAnchor="middle" fontSize={11} fill="#57606a">nats of the margin Δ (← bad future · good future →)</text>
    </svg>
  );
}

