import { useRef, useState } from 'react';
import { useStore } from '../store';
import { runStudy } from '../actions/study';
import { useStudy } from '../components/useStudy';
import type { ChatTurnFields } from '../lib/experiment_request';
import { ExportButtons } from '../components/ExportButtons';
import { FilePickButton } from '../components/FilePickButton';
import { LineChart } from '../components/LineChart';
import { SharedPrefixNote } from '../components/SharedPrefixNote';
import { signed } from '../lib/format';
import { waitingFor } from '../lib/job_rules';
import { parseSpanSet, type SpanSetFileRow } from '../../workers/shared';
import type { StudyRequest, StudyResult } from '../../workers/protocol';

type Span = { label: string; start: number; end: number };
type Method = StudyRequest<'spanFaithfulness'>['methods'][number];
type Result = StudyResult<'spanFaithfulness'>;
type Interval = Result['summary'][number]['values'][number];

const METHODS: { method: Method; title: string; color: string }[] = [
  { method: 'flow', title: 'flow', color: '#0969da' },
  { method: 'grad_x_input', title: 'gradient × input', color: '#bf8700' },
  { method: 'ig', title: 'integrated gradients', color: '#8250df' },
];
const titleOf = (m: Method) => METHODS.find((x) => x.method === m)!.title;
const colorOf = (m: Method) => METHODS.find((x) => x.method === m)!.color;

/** "mean" for one prompt, "mean [lo, hi]" over a set. */
const withInterval = (v: Interval) => (v.n > 1 ? `${signed(v.mean, 3)} [${signed(v.lo, 3)}, ${signed(v.hi, 3)}]` : signed(v.mean, 3));

/**
 * Span faithfulness in the Attribution view (studies/span_faithfulness.ts): for the spans picked on
 * the strip (this prompt) or for a span prompt set file (io/span_set.ts), each method's number per
 * span and its deletion / insertion curves over spans; over a set, the means with 95 % percentile
 * bootstrap intervals over the prompts.
 */
