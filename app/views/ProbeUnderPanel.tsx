import { useRef } from 'react';
import { SharedPrefixNote } from '../components/SharedPrefixNote';
import { useStore } from '../store';
import { probeSet } from '../actions/probe';
import { runStudy } from '../actions/study';
import { useStudy } from '../components/useStudy';
import { LineChart, type Series } from '../components/LineChart';
import { DataTable } from '../components/DataTable';
import { ExportButtons } from '../components/ExportButtons';
import { ResultStatus } from '../components/ResultStatus';
import { fixed, signed, visibleToken } from '../lib/format';
import { residShort, RESID_AXIS } from '../lib/layer_names';
import { interventionLabel, toSpec } from '../lib/specs';
import { waitingFor } from '../lib/job_rules';
import type { InterventionDraft } from '../store/steering';
import type { LibraryEntry } from '../store/vectors';
import type { ProbeSettings } from '../store/probe';
import type { InterventionSpec, StudyRequest, StudyResult } from '../../workers/protocol';
import { useChatTurn } from '../components/useExperimentRequest';
import { chatTurnOf, type ChatTurnFields } from '../lib/experiment_request';

type Under = StudyResult<'probeUnder'>;

const FLAG_TEXT: Record<NonNullable<Under['flag'][number]>, string> = {
  'reads-vector': 'reads the vector: its score moves, the behaviour does not',
  'misses-behaviour': 'misses the change: the behaviour moves, its score does not',
};

/**
 * The picked intervention as one spec with its label: an intervention of the experiment (as it is
 * written there, switched on or not), or a library vector added at its hook with dose α.
 * @throws Error naming what is missing (no pick, a vector without a hook, a non-finite α).
 */
function pickedSpec(pick: string, alpha: number, list: readonly InterventionDraft[], vectors: readonly LibraryEntry[]): { spec: InterventionSpec; label: string } {
  if (pick.startsWith('i')) {
    const n = list.findIndex((d) => String(d.id) === pick.slice(1));
    if (n < 0) throw new Error('the picked intervention is no longer in the experiment: pick another');
    return { spec: toSpec({ n: n + 1, draft: list[n] }, vectors), label: interventionLabel(n + 1) };
  }
  const v = vectors.find((x) => `v${x.id}` === pick);
  if (!v) throw new Error('pick an intervention of the experiment or a vector of the library to read the probes under');
  if (!v.hook) throw new Error(`vector “${v.name}” records no hook: place it as an intervention (Steering panel) to say where it acts`);
  if (!Number.isFinite(alpha)) throw new Error(`α must be a finite number (got ${alpha})`);
  return { spec: { hook: v.hook, type: 'add', vector: Array.from(v.vector), alpha }, label: `vector “${v.name}”` };
}

/** The request the panel would send now (the view's set as probeSet reads it), or the reason it cannot. */
function underRequest(p: ProbeSettings, list: readonly InterventionDraft[], vectors: readonly LibraryEntry[], turn: ChatTurnFields): { req: StudyRequest<'probeUnder'> } | { error: string } {
  try {
    if (!p.good || !p.bad) throw new Error('give both futures of the behaviour the probe is meant to measure');
    const { positive, negative, classes, position } = probeSet();
    const { spec, label } = pickedSpec(p.underPick, p.underAlpha, list, vectors);
    return { req: { positive, negative, classes, position, ...turn, folds: p.folds, seed: p.seed, good: { text: p.good }, bad: { text: p.bad }, generate: p.underGenerate, specs: [spec], specLabels: [label] } };
  } catch (e) {
    return { error: (e as Error).message };
  }
}

/** Both columns per layer: accuracy and AUROC unsteered (solid) and under the intervention (dashed). */
function UnderChart({ r, svgRef }: { r: Under; svgRef: React.RefObject<SVGSVGElement | null> }) {
  const rows = r.accuracy.map((_, i) => i);
  const series: Series[] = [
    { name: 'accuracy', color: '#0969da', points: rows.map((i) => [i, r.accuracy[i]]) },
    { name: 'accuracy steered', color: '#0969da', dashed: true, points: rows.map((i) => [i, r.accuracySteered[i]]) },
    { name: 'AUROC', color: '#bc4c00', points: rows.map((i) => [i, r.auroc[i]]) },
    { name: 'AUROC steered', color: '#bc4c00', dashed: true, points: rows.map((i) => [i, r.aurocSteered[i]]) },
  ];
  return (
    <LineChart
      series={series} legend xTicks={rows} xTickFormat={residShort} xLabel={`${RESID_AXIS}: embed, then after block L0, L1, …`} yLabel="held-out score"
      svgRef={svgRef} width={640} height={240} label="probe accuracy and AUROC unsteered and under the intervention against the layer" testId="probe-under-chart"
    />
  );
}

/**
 * Probe under an intervention (issue 25; studies/probe_under.ts): the view's probes, trained on the
 * unsteered runs, read again under an intervention picked here — held-out accuracy and AUROC
 * unsteered vs steered per layer, the shift of the probe score and of the behaviour it is meant to
 * measure (the margin of two futures), and a flag where one moves without the other. Picking here
 * never changes the experiment's interventions or vectors.
 */
