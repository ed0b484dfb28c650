import { createRef, useEffect, useMemo, useState } from 'react';
import { useStore } from '../store';
import { runStudy } from '../actions/study';
import { parseContrastSet } from '../actions/vectors';
import { messageOf } from '../actions/worker';
import { useStudy } from '../components/useStudy';
import { LineChart, type Series } from '../components/LineChart';
import { DataTable } from '../components/DataTable';
import { ExportButtons } from '../components/ExportButtons';
import { ResultStatus } from '../components/ResultStatus';
import { fixed, signed, vectorLabel, visibleToken } from '../lib/format';
import { steerableHooks } from '../lib/hooks';
import { hookShort } from '../lib/layer_names';
import { parseIndexList, parseNumberList } from '../lib/lists';
import { waitingFor } from '../lib/job_rules';
import { checkBudgets, DEFAULT_BUDGETS, parseControlSet } from '../../workers/shared';
import type { StudyRequest, StudyResult } from '../../workers/protocol';
import { useChatTurn } from '../components/useExperimentRequest';

type Req = StudyRequest<'sideEffects'>;
type Res = StudyResult<'sideEffects'>;
type Behaviour = Req['target'];

/** The shipped behaviour sets (contrastive sets with the futures they were written for) and control sets. */
const BEHAVIOUR_FILES = ['steering/happy_sad.json', 'probes/he_she.json'];
const CONTROL_FILES = ['control/stories.json', 'control/mixed_instruct.json'];
const TYPES = [
  { type: 'add', title: 'add (dose α)' },
  { type: 'add_norm_preserving', title: 'add, norm kept (dose α)' },
  { type: 'rotate', title: 'rotate (dose θ, radians)' },
] as const;
const B = DEFAULT_BUDGETS;
const COLORS = { reach: '#0969da', kl: '#bc4c00', ll: '#8250df', band: '#1a7f37', others: ['#bf3989', '#6e7781'] };

async function fetchText(file: string): Promise<string> {
  const r = await fetch(new URL(file, document.baseURI));
  if (!r.ok) throw new Error(`${file}: HTTP ${r.status}`);
  return r.text();
}

/** A shipped contrastive set as a behaviour: both classes' prompts and its suggested futures. @throws Error for a set without them. */
function behaviourOf(file: string, json: unknown): Behaviour {
  const set = parseContrastSet(json, file);
  if (!set.suggested) throw new Error(`${file}: the set names no futures ("suggested": {"good", "bad"})`);
  return { name: set.name, prompts: [...set.positive, ...set.negative], good: { text: set.suggested.good }, bad: { text: set.suggested.bad } };
}

/** What the form holds (strings as typed). */
interface Form {
  vectorId: string; type: (typeof TYPES)[number]['type']; site: string; layers: string; doses: string;
  target: string; control: string; others: string[]; reach: string; kl: string; ll: string; other: string;
}

const futureText = (f: Behaviour['good']) => f.text ?? '';

/** The dose key's symbol. */
const doseName = (k: Res['doseKey']) => (k === 'alpha' ? 'α' : k === 'theta' ? 'θ' : 'value');

