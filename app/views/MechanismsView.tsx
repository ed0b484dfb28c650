import { useEffect, useMemo, useRef, useState } from 'react';
import { useStore } from '../store';
import { runStudy } from '../actions/study';
import { messageOf } from '../actions/worker';
import { PROBE_EXAMPLES } from '../actions/probe';
import { parseBehaviourSet, parseControlSet } from '../../workers/shared';
import type { StudyRequest, StudyResult } from '../../workers/protocol';
import { useStudy } from '../components/useStudy';
import { useChatTurn } from '../components/useExperimentRequest';
import { type ChatTurnFields } from '../lib/experiment_request';
import { LineChart, type Series } from '../components/LineChart';
import { ExportButtons } from '../components/ExportButtons';
import { FilePickButton } from '../components/FilePickButton';
import { ResultStatus } from '../components/ResultStatus';
import { SharedPrefixNote } from '../components/SharedPrefixNote';
import { blockShort, hookName, hookShort } from '../lib/layer_names';
import { fixed, signed } from '../lib/format';
import { waitingFor } from '../lib/job_rules';

type Req = StudyRequest<'mechanisms'>;
type Res = StudyResult<'mechanisms'>;

/** A behaviour as edited: its set (from a shipped example or a file) and its two futures. */
interface SetDraft {
  source: string;
  name: string;
  positive: string[];
  negative: string[];
  good: string;
  bad: string;
  /** The token the file asks to read (and steer), when it says. */
  position?: 'last' | number;
}

const DEFAULTS: [string, string] = ['steering/happy_sad.json', 'probes/he_she.json'];
/** The shipped control set of plain stories (public/control/stories.json). */
const STORIES_CONTROL = 'control/stories.json';
const CELLS = [['aOnA', 'A on A'], ['aOnB', 'A on B'], ['bOnB', 'B on B'], ['bOnA', 'B on A']] as const;
const COLORS = { aOnA: '#0969da', aOnB: '#54aeff', bOnB: '#bc4c00', bOnA: '#fb8f44' } as const;

/** A set file's text → the draft (its futures, when the file names them). @throws Error as parseBehaviourSet. */
function draftOf(source: string, text: string): SetDraft {
  const s = parseBehaviourSet(source, text);
  return { source, name: s.name, positive: s.positive, negative: s.negative, good: s.futures?.good ?? '', bad: s.futures?.bad ?? '', ...(s.position !== undefined ? { position: s.position } : {}) };
}

/** Fetches a shipped example set. @throws Error for an HTTP failure or a bad file. */
async function exampleDraft(file: string): Promise<SetDraft> {
  const r = await fetch(new URL(file, document.baseURI));
  if (!r.ok) throw new Error(`${file}: HTTP ${r.status}`);
  return draftOf(file, await r.text());
}

/** The request of two drafts, or why there is none yet. */
function requestOf(a: SetDraft | null, b: SetDraft | null, control: string[], dose: number, causal: boolean, turn: ChatTurnFields): { req: Req | null; why: string | null } {
  if (!a || !b) return { req: null, why: 'Load both sets first' };
  for (const [k, s] of [['A', a], ['B', b]] as const) if (!s.good || !s.bad) return { req: null, why: `Give set ${k}'s two futures` };
  if (!Number.isFinite(dose) || dose === 0) return { req: null, why: 'The dose α must be a finite number ≠ 0' };
  const behaviour = (s: SetDraft) => ({ name: s.name, positive: s.positive, negative: s.negative, good: { text: s.good }, bad: { text: s.bad }, ...(s.position !== undefined ? { position: s.position } : {}) });
  return { req: { a: behaviour(a), b: behaviour(b), ...(control.length ? { control } : {}), dose, causal, ...turn }, why: null };
}

