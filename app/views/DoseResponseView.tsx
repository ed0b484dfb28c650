import { useRef, useState } from 'react';
import { SharedPrefixNote } from '../components/SharedPrefixNote';
import { schemeTableau10 } from 'd3';
import { useStore } from '../store';
import { runSweep } from '../actions/sweep';
import { placeFromSweep } from '../actions/steering';
import { LineChart, type Series } from '../components/LineChart';
import { DataTable } from '../components/DataTable';
import { ExportButtons } from '../components/ExportButtons';
import { ResultStatus, StaleOverlay } from '../components/ResultStatus';
import { loadStaleText, loadedNow } from '../lib/model_identity';
import { fixed, signed, vectorLabel, visibleToken } from '../lib/format';
import { hookShort } from '../lib/layer_names';
import { everyBlockSites } from '../lib/hooks';
import type { SweepDisplay } from '../store/results';
import type { SweepSettings } from '../store/steering';
import { waitingFor } from '../lib/job_rules';

const DOSE_TYPES: { type: SweepSettings['type']; title: string }[] = [
  { type: 'add', title: 'add (dose α)' },
  { type: 'add_norm_preserving', title: 'add, norm kept (dose α)' },
  { type: 'rotate', title: 'rotate (dose θ, radians)' },
];

/** The sweep's setup: vector, type, hook within the block, layers and doses; Run (progress and Cancel are in the job bar). */
function SweepForm() {
  const set = useStore((s) => s.sweepSettings);
  const update = useStore((s) => s.setSweepSettings);
  const vectors = useStore((s) => s.vectors);
  const info = useStore((s) => s.info);
  const job = useStore((s) => s.job);
  const setView = useStore((s) => s.setView);
  return (
    <form className="row settings" onSubmit={(e) => { e.preventDefault(); if (!job) void runSweep(); }}>
      <label>Vector
        <select data-testid="sweep-vector" value={set.vectorId ?? ''} onChange={(e) => update({ vectorId: e.target.value || null })}>
          <option value="">—</option>
          {vectors.map((v) => <option key={v.id} value={v.id}>{vectorLabel(v)}</option>)}
        </select>
      </label>
      {!vectors.length && <button type="button" className="small" onClick={() => setView('vectors')}>Build or import a vector…</button>}
      <label>Type
        <select data-testid="sweep-type" value={set.type} onChange={(e) => update({ type: e.target.value as SweepSettings['type'] })}>
          {DOSE_TYPES.map((t) => <option key={t.type} value={t.type}>{t.title}</option>)}
        </select>
      </label>
      <label>At blocks.{'{l}'}.
        <select data-testid="sweep-site" value={set.site} onChange={(e) => update({ site: e.target.value })}>
          {everyBlockSites(info?.hookNames ?? []).map((h) => <option key={h} value={h}>{h}</option>)}
        </select>
      </label>
      <label title={`Block indices: "all", "1,2,3" or "0-${(info?.nLayers ?? 1) - 1}"`}>Layers
        <input data-testid="sweep-layers" className="short" value={set.layers} onChange={(e) => update({ layers: e.target.value })} spellCheck={false} />
      </label>
      <label title="Doses separated by commas">Doses
        <input data-testid="sweep-doses" value={set.doses} onChange={(e) => update({ doses: e.target.value })} spellCheck={false} />
      </label>
      <button type="submit" className="primary" data-testid="run-sweep" title={waitingFor(job)} disabled={!!job || !info || !set.vectorId}>Run sweep</button>
    </form>
  );
}

/**
 * While a sweep runs, the view says so and how far it got (the job's steps, which the worker reports
 * after each forward pass): trials watched ~40 s of a view that said nothing, or showed the last
 * sweep's charts as if current. Its Cancel is the progress line's (one bar and one Cancel per job).
 */
function SweepRunning({ previous }: { previous: boolean }) {
  const running = useStore((s) => s.job?.kind === 'sweep');
  const steps = useStore((s) => s.jobSteps);
  if (!running) return null;
  return (
    <p className="running-note" role="status" data-testid="sweep-running">
      <span className="spinner" aria-hidden="true" />
      Running the sweep: {steps?.total ? `${steps.done} of ${steps.total} forward passes` : 'starting'}
      {previous ? '; the charts below are the last sweep’s until it ends' : ''} (Cancel on the progress line under the experiment).
    </p>
  );
}

