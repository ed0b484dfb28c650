import { SharedPrefixNote } from '../components/SharedPrefixNote';
import { useEffect, useRef } from 'react';
import { useStore } from '../store';
import { ReportFigure } from '../components/ReportFigure';
import { reportPanels } from '../lib/report_panels';
import { ReportPairSection } from '../components/ReportPairSection';
import { ExportButtons } from '../components/ExportButtons';
import { ResultStatus, StaleOverlay, usePairStaleParts } from '../components/ResultStatus';
import { DataTable } from '../components/DataTable';
import { fixed, positionToken, quotedToken, signed, visibleToken } from '../lib/format';
import { hookName, residInterval, residName, residShort } from '../lib/layer_names';
import { runReport } from '../actions/report';
import { loadProbeExample, PROBE_EXAMPLES } from '../actions/probe';
import { WindowSetupFields } from '../components/WindowSetupFields';
import { DenominatorWarning } from '../components/DenominatorWarning';
import { LabelledSetSource } from '../components/LabelledSetSource';
import { reportJson } from '../../workers/shared';
import type { ReportDisplay } from '../store/report';
import { KNOWN_CORRUPTIONS, pairFor, promptMismatch } from '../lib/patching_prompts';
import { waitingFor } from '../lib/job_rules';
import { changeableMissing } from '../lib/changeable_note';

/** A step interval (the point of no return's): " [2, 4]". */
const interval = (i: readonly [number, number] | null) => (i ? ` [${fixed(i[0], 1)}, ${fixed(i[1], 1)}]` : '');
/** A residual-row interval in layer names: " [embed, L3]". */
const rows = (i: readonly [number, number] | null) => (i ? ` ${residInterval(i)}` : '');

const lineCount = (t: string) => t.split(/\r?\n/).filter((x) => x.trim()).length;

/**
 * The report's setup: threshold; the changeable panel's window (the Window view's setup, edited
 * here too) and the optional labelled prompt set (the Probes view's set). The prompts are the
 * Patching view's.
 */
function ReportForm() {
  const set = useStore((s) => s.reportSettings);
  const update = useStore((s) => s.setReportSettings);
  const prompts = useStore((s) => s.patchingSettings);
  const probe = useStore((s) => s.probeSettings);
  const nIv = useStore((s) => s.interventions.length);
  const setView = useStore((s) => s.setView);
  const job = useStore((s) => s.job);
  const info = useStore((s) => s.info);
  useEffect(() => {
    if (!useStore.getState().probeSettings.positive) void loadProbeExample(PROBE_EXAMPLES[0].file);
  }, []);
  return (
    <form className="settings patching-form" onSubmit={(e) => { e.preventDefault(); if (!job) void runReport(); }}>
      <p className="muted">
        Clean <span className="mono">“{prompts.clean}”</span>, corrupted <span className="mono">“{prompts.corrupt}”</span>{' '}
        <button type="button" className="small" onClick={() => setView('patching')}>Edit in Patching…</button>
      </p>
      <PromptMismatchNote />
      <fieldset className="report-part">
        <legend><label><input type="checkbox" data-testid="report-use-window" checked={set.changeable} onChange={(e) => update({ changeable: e.target.checked })} /> Changeable: the intervention window</label></legend>
        {set.changeable && (
          <div className="row">
            <WindowSetupFields prefix="report-window" />
            {nIv > 0 && <span className="muted">(the Window view’s setup)</span>}
          </div>
        )}
      </fieldset>
      <fieldset className="report-part">
        <legend><label><input type="checkbox" data-testid="report-use-set" checked={set.useSet} onChange={(e) => update({ useSet: e.target.checked })} /> Prompt set: a probe per layer, and bootstrap intervals over its prompts</label></legend>
        {set.useSet && (
          <>
            <LabelledSetSource prefix="report-set" />
            <p className="muted" data-testid="report-set-size">
              {lineCount(probe.positive)} “{probe.classes[1]}” + {lineCount(probe.negative)} “{probe.classes[0]}” prompts (each patched against the other class’s prompt at the same index when their token lengths agree){' '}
              <button type="button" className="small" onClick={() => setView('probe')}>Edit in Probes…</button>
            </p>
          </>
        )}
      </fieldset>
      <div className="row">
        <label title="|Δ| in nats the lens margin must reach (with its final sign) to count as visible">Visible at |Δ| ≥
          <input data-testid="report-threshold" className="short" type="number" step="0.05" min="0" value={set.threshold} onChange={(e) => update({ threshold: Number(e.target.value) })} />
        </label>
        <button type="submit" className="primary" data-testid="run-report" title={waitingFor(job)} disabled={!!job || !info}>Build report</button>
      </div>
    </form>
  );
}