/** One behaviour's set picker and futures. */
function SetPicker({ k, draft, onDraft }: { k: 'A' | 'B'; draft: SetDraft | null; onDraft: (d: SetDraft) => void }) {
  const fail = (what: string, e: unknown) => useStore.getState().setFailure({ what, why: messageOf(e) });
  const lower = k.toLowerCase();
  return (
    <fieldset className="mech-set" data-testid={`mech-set-${lower}`}>
      <legend>Behaviour {k}</legend>
      <div className="row">
        <label>Set
          <select data-testid={`mech-example-${lower}`} value={PROBE_EXAMPLES.some((x) => x.file === draft?.source) ? draft!.source : ''}
            onChange={(e) => { if (e.target.value) exampleDraft(e.target.value).then(onDraft, (x) => fail('Could not load the example set', x)); }}>
            <option value="">(a file)</option>
            {PROBE_EXAMPLES.map((x) => <option key={x.file} value={x.file}>{x.name}</option>)}
          </select>
        </label>
        <FilePickButton label="Open a set…" accept=".json,.jsonl,.csv" testId={`mech-file-${lower}`}
          onFile={(f) => { f.text().then((t) => { onDraft(draftOf(f.name, t)); useStore.getState().setFailure(null); }).catch((x) => fail(`Could not read the set ${f.name}`, x)); }} />
      </div>
      <p className="muted" data-testid={`mech-counts-${lower}`}>{draft ? `${draft.name}: ${draft.positive.length} positive, ${draft.negative.length} negative prompts` : 'no set loaded'}</p>
      <div className="row">
        <label>Good future <input className="short" data-testid={`mech-good-${lower}`} value={draft?.good ?? ''} disabled={!draft} onChange={(e) => draft && onDraft({ ...draft, good: e.target.value })} spellCheck={false} /></label>
        <label>Bad future <input className="short" data-testid={`mech-bad-${lower}`} value={draft?.bad ?? ''} disabled={!draft} onChange={(e) => draft && onDraft({ ...draft, bad: e.target.value })} spellCheck={false} /></label>
      </div>
    </fieldset>
  );
}

/** The cosines and the natural correlation against the block. */
function SimilarityChart({ r, svgRef }: { r: Res; svgRef: React.RefObject<SVGSVGElement | null> }) {
  const pts = (xs: (number | null)[]) => xs.flatMap((v, i) => (v === null ? [] : [[r.layers[i], v] as [number, number]]));
  const series: Series[] = [
    { name: 'cos of CAA directions', color: '#0969da', points: pts(r.cosCaa) },
    { name: 'cos of probe weights', color: '#8250df', points: pts(r.cosProbe) },
    { name: 'natural r of probe scores', color: '#1a7f37', dashed: true, points: pts(r.naturalCorr) },
  ];
  return <LineChart series={series} legend zeroLine xTicks={r.layers} xTickFormat={blockShort} xLabel="block (blocks.l.hook_resid_post)" yLabel="cosine / r" svgRef={svgRef} width={600} height={240} label="cosines of the two behaviours' directions and the natural correlation of their probe scores against the block" testId="mech-similarity" />;
}

/** The cross-steering matrix's four cells against the block. */
function SteeringChart({ r, svgRef }: { r: Res; svgRef: React.RefObject<SVGSVGElement | null> }) {
  const series: Series[] = CELLS.map(([k, name]) => ({ name, color: COLORS[k], dashed: k === 'aOnB' || k === 'bOnA', points: r.crossSteer[k].map((m, i) => [r.layers[i], m.mean] as [number, number]) }));
  return <LineChart series={series} legend zeroLine xTicks={r.layers} xTickFormat={blockShort} xLabel="block steered" yLabel="mean margin change (nats)" svgRef={svgRef} width={600} height={240} label="cross-steering: mean margin change of each set under each direction against the block" testId="mech-steering" />;
}

/** A mean margin change over its 95 % interval, in two lines. */
function Interval({ m }: { m: { mean: number; lo: number; hi: number } }) {
  return <>{signed(m.mean, 3)}<br /><span className="muted">[{fixed(m.lo, 2)}, {fixed(m.hi, 2)}]</span></>;
}
/** Where the sets are read, in words. */
const readAt = (q: Req) => (q.a.position ?? 'last') === 'last' && (q.b.position ?? 'last') === 'last' ? 'last token' : `token A ${q.a.position ?? 'last'}, B ${q.b.position ?? 'last'}`;
const opt = (x: number | null, d = 3) => (x === null ? 'n/a' : fixed(x, d));

/**
 * A selectivity |Δ_other| / |Δ_own| (analysis/mechanisms.ts selectivity) as the table shows it: marked † where the own
 * change is under the verdict's reach threshold, whose ratio (often > 1) the verdict does not read.
 */
function Selectivity({ value, own, minReach }: { value: number | null; own: number; minReach: number }) {
  if (value === null || Math.abs(own) >= minReach) return <>{opt(value)}</>;
  return <span title={`own change |${signed(own, 3)}| nats is under the reach threshold ${minReach}: a ratio over a near-zero change says little, and the verdict reads this block as no reach`}>{opt(value)} †</span>;
}

