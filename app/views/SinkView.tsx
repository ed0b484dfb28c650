import { useMemo, useRef, useState } from 'react';
import { interpolateBlues, interpolateYlOrRd, scaleSequential } from 'd3';
import { useStore } from '../store';
import { SteeredTag } from '../components/SteeredTag';
import { ResultStatus, StaleOverlay, useStaleParts } from '../components/ResultStatus';
import { openPattern } from '../actions/analyse';
import { Heatmap, type Cell } from '../components/Heatmap';
import { ColorLegend } from '../components/ColorLegend';
import { BarChart } from '../components/BarChart';
import { DataTable } from '../components/DataTable';
import { ExportButtons } from '../components/ExportButtons';
import type { AnalysisResult, PatternResult } from '../store/results';
import { fixed, positionToken, quotedToken, visibleToken } from '../lib/format';
import { blockName, blockShort, BLOCK_AXIS } from '../lib/layer_names';
import { analyse } from '../actions/analyse';
import { useWaitingFor } from '../components/useWaitingFor';
import { SteeredSinkDivergence } from '../components/SteeredSinkDivergence';
import { AllHeadsPanel } from './AllHeadsPanel';

/** The sink threshold ε (the runner's `--eps`): a new value reruns the analysis, whose sink rates depend on it. */
function SinkEpsField() {
  const eps = useStore((s) => s.sinkEps);
  const setEps = useStore((s) => s.setSinkEps);
  const busy = useStore((s) => s.job !== null);
  const waiting = useWaitingFor();
  const [text, setText] = useState(String(eps));
  const [prev, setPrev] = useState(eps);
  if (eps !== prev) { setPrev(eps); setText(String(eps)); }
  const v = Number(text);
  const valid = text.trim() !== '' && v > 0 && v < 1;
  const apply = () => { if (valid && v !== eps && !busy) { setEps(v); void analyse(); } };
  return (
    <div className="row settings">
      <label>Sink threshold ε
        <input data-testid="sink-eps" type="number" min={0.01} max={0.99} step={0.05} value={text} onChange={(e) => setText(e.target.value)} onKeyDown={(e) => { if (e.key === 'Enter') apply(); }} aria-invalid={!valid} />
      </label>
      <button type="button" className="small" data-testid="sink-eps-apply" onClick={apply} title={waiting} disabled={busy || !valid || v === eps}>Apply</button>
      {!valid && <span className="field-error" role="status">ε must be a number between 0 and 1 (exclusive)</span>}
    </div>
  );
}

const alphaColor = scaleSequential(interpolateBlues).domain([0, 1]);
const patternColor = scaleSequential(interpolateYlOrRd).domain([0, 1]);

/** One head's attention pattern [query × key] with token labels and a readout. */
function PatternPanel({ r, p }: { r: AnalysisResult; p: PatternResult }) {
  const a = r.analysis;
  const T = a.ids.length;
  const showTables = useStore((s) => s.showTables);
  const [hover, setHover] = useState<Cell | null>(null);
  const labels = a.tokens.map(visibleToken);
  const rows = () => Array.from({ length: T }, (_, i) => Array.from(p.data.subarray(i * T, (i + 1) * T)));
  return (
    <section className="subview" data-testid="pattern-view" data-layer={p.layer} data-head={p.head}>
      <header className="view-head">
        <h3>Attention pattern · {blockName(p.layer, 'attn.hook_pattern')}, head {p.head}</h3>
        <p className="muted">A[query, key]: row = the token attending, column = the token attended to. Sink position of this head: {a.sinks.sinkPos[p.layer * a.nHeads + p.head]}.</p>
        <ExportButtons
          name={`pattern-L${p.layer}H${p.head}-${r.modelLabel}`}
          json={() => ({ model: r.modelLabel, prompt: r.prompt, layer: p.layer, head: p.head, tokens: a.tokens, pattern: rows() })}
          csv={() => [['query \\ key — attention probability A[query, key]', ...a.tokens.map((t, j) => `${j}:${t}`)], ...rows().map((row, i) => [`${i}:${a.tokens[i]}`, ...row])]}
          figure={() => ({
            title: `Attention pattern · ${blockName(p.layer, 'attn.hook_pattern')}, head ${p.head} · ${r.modelLabel}`,
            caption: ['A[query, key]: rows are the tokens attending, columns the tokens attended to', `prompt: “${r.prompt}”`],
            panels: [{ kind: 'heatmap', values: p.data, nRows: T, nCols: T, rowLabels: labels.map((t, i) => `${t} ${i}`), colLabels: labels, rowTitle: 'query', colTitle: 'key', scale: { color: patternColor, domain: [0, 1], title: 'attention probability' } }],
          })}
        />
      </header>
      <div className="view-body">
        <div className="figure">
          <Heatmap
            values={p.data} nRows={T} nCols={T} color={patternColor}
            rowLabels={labels.map((t, i) => `${t} ${i}`)} colLabels={labels} rowTitle="query" colTitle="key"
            cellWidth={{ min: 8, max: 34 }} cellHeight="square" active={hover} onHover={(c) => c && setHover(c)}
            label={`Attention pattern of ${blockShort(p.layer)}, head ${p.head}`} testId="pattern-heatmap"
          />
          <ColorLegend color={patternColor} domain={[0, 1]} title="attention probability" testId="pattern-legend" />
        </div>
        <aside className="readout" data-testid="pattern-readout">
          {hover ? (
            <dl>
              <dt>Query</dt><dd className="mono">{positionToken(hover.row, a.tokens[hover.row])}</dd>
              <dt>Key</dt><dd className="mono">{positionToken(hover.col, a.tokens[hover.col])}</dd>
              <dt>A</dt><dd className="mono big" data-testid="pattern-readout-value">{fixed(p.data[hover.row * T + hover.col], 4)}</dd>
            </dl>
          ) : <p className="muted">Point at a cell to read it.</p>}
        </aside>
      </div>
      {showTables && (
        <DataTable
          caption={`Attention pattern, ${blockName(p.layer, 'attn.hook_pattern')}, head ${p.head} (rows: queries, columns: keys)`}
          rowHeader="query" rowLabels={labels.map((t, i) => `${i} ${t}`)} colLabels={labels.map((t, j) => `${j} ${t}`)}
          cell={(i, j) => fixed(p.data[i * T + j], 4)} cellTestId={(i, j) => `pattern-cell-${i}-${j}`} testId="pattern-table"
        />
      )}
    </section>
  );
}

