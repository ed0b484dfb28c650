import { useMemo } from 'react';
import { interpolateOranges, scaleSequential } from 'd3';
import { ColorLegend } from '../components/ColorLegend';
import { Heatmap } from '../components/Heatmap';
import { fixed, visibleToken } from '../lib/format';
import type { StudyResult } from '../../workers/protocol';

/**
 * Routing divergence between the prompt and prompt B (studies/route.ts promptB,
 * analysis/route_divergence.ts): a sparse layer × token heatmap of the Jensen–Shannon divergence of
 * the two router distributions (nats, on the fixed scale [0, ln 2]), each cell annotated with the
 * Jaccard overlap of the chosen experts (1 = the same experts).
 */
export function RouteDivergencePanel({ r }: { r: StudyResult<'route'> }) {
  const div = r.divergence ?? [];
  const T = r.tokens.length;
  const values = useMemo(() => {
    const v = new Float64Array(div.length * T);
    div.forEach((x, i) => v.set(x.js, i * T));
    return v;
  }, [div, T]);
  const color = useMemo(() => scaleSequential(interpolateOranges).domain([0, Math.LN2]), []);
  if (!r.divergence || !r.tokensB) return null;
  const tokensB = r.tokensB;
  const meanJaccard = div.reduce((s, x) => s + x.jaccard.reduce((a, v) => a + v, 0), 0) / (div.length * T);
  return (
    <div className="figure" data-testid="routes-divergence">
      <h3>Routing divergence from prompt B (sparse layer × token)</h3>
      <p className="muted" data-testid="routes-divergence-caption">mean Jaccard overlap of the chosen experts <span className="mono">{fixed(meanJaccard, 3)}</span> · colour = JS divergence of the router distributions (nats)</p>
      <Heatmap
        values={values} nRows={div.length} nCols={T} color={color}
        rowLabels={div.map((x) => `L${x.layer}`)} colLabels={r.tokens.map((t, i) => `${visibleToken(t)} | ${visibleToken(tokensB[i])}`)}
        rowTitle="sparse layer" colTitle="position · token (prompt | B)" rowsUpward cellWidth={{ min: 36, max: 72 }} cellHeight={32}
        annotate={(c) => `J ${fixed(div[c.row].jaccard[c.col], 2)}`}
        label="routing divergence per sparse layer and token" testId="routes-divergence-map"
      />
      <ColorLegend color={color} domain={[0, Math.LN2]} title="JS divergence (nats, at most ln 2)" lowNote="same distribution" highNote="disjoint" testId="routes-divergence-legend" />
    </div>
  );
}