/**
 * A warning when the experiment's prompt is not the Patching view's pair (the report would measure
 * one prompt's futures on another prompt's patching pair), with the one-click fix: the experiment's
 * prompt becomes the clean prompt (with its known corruption, else the Patching view opens to write one).
 */
function PromptMismatchNote() {
  const experiment = useStore((s) => s.prompt);
  const good = useStore((s) => s.good.value);
  const bad = useStore((s) => s.bad.value);
  const prompts = useStore((s) => s.patchingSettings);
  const m = promptMismatch(experiment, prompts.clean, prompts.corrupt);
  if (!m) return null;
  const follow = () => {
    const s = useStore.getState();
    const pair = pairFor(s.prompt, s.patchingSettings);
    s.setPatchingSettings({ clean: pair.clean, corrupt: pair.corrupt });
    if (pair.corruptNeeded) s.setView('patching');
  };
  return (
    <p className="warn report-mismatch" role="alert" data-testid="report-prompt-mismatch">
      The experiment’s prompt is <span className="mono">“{m.experiment}”</span> (futures “{good}” vs “{bad}”), but the report would patch
      <span className="mono"> “{m.clean}”</span> against <span className="mono">“{m.corrupt}”</span>: its causal panel would answer for another prompt than its futures were chosen for.{' '}
      <button type="button" className="small" data-testid="report-follow-prompt" onClick={follow}>
        {KNOWN_CORRUPTIONS[m.experiment] !== undefined ? 'Patch the experiment’s prompt' : 'Patch the experiment’s prompt (write its corrupted version in Patching)'}
      </button>
    </p>
  );
}

/**
 * The visible answer in plain words (DESIGN.md §3; studies/report.ts firstStable): the layer half
 * reads the logit lens at the last prompt position down the layers, the position half reads the
 * final layer along the prompt (what the model would predict after each token). Each names where
 * the margin first reaches |Δ| ≥ threshold toward the final answer, keeping that sign after it.
 */
export function visibleWhy(d: ReportDisplay): string {
  const r = d.result, L = r.nLayers, tokens = r.patching.cleanTokens, main = r.prompts[0];
  const t = r.threshold, last = tokens.length - 1;
  const answer = quotedToken(main.finalSign > 0 ? d.good.value : d.bad.value);
  const parts: string[] = [];
  if (r.visible.layer !== null) {
    parts.push(r.nPrompts > 1
      ? `Averaged over the ${r.nPrompts} prompts, the logit-lens margin at each prompt’s last position, toward its own final answer, reaches |Δ| ≥ ${t} at ${residShort(r.visible.layer)} and keeps its sign at every later layer.`
      : `At the last prompt position (${positionToken(last, tokens[last] ?? '')}), the logit-lens margin favours ${answer} (the final answer) by |Δ| ≥ ${t} from ${residShort(r.visible.layer)}${r.visible.layer === L ? ' (the final layer)' : ''} on, keeping that sign through every later layer.`);
  }
  if (r.visible.token !== null) {
    parts.push(`Read at the final layer along the ${r.nPrompts > 1 ? 'clean ' : ''}prompt instead (the model’s next-token prediction after each token), it favours ${answer} by |Δ| ≥ ${t} from position ${positionToken(r.visible.token, tokens[r.visible.token] ?? '')} on${r.visible.token < last ? ', keeping that sign to the last position' : ' (the last position)'}.`);
  } else if (r.visible.layer !== null) {
    parts.push(`Read at the final layer along the ${r.nPrompts > 1 ? 'clean ' : ''}prompt, it never reaches |Δ| ≥ ${t} with that sign kept to the last position.`);
  }
  return parts.join(' ');
}