/** The per-block numbers and verdicts as CSV rows. */
function csvOf(r: Res): (string | number)[][] {
  return [
    ['block', 'hook', 'cos_caa', 'cos_probe', ...CELLS.flatMap(([, n]) => [`${n} mean (nats)`, `${n} lo`, `${n} hi`]), 'selectivity A (|A on B|/|A on A|)', 'selectivity B (|B on A|/|B on B|)', 'natural r', 'max recovery A', 'max recovery B', 'verdict', 'verdict text'],
    ...r.layers.map((l, i) => [
      blockShort(l), r.hooks[i], r.cosCaa[i] ?? 'n/a', r.cosProbe[i] ?? 'n/a',
      ...CELLS.flatMap(([k]) => [r.crossSteer[k][i].mean, r.crossSteer[k][i].lo, r.crossSteer[k][i].hi]),
      r.selectivityA[i] ?? 'n/a', r.selectivityB[i] ?? 'n/a', r.naturalCorr[i] ?? 'n/a',
      r.causal.a?.curve[l] ?? 'n/a', r.causal.b?.curve[l] ?? 'n/a', r.verdict[i].kind, r.verdict[i].text,
    ]),
  ];
}

/**
 * Behaviour pairs (DESIGN.md §3 "Mechanisms", issue 25): two labelled contrastive sets with their
 * futures; per block the cosines of their CAA directions and probe weights, the cross-steering
 * matrix with bootstrap intervals and selectivity, the natural correlation of their probe scores
 * over a common pool (plus optional control prompts), where each becomes causal, and a verdict.
 */