/** One layer's figure: reach with its interval, KL, the log-likelihood drop and the other sets' shifts against the dose, the window shaded. */
function LayerChart({ r, row, svgRef }: { r: Res; row: number; svgRef: React.RefObject<SVGSVGElement | null> }) {
  const pts = (ys: number[]) => r.doses.map((d, i) => [d, ys[i]] as [number, number]);
  const reach = r.reach[row];
  const series: Series[] = [
    { name: 'reach (target Δ change)', color: COLORS.reach, points: pts(reach.map((x) => x.mean)) },
    { name: 'reach 95 % lo', color: '#80b3f0', dashed: true, points: pts(reach.map((x) => x.lo)) },
    { name: 'reach 95 % hi', color: '#80b3f0', dashed: true, points: pts(reach.map((x) => x.hi)) },
    { name: 'KL on control (nats)', color: COLORS.kl, points: pts(r.kl[row]) },
    { name: 'LL drop −Δll (nats/token)', color: COLORS.ll, points: pts(r.deltaLl[row].map((x) => -x)) },
    ...r.others.map((o, i) => ({ name: `${o.name} Δ shift`, color: COLORS.others[i % 2], points: pts(o.shift[row].map((x) => x.mean)) })),
  ];
  const w = r.window[row];
  const lo = r.doses[0], hi = r.doses[r.doses.length - 1];
  return (
    <LineChart
      series={series} legend zeroLine xTicks={r.doses} xDomain={[lo, hi === lo ? lo + 1 : hi]}
      xBands={w ? [{ from: w[0], to: w[1], label: 'operating window', color: COLORS.band }] : []}
      xLabel={`dose ${doseName(r.doseKey)}`} yLabel="nats" svgRef={svgRef} width={680} height={300}
      label={`reach and side effects against the dose at ${r.hooks[row]}, the operating window shaded`} testId={`side-chart-${row}`}
    />
  );
}

/** The window of one row in words: its interval, or "empty" with what the doses miss. */
function windowText(r: Res, row: number): string {
  const w = r.window[row], k = doseName(r.doseKey);
  if (w) return w[0] === w[1] ? `${k} = ${w[0]} only (one dose of the grid passes)` : `${k} from ${w[0]} to ${w[1]}`;
  const reached = r.reach[row].some((x) => x.mean >= r.budgets.reach);
  return `empty: ${reached ? 'every dose that reaches R breaks a side-effect budget' : `no dose reaches R = ${r.budgets.reach}`}`;
}

/**
 * Side effects and the operating window of a steering vector (DESIGN.md §3 "Operating window";
 * studies/side_effects.ts): for each dose (and layer), the reach on a behaviour's set and the side
 * effects on a control set of unrelated text and on other behaviours' sets, with the dose interval
 * where reach ≥ R and every side effect is within its budget shaded.
 */