/** The three answers in words (dimmed when `stale`: they no longer answer the setup as edited). */
function Answers({ d, missing, stale }: { d: ReportDisplay; missing: string; stale: boolean }) {
  const r = d.result, L = r.nLayers, tokens = r.patching.cleanTokens;
  const why = visibleWhy(d);
  return (
    <dl className={`summary report-answers${stale ? ' stale' : ''}`} data-testid="report-answers">
      <dt>Visible</dt>
      <dd data-testid="report-visible" data-layer={r.visible.layer ?? 'none'} data-token={r.visible.token ?? 'none'}>
        {r.visible.layer === null ? `the lens margin never keeps its final sign at |Δ| ≥ ${r.threshold}` : `${residName(r.visible.layer, L)}${rows(r.visible.interval)}`}
        {r.visible.token !== null && <> · from position {r.visible.token} (token <span className="mono">{quotedToken(tokens[r.visible.token] ?? '')}</span>)</>}
        {why && <span className="muted" data-testid="report-visible-why"> · {why}</span>}
      </dd>
      <dt>Causal</dt>
      <dd data-testid="report-causal" data-layer={r.causal.layer ?? 'none'} data-positions={r.causal.positions.join(' ')}>
        {r.causal.layer === null ? `no hook_resid_pre patch after the embeddings recovers r ≥ ${r.causalRecovery}` : <>{hookName(`blocks.${r.causal.layer}.hook_resid_pre`)} (patched){rows(r.causal.interval)} · positions {r.causal.positions.map((t) => positionToken(t, tokens[t])).join(', ')}
          {r.causal.positions.every((t) => r.causal.trivial.positions.includes(t)) ? ' (still at the tokens that differ: not yet moved to another position)' : ''}</>}
        <span className="muted" data-testid="report-causal-trivial"> · the embed row (blocks.0.hook_resid_pre) is left out: there only the tokens that differ ({r.causal.trivial.positions.map((t) => positionToken(t, tokens[t])).join(', ')}) change, and patching one is the clean prompt’s token itself (r = {fixed(r.causal.trivial.recovery, 2)} by construction)</span>
      </dd>
      <dt>Visible (probe)</dt>
      <dd data-testid="report-probe" data-layer={r.probe?.firstLayer95 ?? 'none'}>
        {r.probe ? <>{residName(r.probe.firstLayer95, L)}{rows(r.probe.interval)}: the first layer where a probe’s held-out accuracy reaches 95 % of its best ({fixed(Math.max(...r.probe.accuracy), 3)}) · “{r.probe.classes[1]}” ({r.probe.nPositive}) vs “{r.probe.classes[0]}” ({r.probe.nNegative}), {r.probe.folds}-fold</> : 'not computed: tick “Prompt set” for a probe per layer'}
      </dd>
      <dt>Changeable</dt>
      <dd data-testid="report-changeable" data-point={r.changeable?.pointOfNoReturn ?? 'none'}>
        {r.changeable
          ? <>{r.changeable.pointOfNoReturn === null ? 'no start step flips the outcome' : `point of no return: step ${r.changeable.pointOfNoReturn}${interval(r.changeable.interval)}`} · {d.steering} from step k, N = {r.changeable.maxNewTokens}, outcome: {d.scoreLabel}
            {r.nPrompts > 1 ? ' (toward each prompt’s unsteered outcome)' : ''} · unsteered {signed(r.changeable.unsteered, 3)}{r.changeable.skipped ? ` · ${r.changeable.skipped} prompts without a window` : ''}</>
          : `not computed: ${missing}`}
      </dd>
    </dl>
  );
}

/**
 * The decision-point report (DESIGN.md §3): where the decision becomes visible (logit lens), when
 * it becomes causal (activation patching of the residual stream) and whether there is still time
 * to intervene, in panels over one layer axis and one step axis; JSON (the runner's keys), CSV, PNG.
 */
