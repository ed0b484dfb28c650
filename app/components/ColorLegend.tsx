import { precisionFixed, scaleLinear } from 'd3';

export interface ColorLegendProps {
  color: (v: number) => string;
  domain: [number, number];
  title: string;
  /** What the two ends mean ("favours bad", "favours good"). */
  lowNote?: string;
  highNote?: string;
  width?: number;
  testId?: string;
}

/** A horizontal colour bar with ticks, for a heatmap's scale. */
export function ColorLegend({ color, domain, title, lowNote, highNote, width = 320, testId }: ColorLegendProps) {
  const x = scaleLinear().domain(domain).range([0, width]);
  const steps = 64;
  const ticks = x.ticks(5);
  // enough decimals to tell neighbouring ticks apart (0.0005 steps read "0.001" twice at 3)
  const digits = Math.max(3, ticks.length > 1 ? precisionFixed(ticks[1] - ticks[0]) : 0);
  return (
    <figure className="legend" data-testid={testId}>
      <figcaption>{title}</figcaption>
      <svg width={width + 40} height={44} role="img" aria-label={`${title}: ${domain[0]} to ${domain[1]}`}>
        <g transform="translate(20,4)">
          {Array.from({ length: steps }, (_, i) => {
            const v = domain[0] + ((domain[1] - domain[0]) * (i + 0.5)) / steps;
            return <rect key={i} x={(i * width) / steps} y={0} width={width / steps + 0.5} height={14} fill={color(v)} />;
          })}
          <rect x={0} y={0} width={width} height={14} fill="none" stroke="#8c959f" />
          {ticks.map((t) => (
            <g key={t} transform={`translate(${x(t)},14)`}>
              <line y2={5} stroke="#57606a" />
              <text y={17} textAnchor="middle">{t.toLocaleString('en', { maximumFractionDigits: digits }).replace('-', '−')}</text>
            </g>
          ))}
        </g>
      </svg>
      {(lowNote || highNote) && (
        <div className="legend-notes" style={{ width: width + 40 }}>
          <span>{lowNote}</span>
          <span>{highNote}</span>
        </div>
      )}
    </figure>
  );
}