export function ProbeUnderPanel() {
  const set = useStore((s) => s.probeSettings);
  const update = useStore((s) => s.setProbeSettings);
  const list = useStore((s) => s.interventions);
  const vectors = useStore((s) => s.vectors);
  const job = useStore((s) => s.job);
  const ready = useStore((s) => s.modelStatus === 'ready');
  const turn = useChatTurn();
  const svg = useRef<SVGSVGElement | null>(null);
  const now = underRequest(set, list, vectors, turn);
  const { run, stale } = useStudy('probeUnder', 'req' in now ? now.req : undefined);
  const r = run?.result;
  const start = () => {
    const s = useStore.getState();
    const x = underRequest(s.probeSettings, s.interventions, s.vectors, chatTurnOf(s));
    if ('req' in x) void runStudy('probeUnder', x.req, { label: 'Probes under the intervention', what: 'Could not read the probes under the intervention', total: 2 * x.req.positive.length + 2 * x.req.negative.length });
  };
  const pickVector = (pick: string) => {
    const v = vectors.find((x) => `v${x.id}` === pick);
    update({ underPick: pick, ...(v ? { underAlpha: v.alpha ?? 1 } : {}) });
  };
  const flagged = r ? r.flag.map((f, i) => [f, i] as const).filter(([f]) => f !== null) : [];
  const unreached = r ? r.hooks.map((_, i) => i).filter((i) => !r.reached[i]).map(residShort) : [];
  const what = run ? run.request.specLabels?.[0] ?? 'the intervention' : '';
  const gapShare = (shift: number, gap: number) => (gap !== 0 ? fixed(shift / Math.abs(gap), 2) : '—');
  return (
    <section className="probe-under" data-testid="probe-under">
      <h3>Under an intervention</h3>
      <p className="muted">
        Is the probe still a valid judge once the model is steered? The probes are trained on the unsteered runs (as above), then every prompt runs again
        under the intervention picked here and the same probes read it. A shift <b>moves</b> when it covers at least τ = {run ? run.result.threshold : 0.25} of the distance
        between the two classes’ means before; a row is flagged when the probe’s score moves and the behaviour does not (<i>the probe reads the vector</i>),
        or the behaviour moves and the score does not. Picking here does not change the experiment.
      </p>
      <form className="settings" onSubmit={(e) => { e.preventDefault(); if (!job && 'req' in now) start(); }}>
        <div className="row">
          <label>Intervention
            <select data-testid="probe-under-pick" value={set.underPick} onChange={(e) => pickVector(e.target.value)}>
              <option value="">pick one…</option>
              {list.length > 0 && (
                <optgroup label="the experiment's interventions">
                  {list.map((d, i) => <option key={d.id} value={`i${d.id}`}>{interventionLabel(i + 1)}: {d.type} at {d.hook}{d.enabled ? '' : ' (off in the list)'}</option>)}
                </optgroup>
              )}
              {vectors.length > 0 && (
                <optgroup label="a library vector, added at its hook">
                  {vectors.map((v) => <option key={v.id} value={`v${v.id}`} disabled={!v.hook}>{v.name}{v.hook ? ` at ${v.hook}` : ' (no hook recorded)'}</option>)}
                </optgroup>
              )}
            </select>
          </label>
          {set.underPick.startsWith('v') && (
            <label title="the dose α in h += α·v">α
              <input type="number" step="any" className="short" data-testid="probe-under-alpha" value={Number.isNaN(set.underAlpha) ? '' : set.underAlpha} onChange={(e) => update({ underAlpha: e.target.value === '' ? NaN : Number(e.target.value) })} />
            </label>
          )}
          <label title="The behaviour the probe is meant to measure: the margin Δ = log p(good) − log p(bad) after each prompt">Behaviour: good
            <input className="short" data-testid="probe-under-good" value={set.good} onChange={(e) => update({ good: e.target.value })} spellCheck={false} />
          </label>
          <label>bad
            <input className="short" data-testid="probe-under-bad" value={set.bad} onChange={(e) => update({ bad: e.target.value })} spellCheck={false} />
          </label>
          <label title="Also generate this many greedy tokens per prompt, unsteered and steered, and count the prompts whose text holds the good future (0 = no generation)">Text tokens
            <input type="number" min={0} max={64} className="short" data-testid="probe-under-generate" value={set.underGenerate} onChange={(e) => update({ underGenerate: Math.max(0, Math.floor(Number(e.target.value) || 0)) })} />
          </label>
          <button type="submit" className="primary" data-testid="run-probe-under" title={waitingFor(job) ?? ('error' in now ? now.error : undefined)} disabled={!!job || !ready || 'error' in now}>Run under the intervention</button>
        </div>
        {'error' in now && set.positive && <p className="hint" data-testid="probe-under-why">{now.error}.</p>}
      </form>
      {run && r && (
        <>
          <ResultStatus model={run.modelLabel} computedWith={run.computedWith} noun="probe reading" rerun={{ label: 'Run under the intervention', run: start }} testId="probe-under-status" />
          <SharedPrefixNote shared={r.sharedPrefix} testId="probe-under-shared-prefix" />
          {stale === 'request' && (
            <p className="stale-note" role="status" data-testid="probe-under-stale"><strong>Stale</strong> — the set, the futures or the intervention changed since this reading: press Run under the intervention.</p>
          )}
          <div className="view-head">
            <p data-testid="probe-under-behaviour">
              Under {what}: the behaviour Δ = log p(<b className="good">{visibleToken(run.request.good.text ?? '')}</b>) − log p(<b className="bad">{visibleToken(run.request.bad.text ?? '')}</b>)
              {' '}shifts by <b>{signed(r.behaviourShift.mean, 3)}</b> nats (95 % [{signed(r.behaviourShift.lo, 3)}, {signed(r.behaviourShift.hi, 3)}]) over {r.nPositive + r.nNegative} prompts,
              {' '}{gapShare(r.behaviourShift.mean, r.marginGap)} of the classes’ gap ({fixed(r.marginGap, 3)} nats)
              {r.target && <> · the good future in {r.target.newTokens} greedy tokens: {fixed(100 * r.target.rateUnsteered, 0)} % of prompts unsteered, {fixed(100 * r.target.rateSteered, 0)} % steered</>}.
            </p>
            <ExportButtons
              name={`probe-under-${run.modelLabel}`}
              json={() => ({ model: run.modelLabel, intervention: run.request.specs?.[0], ...r })}
              csv={() => [['layer', 'hook', 'accuracy', 'accuracy steered', 'AUROC', 'AUROC steered', 'score shift (logits)', 'score shift lo', 'score shift hi', 'score class gap', 'flag'],
                ...r.hooks.map((h, i) => [residShort(i), h, r.accuracy[i], r.accuracySteered[i], r.auroc[i], r.aurocSteered[i], r.scoreShift[i].mean, r.scoreShift[i].lo, r.scoreShift[i].hi, r.scoreGap[i], r.flag[i] ?? ''])]}
              figure={() => svg.current && ({
                title: `Probes under ${what} · ${run.modelLabel}`,
                caption: [`“${r.classes[1]}” (${r.nPositive}) vs “${r.classes[0]}” (${r.nNegative}); probes trained unsteered, held-out accuracy and AUROC unsteered (solid) and steered (dashed)`,
                  `behaviour shift ${signed(r.behaviourShift.mean, 3)} nats [${signed(r.behaviourShift.lo, 3)}, ${signed(r.behaviourShift.hi, 3)}]; flags (τ = ${r.threshold}): ${flagged.map(([f, i]) => `${residShort(i)} ${f}`).join(', ') || 'none'}`],
                panels: [{ kind: 'svg', element: svg.current }],
              })}
            />
          </div>
          <p data-testid="probe-under-flag" data-flags={r.flag.map((f) => f ?? '').join(',')} className={`probe-under-flag${flagged.length ? ' flagged' : ' note-ok'}`}>
            {flagged.length === 0
              ? 'No flag: at every layer the intervention reaches, the probe’s score and the behaviour move together (or neither moves). '
              : Object.entries(FLAG_TEXT).map(([kind, text]) => {
                const at = flagged.filter(([f]) => f === kind).map(([, i]) => residShort(i));
                return at.length ? <span key={kind}>At {at.join(', ')} the probe {text}. </span> : null;
              })}
            {unreached.length > 0 && <span className="muted">Not reached (before the intervention, no flag): {unreached.join(', ')}.</span>}
          </p>
          <div className="view-body">
            <div className="figure"><UnderChart r={r} svgRef={svg} /></div>
          </div>
          <DataTable
            caption="Held-out probe scores unsteered and under the intervention, and the shift of the probe score (the probe fitted on every unsteered prompt, logits; 95 % bootstrap interval)"
            rowHeader="layer" rowLabels={r.hooks.map((_, i) => residShort(i))}
            colLabels={['accuracy', 'steered', 'AUROC', 'steered', 'score shift [95 %]', '÷ class gap', 'flag']}
            cell={(i, j) => [
              fixed(r.accuracy[i], 3), fixed(r.accuracySteered[i], 3), fixed(r.auroc[i], 3), fixed(r.aurocSteered[i], 3),
              `${signed(r.scoreShift[i].mean, 2)} [${signed(r.scoreShift[i].lo, 2)}, ${signed(r.scoreShift[i].hi, 2)}]`, gapShare(r.scoreShift[i].mean, r.scoreGap[i]),
              !r.reached[i] ? 'not reached' : r.flag[i] === 'reads-vector' ? 'reads the vector' : r.flag[i] === 'misses-behaviour' ? 'misses the change' : '—',
            ][j]}
            cellTestId={(i, j) => `probe-under-cell-${i}-${j}`} testId="probe-under-table"
          />
        </>
      )}
    </section>
  );
}
