import { useRef } from 'react';
import { SharedPrefixNote } from '../components/SharedPrefixNote';
import { useStore } from '../store';
import { runWindow } from '../actions/window';
import { LineChart, type Series } from '../components/LineChart';
import { DataTable } from '../components/DataTable';
import { ExportButtons } from '../components/ExportButtons';
import { ResultStatus } from '../components/ResultStatus';
import { fixed, signed, visibleToken } from '../lib/format';
import { interventionLabel } from '../lib/specs';
import type { WindowDisplay } from '../store/window';
import { WindowSetupFields } from '../components/WindowSetupFields';
import { waitingFor } from '../lib/job_rules';

/** Which intervention, how long a generation, which start steps and which outcome score; Run (progress and Cancel in the job bar). */
function WindowForm() {
  const list = useStore((s) => s.interventions);
  const job = useStore((s) => s.job);
  const ready = useStore((s) => s.modelStatus === 'ready');
  return (
    <form className="row settings" onSubmit={(e) => { e.preventDefault(); if (!job) void runWindow(); }}>
      <WindowSetupFields prefix="window" />
      <button type="submit" className="primary" data-testid="run-window" title={waitingFor(job)} disabled={!!job || !ready || list.length === 0}>Run window</button>
    </form>
  );
}

/** A continuation with the tokens drawn under steering (steps ≥ start) marked. */
function Continuation({ tokens, start, testId }: { tokens: readonly string[]; start: number; testId: string }) {
  return (
    <p className="continuation mono" data-testid={testId}>
      {tokens.map((t, s) => <span key={s} className={s >= start ? 'steered-token' : undefined} title={`step ${s}${s >= start ? ' (steered)' : ''}`}>{t}</span>)}
    </p>
  );
}

/** The outcome against the start step k, the unsteered outcome as a dashed line, the point of no return marked; points pick the continuation shown. */
function WindowChart({ w, svgRef }: { w: WindowDisplay; svgRef: React.RefObject<SVGSVGElement | null> }) {
  const r = w.result;
  const pick = useStore((s) => s.pickWindowK);
  const last = r.ks[r.ks.length - 1];
  const series: Series[] = [
    { name: 'steered from step k', color: '#0969da', points: r.ks.map((k, i) => [k, r.outcome[i]]) },
    { name: 'unsteered', color: '#6e7781', dashed: true, points: [[0, r.unsteered.outcome], [last, r.unsteered.outcome]] },
  ];
  const marks = [
    ...(r.pointOfNoReturn !== null ? [{ x: r.pointOfNoReturn, label: `point of no return k = ${r.pointOfNoReturn}`, color: '#cf222e' }] : []),
  ];
  return (
    <LineChart
      series={series} legend zeroLine xTicks={r.ks} xDomain={[0, Math.max(1, last)]} xMarks={marks}
      xLabel="k: the intervention is on from generation step k (0 = the prompt pass)" yLabel={w.scoreLabel.startsWith('+1') ? 'outcome (±1)' : 'outcome Δ (nats)'}
      onPointClick={(si, pi) => { if (si === 0) pick(r.ks[pi]); }}
      svgRef={svgRef} width={680} height={280} label="outcome against the step the intervention starts at" testId="window-chart"
    />
  );
}

/**
 * Intervention window (DESIGN.md §3 "Intervention window"): the experiment's generation redone
 * with the intervention switched on from step k, for k = 0..K, over the shared unsteered prefix;
 * the outcome against k, and the point of no return (the last k that still flips the outcome's
 * sign relative to the unsteered generation).
 */