export function ReportView() {
  const d = useStore((s) => s.report);
  const showTables = useStore((s) => s.showTables);
  const missing = changeableMissing(useStore((s) => s.reportSettings.changeable), useStore((s) => s.interventions.length));
  const svg = useRef<SVGSVGElement | null>(null);
  const stale = usePairStaleParts(d);
  const outdated = stale.some((x) => x !== 'model');
  const r = d?.result;
  const L = r?.nLayers ?? 0;
  const { layers: panels, step } = reportPanels(r ?? null, missing);
  const w = r?.changeable ?? null;
  const nRows = Math.max(r ? L + 1 : 0, w ? w.ks.length : 0);
  return (
    <section className="view" data-testid="report-view">
      <header className="view-head">
        <h2>Decision-point report</h2>
        <p className="muted">
          The three questions on one page: where the decision becomes <b>visible</b> (logit lens: the earliest layer from which the margin at the decision point keeps its
          final sign with |Δ| at the threshold, and the earliest prompt position from which the final layer’s margin does), when it becomes <b>causal</b> (activation patching: the earliest block whose residual stream, patched from the clean
          prompt at one position, recovers r ≥ 0.5; after the embed row, since patching an embedding only swaps the differing token back) and whether it is still <b>changeable</b> (the intervention window’s point of no return).
        </p>
      </header>
      <ReportForm />
      {d && r ? (
        <>
          <div className="view-head">
            <p className="muted" data-testid="report-caption" data-prompts={r.nPrompts}>
              {d.modelLabel} · Δ = log p(<b className="good future-text">{visibleToken(d.good.value)}</b>) − log p(<b className="bad future-text">{visibleToken(d.bad.value)}</b>) · <b data-testid="report-label">{r.label}</b> ·
              Δ_clean = {signed(r.patching.cleanMargin, 4)}, Δ_corrupt = {signed(r.patching.corruptMargin, 4)}
            </p>
            <SharedPrefixNote shared={r.sharedPrefix} reads="every panel reads" testId="report-shared-prefix" />
            <ExportButtons
              name={`report-${d.modelLabel}`}
              json={() => ({ model: d.modelLabel, clean: d.clean, corrupt: d.corrupt, good: d.good.value, bad: d.bad.value, ...reportJson(r) })}
              csv={() => [['layer (residual row)', 'lens margin toward the final answer (nats)', 'lens band low', 'lens band high', 'max recovery r over positions', 'recovery band low', 'recovery band high', 'probe held-out accuracy', 'probe band low', 'probe band high', 'step k (intervention on from k)', `window outcome (${d.scoreLabel ?? 'none'})`, 'outcome band low', 'outcome band high'],
                ...Array.from({ length: nRows }, (_, i) => [
                  ...(i <= L ? [residShort(i), r.visible.curve[i], r.visible.band?.[0][i] ?? '', r.visible.band?.[1][i] ?? '', r.causal.curve[i] ?? '', r.causal.band?.[0][i] ?? '', r.causal.band?.[1][i] ?? '', r.probe?.accuracy[i] ?? '', r.probe?.band[0][i] ?? '', r.probe?.band[1][i] ?? ''] : Array<string>(10).fill('')),
                  ...(w && i < w.ks.length ? [w.ks[i], w.outcome[i], w.band?.[0][i] ?? '', w.band?.[1][i] ?? ''] : ['', '', '', '']),
                ])]}
              figure={() => (svg.current ? {
                title: `Decision-point report · ${d.modelLabel}`,
                caption: [`${r.label}`, `Δ = log p(${visibleToken(d.good.value)}) − log p(${visibleToken(d.bad.value)}); clean: “${d.clean}”; corrupted: “${d.corrupt}”`,
                  ...(d.setSource ? [`prompt set: ${d.setSource}; probe: ${r.probe ? `first layer at 95 % of the best held-out accuracy ${residName(r.probe.firstLayer95, L)}` : '—'}`] : []),
                  w ? `changeable: ${d.steering} from step k, N = ${w.maxNewTokens}, outcome ${d.scoreLabel}; point of no return ${w.pointOfNoReturn ?? 'none'}` : 'changeable: not computed (no intervention)'],
                panels: [{ kind: 'svg', element: svg.current }],
              } : null)}
            />
          </div>
          <ResultStatus model={d.modelLabel} computedWith={d.computedWith} stale={stale} noun="report" names={{ prompt: 'the prompt pair' }} rerun={{ label: 'Build report', run: () => void runReport() }} testId="report-status" />
          <DenominatorWarning cleanMargin={r.patching.cleanMargin} corruptMargin={r.patching.corruptMargin} testId="report-denominator" />
          <Answers d={d} missing={missing} stale={outdated} />
          <div className={`figure${outdated ? ' stale' : ''}`}>
            {outdated && <StaleOverlay testId="report-stale" action="build the report again" />}
            <ReportFigure layerPanels={panels} stepPanel={step} nLayers={L} svgRef={svg} testId="report-figure" />
          </div>
          {showTables && (
            <>
              <DataTable caption="Per layer: lens margin toward the final answer, best recovery and probe accuracy" rowHeader="layer" rowLabels={r.visible.curve.map((_, l) => residShort(l))}
                colLabels={['lens Δ', 'max r', 'probe accuracy']} cell={(l, c) => (c === 0 ? fixed(r.visible.curve[l], 4) : c === 1 ? (l < L ? fixed(r.causal.curve[l], 4) : '') : r.probe ? fixed(r.probe.accuracy[l], 4) : '—')}
                cellTestId={(l, c) => `report-cell-${l}-${c}`} testId="report-table" />
              {w && (
                <DataTable caption="Per start step k: the window's outcome" rowHeader="k" rowLabels={w.ks.map(String)} colLabels={['outcome']}
                  cell={(i) => fixed(w.outcome[i], 4)} cellTestId={(i) => `report-step-cell-${i}`} testId="report-step-table" />
              )}
            </>
          )}
        </>
      ) : (
        <>
          <p className="placeholder">Build the report to see, on one page, where the decision becomes visible, when it becomes causal and whether there is still time to change it.</p>
          <p className="placeholder poster-only" data-testid="report-poster-where">Poster mode hides the report's settings: leave it (Esc), press Build report in the Report tab, and come back; the figure then shows here.</p>
        </>
      )}
      <ReportPairSection missing={missing} />
    </section>
  );
}