export function SpanFaithfulnessPanel({ prompt, good, bad, turn, spans }: { prompt: string; good: string; bad: string; turn: ChatTurnFields; spans: readonly Span[] }) {
  const job = useStore((s) => s.job);
  const ready = useStore((s) => s.modelStatus === 'ready');
  const [methods, setMethods] = useState<Method[]>(['flow', 'grad_x_input']);
  const [set, setSet] = useState<{ name: string; rows: SpanSetFileRow[] } | null>(null);
  const [setError, setSetError] = useState<string | null>(null);
  const svg = useRef<SVGSVGElement | null>(null);
  const rows: SpanSetFileRow[] = set ? set.rows : [{ prompt, spans: [...spans] }];
  const req: StudyRequest<'spanFaithfulness'> = { rows, good, bad, ...turn, methods };
  const study = useStudy('spanFaithfulness', req);
  const r = study.run?.result;
  const canRun = ready && !job && methods.length > 0 && (set !== null || spans.length > 0);
  const load = async (f: File) => {
    try {
      setSet({ name: f.name, rows: parseSpanSet(f.name, await f.text()) });
      setSetError(null);
    } catch (e) {
      setSetError((e as Error).message);
    }
  };
  return (
    <section className="figure" data-testid="span-faithfulness">
      <h3>Span faithfulness: each method’s spans deleted and inserted</h3>
      <p className="muted">
        Each method gives every span one number (its tokens’ sum); the spans are ranked by it and the top k deleted (replaced by the baseline token) or kept alone,
        and Δ is measured again. A faithful map’s deletion curve falls fast and its insertion curve rises fast. Over a prompt set: means with 95 % bootstrap intervals over the prompts.
      </p>
      <div className="row settings">
        {METHODS.map((m) => (
          <label key={m.method} className="toggle">
            <input type="checkbox" data-testid={`span-method-${m.method}`} checked={methods.includes(m.method)}
              onChange={(e) => setMethods(e.target.checked ? METHODS.map((x) => x.method).filter((x) => x === m.method || methods.includes(x)) : methods.filter((x) => x !== m.method))} />
            {m.title}
          </label>
        ))}
        <FilePickButton label="Load a prompt set…" accept=".json,.jsonl,.ndjson" testId="span-set-file" disabled={!!job} onFile={(f) => void load(f)} />
        {set && <span className="muted" data-testid="span-set-name">{set.name}: {set.rows.length} prompts <button type="button" className="small" onClick={() => setSet(null)} data-testid="span-set-clear">use this prompt</button></span>}
        <button type="button" className="primary" data-testid="run-span-faithfulness" disabled={!canRun} title={waitingFor(job)}
          onClick={() => void runStudy('spanFaithfulness', req, { label: 'Span faithfulness', what: 'Could not compute the span faithfulness', total: rows.length * methods.length })}>Run span faithfulness</button>
      </div>
      {setError && <p className="warn" role="alert" data-testid="span-set-error">{setError}</p>}
      {!set && spans.length === 0 && <p className="hint">Add spans on the strip first (or load a prompt set file: a JSON array or JSONL of {'{"prompt", "spans": [{"label", "text"} or {"label", "start", "end"}]}'}).</p>}
      {methods.length === 0 && <p className="warn">Tick at least one method.</p>}
      {r && study.stale && <p className="muted" data-testid="span-faithfulness-stale">These numbers are for an earlier prompt, set, span list or model: run again to update them.</p>}
      {r && (
        <>
          <SharedPrefixNote shared={r.prompts.find((p) => p.sharedPrefix)?.sharedPrefix} reads={`the curves of ${r.prompts.filter((p) => p.sharedPrefix).length} of ${r.prompts.length} prompts read`} testId="span-shared-prefix" />
          <div className="table-scroll">
            <table className="data-table" data-testid="span-faithfulness-table" data-prompts={r.prompts.length}>
              <caption>Span values (nats of Δ){r.prompts.length > 1 ? `, mean [95 % interval] over ${r.prompts.length} prompts` : ''}; deletion and insertion areas (mean Δ over k)</caption>
              <thead><tr><th>method</th>{r.labels.map((l) => <th key={l}>{l}</th>)}<th>deletion area</th><th>insertion area</th></tr></thead>
              <tbody>
                {r.summary.map((s) => (
                  <tr key={s.method}>
                    <th>{titleOf(s.method)}</th>
                    {s.values.map((v, j) => <td key={j} className="mono" data-testid={`span-value-${s.method}-${j}`} data-mean={v.mean}>{withInterval(v)}</td>)}
                    <td className="mono" data-testid={`span-deletion-area-${s.method}`} data-mean={s.deletionArea.mean}>{withInterval(s.deletionArea)}</td>
                    <td className="mono">{withInterval(s.insertionArea)}</td>
                  </tr>
                ))}
              </tbody>
            </table>
          </div>
          <LineChart
            series={r.summary.flatMap((s) => [
              { name: `${titleOf(s.method)}: deletion`, color: colorOf(s.method), points: r.k.map((k, i) => [k, s.deletion[i].mean] as [number, number]) },
              { name: `${titleOf(s.method)}: insertion`, color: colorOf(s.method), dashed: true, points: r.k.map((k, i) => [k, s.insertion[i].mean] as [number, number]) },
            ])}
            legend zeroLine xTicks={r.k} xDomain={[0, Math.max(1, r.k[r.k.length - 1])]}
            xLabel={`k top-ranked spans: deleted (solid), kept alone (dashed)`} yLabel={r.prompts.length > 1 ? 'mean Δ (nats)' : 'Δ (nats)'}
            svgRef={svg} width={560} height={240} label="span deletion and insertion curves per method" testId="span-deletion-curve"
          />
          <p className="hint" data-testid="span-faithfulness-note">
            Deleted spans are replaced by token {r.baselineId}.{' '}
            {r.summary.length > 1 && r.prompts.every((p) => p.methods.every((m) => m.order.join() === p.methods[0].order.join())) ? 'The methods rank the spans alike here, so their curves coincide; they differ in the span values above.' : ''}
          </p>
          <ExportButtons
            name="span-faithfulness"
            json={() => ({ good, bad, ...r })}
            csv={() => [['method', 'quantity', 'k or span', 'mean', 'lo', 'hi', 'n'], ...r.summary.flatMap((s) => [
              ...s.values.map((v, j) => [s.method, 'span value', r.labels[j], v.mean, v.lo, v.hi, v.n]),
              ...s.deletion.map((v, k) => [s.method, 'deletion Δ', k, v.mean, v.lo, v.hi, v.n]),
              ...s.insertion.map((v, k) => [s.method, 'insertion Δ', k, v.mean, v.lo, v.hi, v.n]),
            ])]}
            figure={() => svg.current && ({
              title: 'Span faithfulness per method',
              caption: [`Δ = log p(“${good}”) − log p(“${bad}”); ${r.prompts.length > 1 ? `${r.prompts.length} prompts (means)` : `prompt “${r.prompts[0].prompt}”`}`, `spans: ${r.labels.join(', ')}`],
              panels: [{ kind: 'svg' as const, element: svg.current }],
            })}
          />
        </>
      )}
    </section>
  );
}