export function MechanismsView() {
  const job = useStore((s) => s.job);
  const ready = useStore((s) => s.modelStatus === 'ready');
  const turn = useChatTurn();
  const [a, setA] = useState<SetDraft | null>(null);
  const [b, setB] = useState<SetDraft | null>(null);
  const [controlText, setControlText] = useState('');
  const [dose, setDose] = useState(4);
  const [causal, setCausal] = useState(true);
  const simSvg = useRef<SVGSVGElement | null>(null), steerSvg = useRef<SVGSVGElement | null>(null);
  useEffect(() => {
    const fail = (e: unknown) => useStore.getState().setFailure({ what: 'Could not load the example sets', why: messageOf(e) });
    if (!a) exampleDraft(DEFAULTS[0]).then(setA, fail);
    if (!b) exampleDraft(DEFAULTS[1]).then(setB, fail);
  }, []); // once, on first show: the two shipped sets
  const control = useMemo(() => controlText.split(/\r?\n/).map((t) => t.trim()).filter(Boolean), [controlText]);
  const { req, why } = useMemo(() => requestOf(a, b, control, dose, causal, turn), [a, b, control, dose, causal, turn]);
  const { run, stale, running } = useStudy('mechanisms', req ?? undefined);
  const r = run?.result ?? null;
  const start = () => { if (req) void runStudy('mechanisms', req, { label: 'Mechanisms: behaviour pairs', what: 'Could not compare the two behaviours', total: 2 * (req.a.positive.length + req.a.negative.length + req.b.positive.length + req.b.negative.length) }); };
  const names = r ? { a: r.names[0], b: r.names[1] } : null;
  const figure = () => r && simSvg.current && steerSvg.current ? {
    title: `Mechanisms · A ${r.names[0]} vs B ${r.names[1]} · ${run!.modelLabel}`,
    caption: [
      `per block at blocks.l.hook_resid_post, read at each prompt's ${readAt(run!.request)}; steering h += α·û at that token, α = ${r.dose}, û the unit CAA direction; ${r.interval}`,
      `verdict thresholds: |cos| ≥ ${r.thresholds.sharedCosine} shared, selectivity ≥ ${r.thresholds.mutualSelectivity} mutual, |r| ≥ ${r.thresholds.naturalCorrelation} correlated, reach ≥ ${r.thresholds.minReach} nats`,
      ...r.layers.map((l, i) => `${blockShort(l)}: ${r.verdict[i].text}`),
    ],
    panels: [{ kind: 'svg' as const, element: simSvg.current }, { kind: 'svg' as const, element: steerSvg.current }],
  } : null;
  return (
    <section className="view" data-testid="mechanisms-view">
      <header className="view-head">
        <h2>Mechanisms: behaviour pairs</h2>
        <p className="muted">
          Do two behaviours share a mechanism or only correlate? Each is a labelled set of contrastive prompts with its two futures. Per block: the cosine of their
          difference-of-means (CAA) directions and of their probes' weights; the <b>cross-steering matrix</b> (steer with A's unit direction at dose α: the change of
          A's and B's margins over their prompts, and B's likewise) with selectivity |ΔB|/|ΔA|; the natural correlation of the two probe scores over both sets (and
          your control prompts); where each becomes causal (patching of each set's equal-length pairs); and a verdict.
        </p>
      </header>
      <form className="settings mech-form" onSubmit={(e) => { e.preventDefault(); if (!job && req) start(); }}>
        <div className="mech-sets">
          <SetPicker k="A" draft={a} onDraft={setA} />
          <SetPicker k="B" draft={b} onDraft={setB} />
        </div>
        <div className="row">
          <label className="mech-control">Control prompts (optional, one per line; join the natural-correlation pool)
            <textarea rows={2} data-testid="mech-control" value={controlText} spellCheck={false} onChange={(e) => setControlText(e.target.value)} />
          </label>
          <span className="mech-control-buttons">
          <button type="button" data-testid="mech-control-stories" onClick={() => { fetch(new URL(STORIES_CONTROL, document.baseURI)).then((x) => (x.ok ? x.text() : Promise.reject(new Error(`${STORIES_CONTROL}: HTTP ${x.status}`)))).then((t) => setControlText(parseControlSet(STORIES_CONTROL, t).texts.join('\n'))).catch((x) => useStore.getState().setFailure({ what: 'Could not load the shipped control set', why: messageOf(x) })); }}>Plain stories (shipped)</button>
          <FilePickButton label="Open control prompts…" accept=".txt,.json" testId="mech-control-file"
            onFile={(f) => { f.text().then((t) => { setControlText(parseControlSet(f.name, t).texts.join('\n')); useStore.getState().setFailure(null); }).catch((x) => useStore.getState().setFailure({ what: `Could not read the control set ${f.name}`, why: messageOf(x) })); }} />
          </span>
        </div>
        <div className="row">
          <label title="h += α·û at the token each prompt is read at (the last unless the set file says), û the unit CAA direction: α is in the residual stream's units">Dose α
            <input type="number" step="any" className="short" data-testid="mech-dose" value={Number.isFinite(dose) ? dose : ''} onChange={(e) => setDose(e.target.value === '' ? NaN : Number(e.target.value))} />
          </label>
          <label className="toggle" title="Patch each set's positive i / negative i pairs of equal token length (n_layers × n_tokens runs per pair)">
            <input type="checkbox" data-testid="mech-causal" checked={causal} onChange={(e) => setCausal(e.target.checked)} />where each becomes causal (patching)
          </label>
          <button type="submit" className="primary" data-testid="run-mechanisms" disabled={!!job || !ready || !req} title={waitingFor(job) ?? why ?? undefined}>Compare behaviours</button>
          {why && <span className="muted" data-testid="mech-why">{why}</span>}
        </div>
      </form>
      {r && names ? (
        <>
          <div className="view-head">
            <p className="muted" data-testid="mech-caption">
              A <b>{names.a}</b> ({r.pool.a} prompts, unsteered first-token Δ {signed(r.unsteered.a, 3)}) vs B <b>{names.b}</b> ({r.pool.b} prompts, Δ {signed(r.unsteered.b, 3)}) ·
              α = {r.dose} · pool {r.pool.a + r.pool.b + r.pool.control} prompts ({r.pool.control} control) · {r.cost.forwardEquivalentsPerCell.toFixed(2)} forward-equivalents per cell (naively {r.cost.naivePerCell}) by prefix reuse
            </p>
            <ExportButtons name={`mechanisms-${run!.modelLabel}`} json={() => ({ model: run!.modelLabel, request: run!.request, ...r })} csv={() => csvOf(r)} figure={figure} />
          </div>
          <ResultStatus model={run!.modelLabel} computedWith={run!.computedWith} noun="comparison" rerun={{ label: 'Compare behaviours', run: start }} testId="mech-status" />
          <SharedPrefixNote shared={r.sharedPrefix.a} reads={`set A's margins read`} testId="mech-shared-prefix-a" />
          {r.sharedPrefix.b?.note !== r.sharedPrefix.a?.note && <SharedPrefixNote shared={r.sharedPrefix.b} reads={`set B's margins read`} testId="mech-shared-prefix-b" />}
          {stale === 'request' && <p className="stale-note" role="status" data-testid="mech-stale">Computed with other sets, futures or settings than the form shows now: press Compare behaviours.</p>}
          {running && <p className="muted">Comparing…</p>}
          <ul className="mech-verdicts" data-testid="mech-verdicts">
            {r.layers.map((l, i) => (
              <li key={l} data-testid={`mech-verdict-${l}`} data-kind={r.verdict[i].kind}><b>{blockShort(l)}</b> · <span className={`mech-kind mech-${r.verdict[i].kind.replace(' ', '-')}`}>{r.verdict[i].kind}</span> — {r.verdict[i].text.replace(/^[^:]*: /, '')}</li>
            ))}
          </ul>
          <div className="view-body">
            <div className="figure"><SimilarityChart r={r} svgRef={simSvg} /></div>
            <div className="figure"><SteeringChart r={r} svgRef={steerSvg} /></div>
          </div>
          <p className="muted" data-testid="mech-causal-line">
            Where each becomes causal (mean over pairs of the max resid_pre patching recovery per block):{' '}
            {run!.request.causal === false ? 'not computed (tick “where each becomes causal” to patch each set’s pairs).' : <>
              {([['A', r.causal.a], ['B', r.causal.b]] as const).map(([k, c]) => `${k} ${c ? `${c.curve.map((x, l) => `${hookShort(`blocks.${l}.hook_resid_pre`)} ${fixed(x, 2)}`).join(', ')} (first after the embeddings ≥ 0.5: ${c.firstBlock === null ? 'none' : hookName(`blocks.${c.firstBlock}.hook_resid_pre`)}; ${c.pairs} pairs)` : 'n/a (no pair of equal token length)'}`).join(' · ')}
              {' '}· similarity r = {opt(r.causal.similarity)}</>}
          </p>
          <div className="table-scroll">
            <table className="data-table mech-table" data-testid="mech-table">
              <caption>Per block: cosines; X→Y = mean change of Y's margin under X's direction (nats, 95 % interval); selectivity; natural r</caption>
              <thead><tr><th scope="col">block</th><th scope="col">cos CAA</th><th scope="col">cos probe</th>{CELLS.map(([k, n]) => <th key={k} scope="col" title={`${n}: mean margin change (nats)`}>{n.replace(' on ', '→')}</th>)}<th scope="col" title="|A→B| / |A→A|">sel. A</th><th scope="col" title="|B→A| / |B→B|">sel. B</th><th scope="col" title="Pearson r of the two probe scores over the pool">natural r</th></tr></thead>
              <tbody>
                {r.layers.map((l, i) => (
                  <tr key={l}>
                    <th scope="row">{blockShort(l)}</th>
                    <td data-testid={`mech-cos-${l}`}>{opt(r.cosCaa[i])}</td><td>{opt(r.cosProbe[i])}</td>
                    {CELLS.map(([k]) => <td key={k}><Interval m={r.crossSteer[k][i]} /></td>)}
                    <td data-testid={`mech-sel-a-${l}`}><Selectivity value={r.selectivityA[i]} own={r.crossSteer.aOnA[i].mean} minReach={r.thresholds.minReach} /></td>
                    <td data-testid={`mech-sel-b-${l}`}><Selectivity value={r.selectivityB[i]} own={r.crossSteer.bOnB[i].mean} minReach={r.thresholds.minReach} /></td>
                    <td>{opt(r.naturalCorr[i])}</td>
                  </tr>
                ))}
              </tbody>
            </table>
          </div>
          <p className="hint" data-testid="mech-selectivity-note">
            Selectivity A = |A→B| / |A→A| (nats per nat; B likewise): how far A's direction moves B's margin for each nat it moves A's own. 0 = only A moves,
            1 = both alike, above 1 = B moves more than A. It has no upper bound: where A's own change is small the ratio grows large without meaning.
            {r.layers.some((_, i) => [r.crossSteer.aOnA[i].mean, r.crossSteer.bOnB[i].mean].some((own) => Math.abs(own) < r.thresholds.minReach)) && <> † = the own change is under {r.thresholds.minReach} nats (the reach threshold): that ratio is not read, and the verdict says no reach.</>}
          </p>
        </>
      ) : <p className="placeholder" data-testid="mech-empty">Press Compare behaviours to run the two sets through the model ({a && b ? `${a.positive.length + a.negative.length + b.positive.length + b.negative.length} prompts` : 'loading the sets'}).</p>}
    </section>
  );
}
