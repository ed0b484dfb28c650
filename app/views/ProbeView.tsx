import { useEffect, useRef, useState } from 'react';
import { useStore } from '../store';
import { loadProbeExample, PROBE_EXAMPLES, runProbe, sendProbeDirection } from '../actions/probe';
import { LabelledSetSource } from '../components/LabelledSetSource';
import { LineChart, type Series } from '../components/LineChart';
import { DataTable } from '../components/DataTable';
import { ExportButtons } from '../components/ExportButtons';
import { ResultStatus, StaleOverlay, useSetStaleParts } from '../components/ResultStatus';
import { fixed } from '../lib/format';
import { residName, residShort, RESID_AXIS } from '../lib/layer_names';
import type { ProbeDisplay } from '../store/probe';
import { waitingFor } from '../lib/job_rules';
import { ProbeUnderPanel } from './ProbeUnderPanel';

const countLines = (t: string) => t.split(/\r?\n/).filter((x) => x.trim()).length;

/** The set being probed: an example or a file (.json/.jsonl/.csv), or texts pasted one per line, and the settings. */
function ProbeForm() {
  const set = useStore((s) => s.probeSettings);
  const update = useStore((s) => s.setProbeSettings);
  const job = useStore((s) => s.job);
  const ready = useStore((s) => s.modelStatus === 'ready');
  useEffect(() => {
    if (!useStore.getState().probeSettings.positive) void loadProbeExample(PROBE_EXAMPLES[0].file);
  }, []);
  const className = (i: 0 | 1, name: string) => update({ classes: i === 0 ? [name, set.classes[1]] : [set.classes[0], name] });
  return (
    <form className="settings probe-form" onSubmit={(e) => { e.preventDefault(); if (!job) void runProbe(); }}>
      <LabelledSetSource prefix="probe" />
      <div className="probe-sets">
        {([1, 0] as const).map((i) => (
          <div key={i}>
            <label>Class {i} ({i === 1 ? 'positive' : 'negative'})
              <input data-testid={`probe-class-${i}`} className="short" value={set.classes[i]} onChange={(e) => className(i, e.target.value)} />
            </label>
            <textarea
              rows={6} data-testid={i === 1 ? 'probe-positive' : 'probe-negative'} spellCheck={false}
              value={i === 1 ? set.positive : set.negative}
              onChange={(e) => update(i === 1 ? { positive: e.target.value, source: 'pasted' } : { negative: e.target.value, source: 'pasted' })}
            />
            <span className="muted">{countLines(i === 1 ? set.positive : set.negative)} prompts, one per line</span>
          </div>
        ))}
      </div>
      <div className="row">
        <label title={'"last" or a token index (negative counts from the end: -1 = last)'}>Position
          <input data-testid="probe-position" className="short" value={set.position} onChange={(e) => update({ position: e.target.value })} spellCheck={false} />
        </label>
        <label title="k of k-fold cross-validation (lowered to the smaller set's size)">Folds
          <input type="number" min={2} max={20} className="short" data-testid="probe-folds" value={set.folds} onChange={(e) => update({ folds: Number(e.target.value) })} />
        </label>
        <label title="Seed of the fold assignment and of the control's label permutation">Seed
          <input type="number" className="short" value={set.seed} onChange={(e) => update({ seed: Number(e.target.value) })} />
        </label>
        <button type="submit" className="primary" data-testid="run-probe" title={waitingFor(job)} disabled={!!job || !ready}>Run probes</button>
      </div>
    </form>
  );
}

/** Accuracy, AUROC and the control accuracy against the layer, with the first layer at 95 % of the best marked. */
function ProbeChart({ p, svgRef }: { p: ProbeDisplay; svgRef: React.RefObject<SVGSVGElement | null> }) {
  const r = p.result;
  const rows = r.accuracy.map((_, i) => i);
  const series: Series[] = [
    { name: 'accuracy', color: '#0969da', points: rows.map((i) => [i, r.accuracy[i]]) },
    { name: 'AUROC', color: '#bc4c00', points: rows.map((i) => [i, r.auroc[i]]) },
    { name: 'control accuracy', color: '#6e7781', dashed: true, points: rows.map((i) => [i, r.controlAccuracy[i]]) },
  ];
  return (
    <LineChart
      series={series} legend xTicks={rows} xTickFormat={residShort} xMarks={[{ x: r.firstLayer95, label: '95 % of best', color: '#1a7f37' }]} xLabel={`${RESID_AXIS}: embed, then after block L0, L1, …`} yLabel="held-out score"
      svgRef={svgRef} width={640} height={280} label="probe accuracy, AUROC and control accuracy against the layer" testId="probe-chart"
    />
  );
}

/**
 * Linear probes per layer (DESIGN.md §3; Alain & Bengio arXiv 1610.01644; Hewitt & Liang 2019):
 * held-out accuracy and AUROC of a logistic-regression probe on the residual stream at every
 * layer, the shuffled-label control, the first layer reaching 95 % of the best accuracy, and the
 * difference-of-means direction of any layer sent to the vector library.
 */
