import { useMemo, useState } from 'react';
import { interpolateOranges, scaleSequential } from 'd3';
import { useStore } from '../store';
import { Heatmap, type Cell } from './Heatmap';
import { ColorLegend } from './ColorLegend';
import { ExportButtons } from './ExportButtons';
import type { AnalysisResult } from '../store/results';
import { divergingScale, rangeNote, symmetricRange } from '../lib/color_scale';
import { fixed, signed } from '../lib/format';
import { blockShort, BLOCK_AXIS } from '../lib/layer_names';
import { sinkDivergence } from '../../workers/shared';

/** Colour of an exact zero: the heads the steering does not reach. */
const ZERO = '#e7eaee';

/**
 * Sink divergence of the steered run against the unsteered one on the same prompt (DESIGN.md §3;
 * analysis/sinks.ts sinkDivergence, as `branchpoint sinks --divergence true` prints it): per layer ×
 * head, Δα₀ = α₀(steered) − α₀(unsteered) and the Jensen–Shannon divergence (nats) of the heads' key
 * distributions α/Σα, with each run's sink rate. Exact zeros (heads upstream of every steered hook)
 * are drawn grey. Shown in the Sinks view when the analysis ran with interventions (its baseline).
 */
export function SteeredSinkDivergence({ r }: { r: AnalysisResult & { baseline: NonNullable<AnalysisResult['baseline']> } }) {
  const mode = useStore((s) => s.heatmapScale);
  const [hover, setHover] = useState<{ grid: 'dalpha' | 'js'; c: Cell } | null>(null);
  const s = r.analysis, u = r.baseline, L = s.nLayers, H = s.nHeads, T = s.ids.length;
  const d = useMemo(() => sinkDivergence(u.sinks, s.sinks, T), [u, s, T]);
  const rows = Array.from({ length: L }, (_, l) => blockShort(l)), heads = Array.from({ length: H }, (_, h) => `H${h}`);
  const ra = symmetricRange(d.dAlpha0, mode), rj = symmetricRange(d.js, mode);
  const dColor = (v: number) => (v === 0 ? ZERO : divergingScale(ra.m || 1)(v));
  const seq = scaleSequential(interpolateOranges).domain([0, rj.m || 1]).clamp(true);
  const jColor = (v: number) => (v === 0 ? ZERO : seq(v));
  const untouched = Array.from({ length: L }, (_, l) => l).filter((l) => Array.from({ length: H }, (_, h) => l * H + h).every((i) => d.dAlpha0[i] === 0 && d.js[i] === 0));
  const rate = (x: Float32Array) => Array.from(x, (v, l) => `${blockShort(l)} ${Math.round(v * 100)}%`).join(', ');
  const grid = (f: (i: number) => number) => Array.from({ length: L }, (_, l) => Array.from({ length: H }, (_, h) => f(l * H + h)));
  const readout = (g: 'dalpha' | 'js', c: Cell) => {
    const i = c.row * H + c.col;
    return `${blockShort(c.row)}H${c.col}: α₀ unsteered ${fixed(u.sinks.alpha0[i], 3)}, steered ${fixed(s.sinks.alpha0[i], 3)}; ${g === 'dalpha' ? `Δα₀ ${d.dAlpha0[i] === 0 ? '0 exactly' : signed(d.dAlpha0[i], 4)}` : `JS ${d.js[i] === 0 ? '0 exactly' : d.js[i].toPrecision(3)} nats`}`;
  };
  const figure = (g: 'dalpha' | 'js') => (
    <figure className="compare-grid" data-testid={`sinks-steer-${g}`}>
      <figcaption><b>{g === 'dalpha' ? 'Δα₀ = α₀(steered) − α₀(unsteered) per head' : 'Jensen–Shannon divergence of the key distributions per head'}</b></figcaption>
      <Heatmap
        values={g === 'dalpha' ? d.dAlpha0 : d.js} nRows={L} nCols={H} color={g === 'dalpha' ? dColor : jColor} rowLabels={rows} colLabels={heads}
        rowTitle={BLOCK_AXIS} colTitle="head" rowsUpward cellWidth={{ min: 24, max: 56 }} cellHeight={24} colIndex={null}
        annotate={(c) => { const v = (g === 'dalpha' ? d.dAlpha0 : d.js)[c.row * H + c.col]; return v === 0 ? '0' : g === 'dalpha' ? (Math.abs(v) >= 0.005 ? v.toFixed(2) : null) : (v >= 0.0005 ? v.toFixed(3) : null); }}
        active={hover?.grid === g ? hover.c : null} onHover={(c) => setHover(c ? { grid: g, c } : null)}
        label={g === 'dalpha' ? 'Change in attention to position 0, steered vs unsteered' : 'JS divergence of key distributions, steered vs unsteered'} testId={`sinks-steer-${g}-heatmap`}
      />
      <ColorLegend color={g === 'dalpha' ? dColor : jColor} domain={g === 'dalpha' ? [-(ra.m || 1), ra.m || 1] : [0, rj.m || 1]}
        title={g === 'dalpha' ? `Δα₀ (${rangeNote(ra, mode, 'Δα₀')}; grey: exactly 0)` : `JS, nats (${rangeNote(rj, mode, 'JS').replace(/^scale ±/, 'scale 0 to ')}; grey: exactly 0)`}
        lowNote={g === 'dalpha' ? 'steered attends less to token 0' : undefined} highNote={g === 'dalpha' ? 'steered attends more' : undefined} testId={`sinks-steer-${g}-legend`} />
    </figure>
  );
  return (
    <section className="compare-section" aria-label="sink divergence, steered vs unsteered" data-testid="sinks-steer">
      <div className="view-head">
        <h3>Sink divergence: steered vs unsteered</h3>
        <ExportButtons
          name={`sinks-steered-${r.modelLabel}`}
          json={() => ({ model: r.modelLabel, prompt: r.prompt, interventions: r.steering.map((x) => `#${x.n} ${x.draft.type} at ${x.draft.hook}`), eps: s.sinks.eps, alpha0: grid((i) => s.sinks.alpha0[i]), alpha0_unsteered: grid((i) => u.sinks.alpha0[i]), sink_dalpha0: grid((i) => d.dAlpha0[i]), sink_js: grid((i) => d.js[i]), sink_rate: Array.from(s.sinks.sinkRate), sink_rate_unsteered: Array.from(u.sinks.sinkRate) })}
          csv={() => [['block', 'head', 'alpha0 unsteered', 'alpha0 steered', 'dalpha0 (steered − unsteered)', 'JS (nats)'], ...grid((i) => i).flat().map((i) => [blockShort(Math.floor(i / H)), i % H, u.sinks.alpha0[i], s.sinks.alpha0[i], d.dAlpha0[i], d.js[i]])]}
        />
      </div>
      <p className="muted" data-testid="sinks-steer-summary">
        The same prompt with and without the enabled interventions ({r.steering.map((x) => `#${x.n} ${x.draft.type} at ${x.draft.hook}`).join(', ')}).{' '}
        {untouched.length ? `Blocks ${untouched.map(blockShort).join(', ')}: exactly 0 (the steering does not reach them).` : 'Every block moves.'}
      </p>
      <p className="muted" data-testid="sinks-steer-rates">Sink rate (heads with α₀ &gt; {s.sinks.eps}): unsteered {rate(u.sinks.sinkRate)}; steered {rate(s.sinks.sinkRate)}</p>
      <div className="compare-row">{figure('dalpha')}{figure('js')}</div>
      <p className="muted readout-line" data-testid="sinks-steer-readout">{hover ? readout(hover.grid, hover.c) : 'Point at a head to read both runs.'}</p>
    </section>
  );
}