export function SideEffectsView() {
  const vectors = useStore((s) => s.vectors);
  const info = useStore((s) => s.info);
  const job = useStore((s) => s.job);
  const ready = useStore((s) => s.modelStatus === 'ready');
  const turn = useChatTurn();
  const showTables = useStore((s) => s.showTables);
  const setView = useStore((s) => s.setView);
  const [sets, setSets] = useState<Record<string, Behaviour>>({});
  const [controls, setControls] = useState<Record<string, { name: string; texts: string[] }>>({});
  const [error, setError] = useState<string | null>(null);
  const [form, setForm] = useState<Form>({
    vectorId: '', type: 'add', site: 'hook_resid_post', layers: '3', doses: '-1, 0, 0.5, 1, 1.5, 2, 3, 4, 6',
    target: BEHAVIOUR_FILES[0], control: CONTROL_FILES[0], others: [], reach: String(B.reach), kl: String(B.kl), ll: String(B.ll), other: String(B.other),
  });
  const update = (p: Partial<Form>) => setForm((f) => ({ ...f, ...p }));
  useEffect(() => {
    let live = true;
    void (async () => {
      try {
        const b = Object.fromEntries(await Promise.all(BEHAVIOUR_FILES.map(async (f) => [f, behaviourOf(f, JSON.parse(await fetchText(f)))] as const)));
        const c = Object.fromEntries(await Promise.all(CONTROL_FILES.map(async (f) => [f, parseControlSet(f, await fetchText(f))] as const)));
        if (live) { setSets(b); setControls(c); }
      } catch (e) {
        if (live) setError(`Could not load the shipped sets: ${messageOf(e)}`);
      }
    })();
    return () => { live = false; };
  }, []);
  const vectorId = form.vectorId || vectors[0]?.id || '';
  const vector = vectors.find((v) => v.id === vectorId);
  const sites = steerableHooks(info?.hookNames ?? []).filter((h) => h.startsWith('blocks.0.')).map((h) => h.slice('blocks.0.'.length));

  /** The request the form describes, or why it cannot be sent (nothing runs then). */
  const built = useMemo((): { req: Req } | { why: string } | null => {
    if (!vector || !info || !sets[form.target] || !controls[form.control]) return null;
    try {
      const num = (s: string, what: string) => {
        const v = Number(s.replace(/−/g, '-'));
        if (s.trim() === '' || !Number.isFinite(v)) throw new Error(`${what}: "${s}" is not a number`);
        return v;
      };
      const budgets = { reach: num(form.reach, 'R'), kl: num(form.kl, 'KL budget'), ll: num(form.ll, 'log-likelihood budget'), other: num(form.other, "other sets' budget") };
      checkBudgets(budgets);
      return {
        req: {
          template: { hook: `blocks.{l}.${form.site}`, type: form.type, vector: vector.vector },
          layers: parseIndexList(form.layers, info.nLayers, 'layers'), doses: parseNumberList(form.doses, 'doses'),
          target: sets[form.target], control: controls[form.control].texts,
          others: form.others.filter((f) => f !== form.target && sets[f]).map((f) => sets[f]),
          budgets,
          ...turn,
        },
      };
    } catch (e) {
      return { why: messageOf(e) };
    }
  }, [vector, info, sets, controls, form, turn]);
  const req = built && 'req' in built ? built.req : undefined;
  const study = useStudy('sideEffects', req);
  const r = study.run?.result;
  const svgs = useMemo(() => (r ? r.hooks.map(() => createRef<SVGSVGElement>()) : []), [r]);
  const run = () => {
    if (!req) return;
    const texts = req.target.prompts.length + req.control.length + (req.others ?? []).reduce((n, o) => n + o.prompts.length, 0);
    void runStudy('sideEffects', req, { label: 'Side effects', what: 'Could not compute the side effects', total: texts * (1 + req.layers!.length * req.doses.length) });
  };
  const runReq = study.run?.request;
  const k = r ? doseName(r.doseKey) : 'α';
  return (
    <section className="view" data-testid="side-effects-view">
      <header className="view-head">
        <h2>Side effects and the operating window</h2>
        <p className="muted">
          Per dose: the <b>reach</b> (mean change of a behaviour's margin Δ over its prompts, 95 % bootstrap interval) and the <b>side effects</b> — mean next-token
          KL(p_unsteered ‖ p_steered) over every position of unrelated control text, the change of its log-likelihood (nats per token), other sets' margin shifts.
          The <b>operating window</b> is the run of doses with reach ≥ R and every side effect within budget (defaults: R = {B.reach} nat, KL ≤ {B.kl} nats,
          a log-likelihood drop ≤ {B.ll} nats per token, other sets moved ≤ {B.other} nats).
        </p>
      </header>
      <form className="settings" onSubmit={(e) => { e.preventDefault(); if (!job) run(); }}>
        <div className="row">
          <label>Vector
            <select data-testid="side-vector" value={vectorId} onChange={(e) => update({ vectorId: e.target.value })}>
              {!vectors.length && <option value="">—</option>}
              {vectors.map((v) => <option key={v.id} value={v.id}>{vectorLabel(v)}</option>)}
            </select>
          </label>
          {!vectors.length && <button type="button" className="small" onClick={() => setView('vectors')}>Build or import a vector…</button>}
        </div>
        <div className="row">
          <label>Type
            <select data-testid="side-type" value={form.type} onChange={(e) => update({ type: e.target.value as Form['type'] })}>
              {TYPES.map((t) => <option key={t.type} value={t.type}>{t.title}</option>)}
            </select>
          </label>
          <label>At blocks.{'{l}'}.
            <select data-testid="side-site" value={form.site} onChange={(e) => update({ site: e.target.value })}>
              {sites.map((h) => <option key={h} value={h}>{h}</option>)}
            </select>
          </label>
          <label title={`Block indices: "all", "1,2,3" or "0-${(info?.nLayers ?? 1) - 1}"`}>Layers
            <input data-testid="side-layers" className="short" value={form.layers} onChange={(e) => update({ layers: e.target.value })} spellCheck={false} />
          </label>
          <label title="Doses separated by commas">Doses
            {/* as wide as its list (1 ch per character, within the row): the default nine doses were cut off at the browser's 20 characters */}
            <input data-testid="side-doses" value={form.doses} style={{ width: `${Math.min(60, Math.max(16, form.doses.length + 2))}ch`, maxWidth: '100%' }} onChange={(e) => update({ doses: e.target.value })} spellCheck={false} />
          </label>
        </div>
        <div className="row">
          <label>Behaviour (reach)
            <select data-testid="side-target" value={form.target} onChange={(e) => update({ target: e.target.value })}>
              {BEHAVIOUR_FILES.map((f) => <option key={f} value={f}>{sets[f]?.name ?? f}</option>)}
            </select>
          </label>
          {sets[form.target] && <span className="muted" data-testid="side-futures">{sets[form.target].prompts.length} prompts · Δ = log p(<b className="good">{visibleToken(futureText(sets[form.target].good))}</b>) − log p(<b className="bad">{visibleToken(futureText(sets[form.target].bad))}</b>)</span>}
          <label>Control text
            <select data-testid="side-control" value={form.control} onChange={(e) => update({ control: e.target.value })}>
              {CONTROL_FILES.map((f) => <option key={f} value={f}>{controls[f] ? `${controls[f].name} (${controls[f].texts.length} texts)` : f}</option>)}
            </select>
          </label>
          {BEHAVIOUR_FILES.filter((f) => f !== form.target).map((f) => (
            <label key={f} className="check">
              <input type="checkbox" data-testid={`side-other-${f}`} checked={form.others.includes(f)} onChange={(e) => update({ others: e.target.checked ? [...form.others, f] : form.others.filter((x) => x !== f) })} />
              also watch {sets[f]?.name ?? f}
            </label>
          ))}
        </div>
        <div className="row">
          <label title="The least mean margin change on the behaviour's set (nats)">reach ≥ R
            <input data-testid="side-reach" className="short" value={form.reach} onChange={(e) => update({ reach: e.target.value })} />
          </label>
          <label title="The most mean next-token KL on the control text (nats)">KL ≤
            <input data-testid="side-kl" className="short" value={form.kl} onChange={(e) => update({ kl: e.target.value })} />
          </label>
          <label title="The most drop of the control text's log-likelihood (nats per token)">LL drop ≤
            <input data-testid="side-ll" className="short" value={form.ll} onChange={(e) => update({ ll: e.target.value })} />
          </label>
          <label title="The most |margin shift| of each other set watched (nats)">others ≤
            <input data-testid="side-other-budget" className="short" value={form.other} onChange={(e) => update({ other: e.target.value })} />
          </label>
          <button type="submit" className="primary" data-testid="run-side-effects" title={waitingFor(job)} disabled={!!job || !ready || !req}>Run side effects</button>
        </div>
        {built && 'why' in built && <p className="stale-note" role="alert" data-testid="side-form-error">{built.why}</p>}
        {error && <p className="stale-note" role="alert">{error}</p>}
      </form>
      {study.running && <p className="running-note" role="status"><span className="spinner" aria-hidden="true" />Running: every prompt and control text once unsteered, then once per layer and dose (Cancel on the progress line under the experiment).</p>}
      {study.run && r && runReq ? (
        <>
          <div className="view-head">
            <p className="muted" data-testid="side-caption">
              {study.run.modelLabel} · reach on “{runReq.target.name}” ({r.counts.target} prompts; unsteered mean Δ = {signed(r.unsteered.margin, 3)}) · control “{Object.values(controls).find((c) => JSON.stringify(c.texts) === JSON.stringify(runReq.control))?.name ?? 'pasted texts'}”: {r.counts.control} texts, {r.counts.positions} positions
              {' '}(unsteered log-likelihood {fixed(r.unsteered.llPerToken, 3)} nats/token) · budgets: reach ≥ {r.budgets.reach}, KL ≤ {r.budgets.kl}, LL drop ≤ {r.budgets.ll}{r.others.length ? `, others ≤ ${r.budgets.other}` : ''}
            </p>
            <ExportButtons
              name={`side-effects-${study.run.modelLabel}`}
              json={() => ({ model: study.run!.modelLabel, target: runReq.target, control: runReq.control, otherSets: runReq.others, template: { ...runReq.template, vector: Array.from(runReq.template.vector as ArrayLike<number>) }, ...r })}
              csv={() => [['hook', `dose ${r.doseKey}`, 'reach: mean Δ change (nats)', 'reach 95 % lo', 'reach 95 % hi', 'KL on control (nats)', 'Δll on control (nats/token)', ...r.others.map((o) => `${o.name}: mean Δ shift (nats)`), 'in window', 'why not'],
                ...r.hooks.flatMap((h, li) => r.doses.map((d, di) => [h, d, r.reach[li][di].mean, r.reach[li][di].lo, r.reach[li][di].hi, r.kl[li][di], r.deltaLl[li][di], ...r.others.map((o) => o.shift[li][di].mean), r.pass[li][di] ? 'yes' : 'no', r.why[li][di].join('; ')]))]}
              figure={() => ({
                title: `Side effects and the operating window · ${study.run!.modelLabel}`,
                caption: [`reach = mean change of Δ = log p(“${futureText(runReq.target.good)}”) − log p(“${futureText(runReq.target.bad)}”) over “${runReq.target.name}”; KL and log-likelihood on ${r.counts.control} control texts`,
                  `budgets: reach ≥ ${r.budgets.reach}, KL ≤ ${r.budgets.kl}, LL drop ≤ ${r.budgets.ll}; window: ${r.hooks.map((h, i) => `${hookShort(h)} ${windowText(r, i)}`).join('; ')}`],
                panels: svgs.flatMap((s, i) => (s.current ? [{ kind: 'svg' as const, title: r.hooks[i], element: s.current }] : [])),
              })}
            />
          </div>
          <ResultStatus model={study.run.modelLabel} computedWith={study.run.computedWith} noun="side-effects run" rerun={{ label: 'Run side effects', run }} testId="side-status" />
          {study.stale === 'request' && <p className="hint" data-testid="side-stale">The settings above have changed since this run: run again to update it.</p>}
          <div className={`view-body${study.running ? ' updating' : ''}`}>
            {r.hooks.map((h, i) => (
              <div className="figure" key={h}>
                <h3>{h} · {runReq.template.type} {k}</h3>
                <p className={r.window[i] ? 'note-ok' : 'stale-note'} data-testid={`side-window-${i}`} data-window={JSON.stringify(r.window[i])}>
                  Operating window at {hookShort(h)}: {windowText(r, i)}.
                </p>
                <LayerChart r={r} row={i} svgRef={svgs[i]} />
              </div>
            ))}
          </div>
          {showTables && r.hooks.map((h, li) => (
            <DataTable key={h} caption={`${h}: reach and side effects by dose`} rowHeader={`dose ${k}`} rowLabels={r.doses.map(String)}
              colLabels={['reach [95 %]', 'KL', 'Δll / token', ...r.others.map((o) => `${o.name} shift`), 'why not in the window']}
              cell={(di, c) => {
                if (c === 0) return `${fixed(r.reach[li][di].mean, 3)} [${fixed(r.reach[li][di].lo, 3)}, ${fixed(r.reach[li][di].hi, 3)}]`;
                if (c === 1) return fixed(r.kl[li][di], 4);
                if (c === 2) return fixed(r.deltaLl[li][di], 4);
                if (c < 3 + r.others.length) return signed(r.others[c - 3].shift[li][di].mean, 3);
                return r.why[li][di].join('; ') || 'in the window';
              }}
              cellTestId={(di, c) => `side-cell-${li}-${di}-${c}`} testId={`side-table-${li}`} />
          ))}
        </>
      ) : !study.running && <p className="placeholder" data-testid="side-empty">{vectors.length ? 'Run the side effects' : 'Build or import a vector (Vectors tab), then run the side effects'} to see how far the vector moves its behaviour, what it costs elsewhere, and the doses where it is worth using.</p>}
    </section>
  );
}