export function ProbeView() {
  const p = useStore((s) => s.probe);
  const loaded = useStore((s) => s.probeSettings.positive.trim() !== '' && s.probeSettings.negative.trim() !== '');
  const info = useStore((s) => s.info);
  const showTables = useStore((s) => s.showTables);
  const svg = useRef<SVGSVGElement | null>(null);
  const [row, setRow] = useState<number | null>(null);
  const [sent, setSent] = useState<string | null>(null);
  const r = p?.result;
  const stale = useSetStaleParts(p);
  const nLayers = r ? r.hooks.length - 1 : info?.nLayers ?? 0;
  const pickRow = row ?? r?.firstLayer95 ?? 0;
  const label = (i: number) => residShort(i);
  return (
    <section className="view" data-testid="probe-view">
      <header className="view-head">
        <h2>Linear probes</h2>
        <p className="muted">
          Where the difference between two sets of prompts becomes <b>linearly readable</b>: at one token of each prompt, the residual stream of every layer
          (embed, then the output of each block L0, L1, …) is classified by an L2 logistic regression, scored on held-out folds. The control curve is the same
          probe on shuffled labels (it should stay at 0.5: a probe that beats it there memorises). Uses the experiment's chat turn (template, system prompt, tools).
        </p>
      </header>
      <ProbeForm />
      {p && r ? (
        <>
          <div className="view-head">
            <p className="muted" data-testid="probe-caption">
              {p.modelLabel} · {p.source} · {r.nPositive} “{r.classes[1]}” vs {r.nNegative} “{r.classes[0]}” prompts · read at {r.position === 'last' ? 'the last token' : `token ${r.position}`}
              {' '}(“{[...new Set(r.readTokens)].slice(0, 3).join('”, “')}”{new Set(r.readTokens).size > 3 ? ', …' : ''}) · {r.folds}-fold CV, λ = {r.l2} ·
              {' '}first layer at 95 % of the best accuracy ({fixed(r.bestAccuracy, 3)}): <b data-testid="probe-first-95" data-row={r.firstLayer95}>{residName(r.firstLayer95, nLayers)}</b>
            </p>
            <ExportButtons
              name={`probes-${p.modelLabel}`}
              json={() => ({ model: p.modelLabel, set: p.source, positive: p.positive, negative: p.negative, ...r })}
              csv={() => [['layer', 'hook', 'held-out accuracy', 'held-out AUROC', 'control accuracy (shuffled labels)', 'control AUROC', 'norm of mean(positive) − mean(negative)'],
                ...r.hooks.map((h, i) => [residShort(i), h, r.accuracy[i], r.auroc[i], r.controlAccuracy[i], r.controlAuroc[i], Math.hypot(...r.directions[i])])]}
              figure={() => svg.current && ({
                title: `Linear probes per layer · ${p.modelLabel}`,
                caption: [`“${r.classes[1]}” (${r.nPositive}) vs “${r.classes[0]}” (${r.nNegative}) from ${p.source}, read at ${r.position === 'last' ? 'the last token' : `token ${r.position}`}; ${r.folds}-fold held-out accuracy and AUROC of an L2 logistic regression (λ = ${r.l2}); control = shuffled labels`,
                  `first layer at 95 % of the best accuracy (${fixed(r.bestAccuracy, 3)}): ${residName(r.firstLayer95, nLayers)}`],
                panels: [{ kind: 'svg', element: svg.current }],
              })}
            />
          </div>
          <ResultStatus model={p.modelLabel} computedWith={p.computedWith} stale={stale} names={{ prompt: 'the prompt set or its chat turn' }} noun="probe" rerun={{ label: 'Run probes', run: () => void runProbe() }} testId="probe-status" />
          <div className="view-body">
            <div className={`figure${stale.some((x) => x !== 'model') ? ' stale' : ''}`}>
              {stale.some((x) => x !== 'model') && <StaleOverlay testId="probe-stale" action="run the probes again" />}
              <ProbeChart p={p} svgRef={svg} />
            </div>
          </div>
          <div className="row">
            <label>Direction of layer
              <select data-testid="probe-direction-row" value={pickRow} onChange={(e) => { setRow(Number(e.target.value)); setSent(null); }}>
                {r.hooks.map((h, i) => <option key={h} value={i}>{label(i)} · {h} · accuracy {fixed(r.accuracy[i], 2)}</option>)}
              </select>
            </label>
            <button type="button" className="small" data-testid="probe-send-direction" onClick={() => { const e = sendProbeDirection(pickRow); if (e) setSent(e.name); }}>
              Send mean({r.classes[1]}) − mean({r.classes[0]}) to the vector library
            </button>
            {sent && <span className="note-ok" role="status" data-testid="probe-sent">Added “{sent}” to the library (Vectors tab).</span>}
          </div>
          {showTables && (
            <DataTable caption="Held-out probe scores by layer" rowHeader="layer" rowLabels={r.hooks.map((_, i) => label(i))} colLabels={['accuracy', 'AUROC', 'control accuracy', 'control AUROC']}
              cell={(i, j) => fixed([r.accuracy, r.auroc, r.controlAccuracy, r.controlAuroc][j][i], 3)} cellTestId={(i, j) => `probe-cell-${i}-${j}`} testId="probe-table" />
          )}
        </>
      ) : <p className="placeholder" data-testid="probe-empty">{loaded ? 'Run the probes' : 'Load an example or your own labelled prompts and run the probes'} to see at which layer the two sets become linearly separable.</p>}
      {loaded && <ProbeUnderPanel />}
    </section>
  );
}