/**
 * Attention sinks (Gu et al. 2024, arXiv 2410.10781): α_0 per layer × head, the sink rate per layer,
 * each head's sink position; clicking a head opens its attention pattern; All heads shows every
 * head's pattern of one layer at once. With interventions on, the sink divergence of the steered run
 * against the unsteered one (SteeredSinkDivergence).
 */
export function SinkView() {
  const r = useStore((s) => s.result);
  const stale = useStaleParts(r);
  const pattern = useStore((s) => s.pattern);
  const selected = useStore((s) => s.selectedHead);
  const showTables = useStore((s) => s.showTables);
  const busy = useStore((s) => s.job !== null);
  const [hover, setHover] = useState<Cell | null>(null);
  const rateSvg = useRef<SVGSVGElement | null>(null);
  const layerLabels = useMemo(() => Array.from({ length: r?.analysis.nLayers ?? 0 }, (_, l) => blockShort(l)), [r]);
  if (!r) return <p className="placeholder">Analyse a prompt to see which heads park their attention on a sink token.</p>;
  const a = r.analysis, s = a.sinks, H = a.nHeads, L = a.nLayers;
  const outdated = stale.some((p) => p !== 'model');
  const headLabels = Array.from({ length: H }, (_, h) => `H${h}`);
  const grid = (f: (l: number, h: number) => number) => Array.from({ length: L }, (_, l) => Array.from({ length: H }, (_, h) => f(l, h)));
  const open = (c: Cell) => { if (!busy) void openPattern(c.row, c.col); };
  const cur = hover ?? (selected ? { row: selected.layer, col: selected.head } : null);
  return (
    <section className="view" data-testid="sink-view">
      <header className="view-head">
        <h2>Attention sinks<SteeredTag steering={r.steering} testId="sinks-steered-tag" /></h2>
        <p className="muted">
          α₀ = mean over queries of the attention paid to position 0 ({quotedToken(a.tokens[0])}); a head is a sink head when α₀ &gt; ε = {s.eps}.
          Numbers in cells: α₀ and the head's sink position k (the key receiving the most total attention). Click a head for its pattern.
        </p>
        <SinkEpsField />
        <ResultStatus model={r.modelLabel} computedWith={r.computedWith} stale={stale} computedFor={r.prompt} testId="sinks-status" />
        <ExportButtons
          name={`sinks-${r.modelLabel}`}
          json={() => ({ model: r.modelLabel, prompt: r.prompt, tokens: a.tokens, eps: s.eps, alpha0: grid((l, h) => s.alpha0[l * H + h]), sinkPosition: grid((l, h) => s.sinkPos[l * H + h]), sinkValueNorm: grid((l, h) => s.sinkValueNorm[l * H + h]), sinkRate: Array.from(s.sinkRate) })}
          csv={() => [['block', 'head', 'alpha0 (mean attention to position 0)', 'sink_position (key with the most total attention)', 'sink_token', 'sink_value_norm (‖v‖ at the sink position)'], ...grid((l, h) => l * H + h).flat().map((i) => [blockShort(Math.floor(i / H)), i % H, s.alpha0[i], s.sinkPos[i], a.tokens[s.sinkPos[i]], s.sinkValueNorm[i]])]}
          figure={() => ({
            title: `Attention sinks · ${r.modelLabel}`,
            caption: [`α₀ = mean over queries of the attention to position 0 (${quotedToken(a.tokens[0])}), by layer and head; cells: α₀ and the head's sink position k`, `sink rate = fraction of heads with α₀ > ε = ${s.eps} · prompt: “${r.prompt}”`],
            panels: [
              { kind: 'heatmap', values: s.alpha0, nRows: L, nCols: H, rowLabels: layerLabels, colLabels: headLabels, rowTitle: BLOCK_AXIS, colTitle: 'head', annotate: (l, h) => `${fixed(s.alpha0[l * H + h], 2)}\nk=${s.sinkPos[l * H + h]}`, scale: { color: alphaColor, domain: [0, 1], title: 'α₀ (mean attention to position 0)' } },
              ...(rateSvg.current ? [{ kind: 'svg' as const, title: 'Sink rate per layer', element: rateSvg.current }] : []),
            ],
          })}
        />
      </header>
      <div className="view-body">
        <div className={`figure${outdated ? ' stale' : ''}`}>
          {outdated && <StaleOverlay testId="sinks-stale" />}
          <Heatmap
            values={s.alpha0} nRows={L} nCols={H} color={alphaColor}
            rowLabels={layerLabels} colLabels={headLabels} colIndex={null} rowTitle={BLOCK_AXIS} colTitle="head"
            cellWidth={{ min: 40, max: 84 }} cellHeight={40}
            annotate={({ row, col }) => `${fixed(s.alpha0[row * H + col], 2)}\nk=${s.sinkPos[row * H + col]}`}
            active={hover} selected={selected ? { row: selected.layer, col: selected.head } : null}
            onHover={setHover} onSelect={open}
            label="Attention to position 0 (α₀) by layer and head" testId="sink-heatmap"
          />
          <ColorLegend color={alphaColor} domain={[0, 1]} title="α₀ (mean attention to position 0)" testId="sink-legend" />
        </div>
        <div className="side">
          <aside className="readout" data-testid="sink-readout">
            {cur ? (
              <dl>
                <dt>Head</dt><dd>{blockShort(cur.row)}H{cur.col} · blocks.{cur.row}.attn.hook_pattern, head {cur.col}</dd>
                <dt>α₀</dt><dd className="mono big" data-testid="sink-readout-alpha0">{fixed(s.alpha0[cur.row * H + cur.col], 4)}</dd>
                <dt>Sink position</dt><dd className="mono">{positionToken(s.sinkPos[cur.row * H + cur.col], a.tokens[s.sinkPos[cur.row * H + cur.col]])}</dd>
                <dt>‖v‖ at sink</dt><dd className="mono">{fixed(s.sinkValueNorm[cur.row * H + cur.col], 3)}</dd>
              </dl>
            ) : <p className="muted">Point at a head to read it; click to open its pattern.</p>}
          </aside>
          <BarChart
            labels={layerLabels} values={s.sinkRate} domain={[0, 1]} xLabel={BLOCK_AXIS} yLabel={`sink rate (α₀ > ${s.eps})`}
            format={(v) => fixed(v, 2)} svgRef={rateSvg} label="Sink rate per layer" testId="sink-rate-chart"
          />
        </div>
      </div>
      {showTables && (
        <>
          <DataTable caption="α₀ by layer and head" rowHeader="block" rowLabels={layerLabels} colLabels={headLabels}
            cell={(l, h) => fixed(s.alpha0[l * H + h], 4)} cellTestId={(l, h) => `alpha0-cell-${l}-${h}`} testId="alpha0-table" />
          <DataTable caption="Sink position (key receiving the most total attention) by layer and head" rowHeader="block" rowLabels={layerLabels} colLabels={headLabels}
            cell={(l, h) => String(s.sinkPos[l * H + h])} cellTestId={(l, h) => `sinkpos-cell-${l}-${h}`} testId="sinkpos-table" />
          <DataTable caption={`Sink rate (fraction of heads with α₀ > ${s.eps}) by layer`} rowHeader="" rowLabels={['sink rate']} colLabels={layerLabels}
            cell={(_, l) => fixed(s.sinkRate[l], 4)} cellTestId={(_, l) => `sink-rate-${l}`} testId="sink-rate-table" />
        </>
      )}
      {r.baseline && <SteeredSinkDivergence r={{ ...r, baseline: r.baseline }} />}
      <AllHeadsPanel r={r} />
      {pattern && <PatternPanel r={r} p={pattern} />}
    </section>
  );
}