export function WindowView() {
  const w = useStore((s) => s.windowRun);
  const showTables = useStore((s) => s.showTables);
  const svg = useRef<SVGSVGElement | null>(null);
  const r = w?.result;
  const steering = w ? w.steering.map((a) => `${interventionLabel(a.n)} (${a.draft.type} at ${a.draft.hook})`).join(', ') : '';
  const ponr = r?.pointOfNoReturn ?? null;
  return (
    <section className="view" data-testid="window-view">
      <header className="view-head">
        <h2>Intervention window</h2>
        <p className="muted">
          Is there still time to intervene? The generation of the experiment's prompt is redone with the intervention switched on only from step k onward
          (step 0 = the prompt pass, which draws the first new token), for every k; the unsteered prefix is computed once and shared. The <b>point of no
          return</b> is the last k whose outcome still has the opposite sign of the unsteered outcome. Greedy decoding; EOS does not stop a continuation.
        </p>
      </header>
      <WindowForm />
      {w && r ? (
        <>
          <div className="view-head">
            <p className="muted" data-testid="window-caption">
              {w.modelLabel} · “{w.prompt}” · Δ = log p(<b className="good">{visibleToken(w.good)}</b>) − log p(<b className="bad">{visibleToken(w.bad)}</b>) · {steering} from step k ·
              {' '}N = {r.maxNewTokens} · outcome: {w.scoreLabel} · unsteered outcome <span className="mono" data-testid="window-unsteered">{signed(r.unsteered.outcome, 3)}</span> ·
              {' '}point of no return: <b data-testid="window-ponr">{ponr === null ? 'none (no k flips the outcome)' : `k = ${ponr}`}</b>
            </p>
            <ExportButtons
              name={`intervention-window-${w.modelLabel}`}
              json={() => ({ model: w.modelLabel, prompt: w.prompt, good: w.good, bad: w.bad, interventions: steering, scoreLabel: w.scoreLabel, ...r })}
              csv={() => [['k (intervention on from step k)', `outcome (${w.scoreLabel})`, 'continuation text', ...Array.from({ length: r.maxNewTokens }, (_, s) => `margin Δ at step ${s} (nats)`)],
                ...r.ks.map((k, i) => [k, r.outcome[i], r.variants[i].text, ...r.variants[i].margins]),
                ['unsteered', r.unsteered.outcome, r.unsteered.text, ...r.unsteered.margins]]}
              figure={() => svg.current && ({
                title: `Intervention window · ${w.modelLabel}`,
                caption: [`outcome (${w.scoreLabel}) of the generation with ${steering} switched on from step k; Δ = log p(“${w.good}”) − log p(“${w.bad}”)`,
                  `prompt: “${w.prompt}” · N = ${r.maxNewTokens} · unsteered outcome ${signed(r.unsteered.outcome, 3)} · point of no return ${ponr === null ? 'none' : `k = ${ponr}`} · one prompt`],
                panels: [{ kind: 'svg', element: svg.current }],
              })}
            />
          </div>
          <ResultStatus model={w.modelLabel} computedWith={w.computedWith} noun="window" rerun={{ label: 'Run window', run: () => void runWindow() }} testId="window-status" />
          <SharedPrefixNote shared={w.result.sharedPrefix} reads="the margins per step read" testId="window-shared-prefix" />
          <div className="view-body">
            <div className="figure">
              <WindowChart w={w} svgRef={svg} />
            </div>
          </div>
          <p className="hint">Click a point to read that continuation; tokens drawn under steering are underlined.</p>
          <div className="continuations">
            <h3>Steered from step k = <span data-testid="window-picked">{w.picked}</span> · outcome {signed(r.outcome[w.picked], 3)}</h3>
            <Continuation tokens={r.variants[w.picked].tokens} start={w.picked} testId="window-picked-text" />
            <h3>Unsteered · outcome {signed(r.unsteered.outcome, 3)}</h3>
            <Continuation tokens={r.unsteered.tokens} start={Infinity} testId="window-unsteered-text" />
          </div>
          {showTables && (
            <DataTable caption="Outcome by start step k" rowHeader="k" rowLabels={r.ks.map(String)} colLabels={['outcome', 'continuation']}
              cell={(i, j) => (j === 0 ? fixed(r.outcome[i], 4) : r.variants[i].text)} cellTestId={(i, j) => `window-cell-${i}-${j}`} testId="window-table" />
          )}
        </>
      ) : <p className="placeholder">Place an intervention (e.g. the happy − sad vector at blocks.3.hook_resid_post) and run the window to see how late it can still change the outcome.</p>}
    </section>
  );
}