/** One chart of the sweep: a value against dose, one line per layer; points are clickable when `onPick` is given. */
function SweepChart({ sw, value, yLabel, testId, svgRef, onPick, zero }: { sw: SweepDisplay; value: 'margin' | 'kl'; yLabel: string; testId: string; svgRef: React.RefObject<SVGSVGElement | null>; onPick?: (li: number, di: number) => void; zero: boolean }) {
  const r = sw.result;
  const series: Series[] = r.layers.map((_, li) => ({
    name: hookShort(r.hooks[li]), color: schemeTableau10[li % 10],
    points: r.doses.map((d, di) => [d, r[value][li][di]] as [number, number]),
  }));
  const lo = Math.min(...r.doses), hi = Math.max(...r.doses);
  return (
    <LineChart
      series={series} legend xTicks={r.doses} xDomain={[lo, hi === lo ? lo + 1 : hi]} zeroLine={zero}
      xLabel={r.doseKey === 'alpha' ? 'dose α' : 'dose θ (radians)'} yLabel={yLabel}
      onPointClick={onPick} svgRef={svgRef} width={500} height={260} label={`${yLabel} against dose, one line per layer`} testId={testId}
    />
  );
}

/**
 * Dose–response (DESIGN.md §3): the margin and the side-effect cost KL(p_unsteered ‖ p_steered) of
 * the next token against the dose, one line per layer, each point run without the list's
 * interventions. Clicking a point loads that intervention (layer, dose) into the list — replacing
 * the one at that hook with that vector, so the doses do not add up — and opens it in the editor.
 */
export function DoseResponseView() {
  const sw = useStore((s) => s.sweep);
  const showTables = useStore((s) => s.showTables);
  const list = useStore((s) => s.interventions);
  const marginSvg = useRef<SVGSVGElement | null>(null);
  const klSvg = useRef<SVGSVGElement | null>(null);
  const [picked, setPicked] = useState<{ id: number; replaced: boolean; text: string } | null>(null);
  const [refused, setRefused] = useState<string | null>(null);
  const pickedAt = picked ? list.findIndex((d) => d.id === picked.id) + 1 : 0;
  const r = sw?.result;
  // A sweep of another load: dimmed, and its points place nothing (its doses were measured on other numbers).
  const stale = useStore((s) => (sw ? loadStaleText(sw.modelLabel, sw.computedWith, loadedNow(s)) : ''));
  const others = list.filter((d) => d.enabled && d.id !== sw?.pickedId).length;
  const pick = (li: number, di: number) => {
    if (!sw || !r) return;
    const placed = placeFromSweep(li, di);
    if (placed && 'stale' in placed) { setPicked(null); setRefused(placed.stale); return; }
    setRefused(null);
    if (placed) setPicked({ ...placed, text: `${sw.type} ${r.doseKey === 'alpha' ? 'α' : 'θ'} = ${r.doses[di]} at ${r.hooks[li]} (all positions)` });
  };
  const key = r?.doseKey === 'alpha' ? 'α' : 'θ';
  const running = useStore((s) => s.job?.kind === 'sweep');
  const vectorPicked = useStore((s) => s.sweepSettings.vectorId !== null);
  return (
    <section className="view" data-testid="dose-view">
      <header className="view-head">
        <h2>Dose–response</h2>
        <p className="muted">
          For each layer and dose, the final-layer margin Δ = log p(good) − log p(bad) after the prompt, and KL(p_unsteered ‖ p_steered) of the next-token
          distribution (the side-effect cost), with the vector added at every position. Uses the prompt and futures of the experiment;
          each point is run <b>without the other interventions</b> of the list.
        </p>
      </header>
      <SweepForm />
      <SweepRunning previous={!!sw} />
      {sw && r ? (
        <>
          <div className="view-head">
            <p className="muted" data-testid="sweep-caption">
              {sw.modelLabel} · “{sw.prompt}” · Δ = log p(<b className="good">{visibleToken(sw.good)}</b>) − log p(<b className="bad">{visibleToken(sw.bad)}</b>) · {sw.type} with the vector “{sw.vectorName}” at {r.hooks[0].replace(/^blocks\.\d+\./, 'blocks.{l}.')} · unsteered Δ = <span className="mono" data-testid="sweep-unsteered">{signed(r.unsteeredMargin, 4)}</span>
            </p>
            <ExportButtons
              name={`dose-response-${sw.modelLabel}`}
              json={() => ({ model: sw.modelLabel, prompt: sw.prompt, good: sw.good, bad: sw.bad, type: sw.type, vector: sw.vectorName, ...r })}
              csv={() => [['layer', 'hook', `dose ${r.doseKey}${r.doseKey === 'theta' ? ' (radians)' : ''}`, `steered margin Δ = log p(${sw.good}) − log p(${sw.bad}) (nats)`, 'KL(p_unsteered ‖ p_steered) of the next token (nats)'], ...r.layers.flatMap((_, li) => r.doses.map((d, di) => [hookShort(r.hooks[li]), r.hooks[li], d, r.margin[li][di], r.kl[li][di]]))]}
              figure={() => marginSvg.current && klSvg.current && ({
                title: `Dose–response · ${sw.modelLabel}`,
                caption: [`margin Δ = log p(“${sw.good}”) − log p(“${sw.bad}”) and KL(p_unsteered ‖ p_steered) against ${key}; ${sw.type} with the vector “${sw.vectorName}” at ${r.hooks[0].replace(/^blocks\.\d+\./, 'blocks.{l}.')}, one line per layer`, `prompt: “${sw.prompt}” · unsteered Δ = ${signed(r.unsteeredMargin, 4)}`],
                panels: [{ kind: 'svg', title: 'Margin Δ', element: marginSvg.current }, { kind: 'svg', title: 'KL from the unsteered next-token distribution', element: klSvg.current }],
              })}
            />
          </div>
          <ResultStatus model={sw.modelLabel} computedWith={sw.computedWith} noun="sweep" rerun={{ label: 'Run sweep', run: () => void runSweep() }} testId="sweep-status" />
          <SharedPrefixNote shared={r.sharedPrefix} testId="sweep-shared-prefix" />
          {stale ? (
            <p className="hint" data-testid="sweep-stale-pick">Its points cannot be loaded into the list: the doses were measured with another load. Run the sweep again to pick one.</p>
          ) : (
            <p className="hint">
              Click a point to load that intervention (its layer and dose) into the list: it replaces the intervention at that hook with this vector
              (or the one the last click loaded), so the dose is the one measured here, not added to another.
            </p>
          )}
          {refused && stale && <p className="stale-note" role="alert" data-testid="sweep-pick-refused">{refused}</p>}
          {others > 0 && (
            <p className="hint" data-testid="sweep-others">
              {others} other intervention{others === 1 ? ' is' : 's are'} on in the list; this sweep ran without {others === 1 ? 'it' : 'them'}, so an analysis under the list can differ from the curve.
            </p>
          )}
          {picked && pickedAt > 0 && <p className="note-ok" role="status" data-testid="sweep-picked" data-replaced={picked.replaced ? 'true' : 'false'}>{picked.replaced ? 'Replaced' : 'Added'} #{pickedAt}: {picked.text}, open in the editor.</p>}
          <div className={`view-body${running ? ' updating' : ''}`}>
            <div className={`figure${stale ? ' stale' : ''}`}>
              <h3>Margin Δ</h3>
              {stale && <StaleOverlay testId="sweep-stale" action="run the sweep again" />}
              <SweepChart sw={sw} value="margin" yLabel="margin Δ (nats)" testId="dose-margin-chart" svgRef={marginSvg} onPick={stale ? undefined : pick} zero />
            </div>
            <div className={`figure${stale ? ' stale' : ''}`}>
              <h3>KL from the unsteered next-token distribution</h3>
              <SweepChart sw={sw} value="kl" yLabel="KL (nats)" testId="dose-kl-chart" svgRef={klSvg} onPick={stale ? undefined : pick} zero={false} />
            </div>
          </div>
          {showTables && (
            <>
              <DataTable caption={`Margin Δ by layer (rows) and ${key} (columns)`} rowHeader="layer" rowLabels={r.hooks.map(hookShort)} colLabels={r.doses.map(String)}
                cell={(li, di) => fixed(r.margin[li][di], 4)} cellTestId={(li, di) => `sweep-margin-${li}-${di}`} testId="sweep-margin-table" />
              <DataTable caption={`KL (nats) by layer (rows) and ${key} (columns)`} rowHeader="layer" rowLabels={r.hooks.map(hookShort)} colLabels={r.doses.map(String)}
                cell={(li, di) => fixed(r.kl[li][di], 4)} cellTestId={(li, di) => `sweep-kl-${li}-${di}`} testId="sweep-kl-table" />
            </>
          )}
        </>
      ) : !running && <p className="placeholder" data-testid="sweep-empty">{vectorPicked ? 'Run the sweep' : 'Pick a vector and run the sweep'} to see how the margin and the side effects grow with the dose, layer by layer.</p>}
    </section>
  );
}
