import { useEffect, useMemo, useRef, useState } from 'react';
import { SharedPrefixNote } from '../components/SharedPrefixNote';
import { useStore } from '../store';
import { loadExample, openRow, runBatch, studyExamples, type StudyExample } from '../actions/batch';
import { ExportButtons } from '../components/ExportButtons';
import { SteeringNotice } from '../components/SteeringNotice';
import { SteeredTag } from '../components/SteeredTag';
import { interventionText } from '../lib/steered';
import { FilePickButton } from '../components/FilePickButton';
import { IntervalChart } from '../components/IntervalChart';
import { fixed, vectorLabel } from '../lib/format';
import { residShort } from '../lib/layer_names';
import { ANALYSIS_METRICS, flatRow, METRIC_DOCS, parseTemplate, PATCH_HOOKS, summarize } from '../../workers/shared';
import type { BatchMetric, PatchHook } from '../../workers/protocol';
import { waitingFor } from '../lib/job_rules';
import { loadStaleText, loadedNow } from '../lib/model_identity';
import { ResultStatus, StaleOverlay } from '../components/ResultStatus';
import { decisionPointText } from '../lib/decision_point_text';

/** The columns that need settings: probe_score (a library vector at its hook) and patch_recovery (a cell). */
function ExtraColumns() {
  const c = useStore((s) => s.batchColumns);
  const update = useStore((s) => s.setBatchColumns);
  const vectors = useStore((s) => s.vectors);
  const nLayers = useStore((s) => s.info?.nLayers ?? 1);
  return (
    <div className="row settings" data-testid="batch-columns">
      <label title={METRIC_DOCS.probe_score}>probe_score of
        <select data-testid="batch-probe-vector" value={c.probeVectorId ?? ''} onChange={(e) => update({ probeVectorId: e.target.value || null })}>
          <option value="">— (no column)</option>
          {vectors.map((v) => <option key={v.id} value={v.id} disabled={!v.hook}>{vectorLabel(v)}</option>)}
        </select>
      </label>
      {vectors.length === 0 && <span className="muted">(build a vector or send a probe direction to the library first)</span>}
      <label title={METRIC_DOCS.patch_recovery}>
        <input type="checkbox" data-testid="batch-patch" checked={c.patch} onChange={(e) => update({ patch: e.target.checked })} /> patch_recovery at
      </label>
      <select data-testid="batch-patch-hook" aria-label="patched hook" value={c.patchHook} disabled={!c.patch} onChange={(e) => update({ patchHook: e.target.value as PatchHook })}>
        {Object.keys(PATCH_HOOKS).map((h) => <option key={h} value={h}>{h}</option>)}
      </select>
      <label>layer <input type="number" className="short" min={0} max={nLayers - 1} data-testid="batch-patch-layer" value={c.patchLayer} disabled={!c.patch} onChange={(e) => update({ patchLayer: Number(e.target.value) })} /></label>
      <label title="token position (−1 = the last), or the head for z">{c.patchHook === 'z' ? 'head' : 'position'} <input type="number" className="short" data-testid="batch-patch-position" value={c.patchPosition} disabled={!c.patch} onChange={(e) => update({ patchPosition: Number(e.target.value) })} /></label>
      {c.patch && <span className="muted">(each prompt patched into its template's “corrupt” variant)</span>}
    </div>
  );
}

/** The template and values editors, the shipped examples, Run. */
function StudyForm() {
  const template = useStore((s) => s.batchTemplate);
  const values = useStore((s) => s.batchValues);
  const valuesName = useStore((s) => s.batchValuesName);
  const setInput = useStore((s) => s.setBatchInput);
  const job = useStore((s) => s.job);
  const ready = useStore((s) => s.modelStatus === 'ready');
  const [examples, setExamples] = useState<StudyExample[]>([]);
  const [problem, setProblem] = useState<string | null>(null);
  useEffect(() => { studyExamples().then(setExamples, (e: Error) => setProblem(`the examples could not be listed: ${e.message}`)); }, []);
  const description = useMemo(() => { try { return parseTemplate(template).description ?? null; } catch { return null; } }, [template]);
  return (
    <div className="study-form" data-testid="batch-study-form" data-values-name={valuesName ?? ''}>
      <div className="row settings">
        <span className="muted">Examples:</span>
        {examples.map((ex) => <button key={ex.id} type="button" className="small" data-testid={`example-${ex.id}`} title={waitingFor(job)} disabled={!!job} onClick={() => void loadExample(ex)}>{ex.title}</button>)}
        {problem && <span className="export-problem">{problem}</span>}
      </div>
      <div className="row study-inputs">
        <label className="grow">Template <span className="muted">{'JSON: {"prompt": "…{var}…", "good": " {a}", "bad": " {b}", "corrupt": "…", "x": "var"}'}</span>
          <textarea data-testid="batch-template" rows={7} spellCheck={false} value={template} onChange={(e) => setInput({ template: e.target.value })} />
        </label>
        <label className="grow">Values <span className="muted">{valuesName ? `from ${valuesName}` : 'CSV, TSV, JSON Lines or a JSON array; one row per prompt'}</span>
          <textarea data-testid="batch-values" rows={7} spellCheck={false} value={values} onChange={(e) => setInput({ values: e.target.value, valuesName: null })} />
        </label>
      </div>
      {description && <p className="hint" data-testid="batch-description">{description}</p>}
      <ExtraColumns />
      <div className="row">
        <FilePickButton label="Load values file…" accept=".csv,.tsv,.jsonl,.ndjson,.json" testId="batch-values-file" disabled={!!job} onFile={(f) => void f.text().then((t) => setInput({ values: t, valuesName: f.name }))} />
        <button type="button" className="primary" data-testid="run-batch" title={waitingFor(job)} disabled={!!job || !ready} onClick={() => void runBatch()}>Run batch</button>
        <span className="hint">Runs every row with the model loaded and the enabled interventions; Cancel keeps the rows done.</span>
      </div>
    </div>
  );
}

/**
 * Batch studies: a prompt template over a table of values (or a list of prompts with their own
 * futures), each prompt analysed in the worker; scalar columns per prompt; a column plotted against
 * a variable with means and 95 % bootstrap intervals; the table sortable, filterable, and a row
 * opens that prompt's full analysis.
 */
export function BatchView() {
  const rows = useStore((s) => s.batchRows);
  const valuesName = useStore((s) => s.batchValuesName); // an example's or a file's values are in the form
  const result = useStore((s) => s.batchResult);
  const model = useStore((s) => s.batchModel);
  const computedWith = useStore((s) => s.batchComputedWith);
  // rows of another load (another model, or this one with other weights or on another backend): dimmed, marked stale
  const stale = useStore((s) => (model !== null && loadStaleText(model, computedWith, loadedNow(s)) !== ''));
  const steering = useStore((s) => s.batchSteering);
  const vectors = useStore((s) => s.vectors);
  const xVar = useStore((s) => s.batchX);
  const yMetric = useStore((s) => s.batchY);
  const setPlot = useStore((s) => s.setBatchPlot);
  const sort = useStore((s) => s.batchSort);
  const setSort = useStore((s) => s.setBatchSort);
  const filter = useStore((s) => s.batchFilter);
  const setFilter = useStore((s) => s.setBatchFilter);
  const job = useStore((s) => s.job);
  const svg = useRef<SVGSVGElement | null>(null);
  const columns = useMemo(() => [...new Set(rows.flatMap((r) => Object.keys(r.vars)))], [rows]);
  const metrics: BatchMetric[] = result?.metrics ?? (rows[0] ? (Object.keys(rows[0].metrics) as BatchMetric[]) : [...ANALYSIS_METRICS]);
  const records = useMemo(() => rows.map((r) => ({ row: r, flat: flatRow(r, columns, metrics) })), [rows, columns, metrics]);
  const x = xVar && columns.includes(xVar) ? xVar : columns[0] ?? null;
  const summary = useMemo(() => (x && rows.length ? summarize(rows, [yMetric], x) : null), [rows, x, yMetric]);
  const shown = useMemo(() => {
    const f = filter.trim().toLowerCase();
    const kept = f ? records.filter((r) => Object.values(r.flat).some((v) => String(v ?? '').toLowerCase().includes(f))) : records;
    if (!sort) return kept;
    const val = (r: (typeof kept)[number]) => r.flat[sort.key];
    return [...kept].sort((a, b) => {
      const va = val(a), vb = val(b);
      const c = typeof va === 'number' && typeof vb === 'number' ? va - vb : String(va ?? '').localeCompare(String(vb ?? ''), undefined, { numeric: true });
      return sort.desc ? -c : c;
    });
  }, [records, filter, sort]);
  const header = records[0] ? Object.keys(records[0].flat) : [];
  // On screen the results come first (the CSV keeps the runner's column order): at 1280 px the long prompt text would push them off-screen.
  const shownHeader = [...header.filter((h) => h === 'index' || (metrics as readonly string[]).includes(h)), ...header.filter((h) => h !== 'index' && !(metrics as readonly string[]).includes(h))];
  const neverVisible = metrics.includes('lens_visible_layer') && records.some((r) => r.flat.lens_visible_layer === null && !r.row.error);
  const groups = summary?.groups.filter((g) => g.stats[yMetric]!.n > 0).map((g) => ({ x: g.x, label: g.value, ...g.stats[yMetric]! })) ?? [];
  const numericX = summary ? summary.groups.every((g) => g.x === Number(g.value)) : false;
  const xOf = new Map(summary?.groups.map((g) => [g.value, g.x]) ?? []);
  const errors = rows.filter((r) => r.error).length;
  return (
    <section className="view" data-testid="batch-view">
      <header className="view-head">
        <h2>Batch study</h2>
        <p className="muted">One measurement over many prompts: fill a template from a table of values, analyse each prompt, and plot a column against a variable with its mean and a 95 % bootstrap interval.</p>
      </header>
      <SteeringNotice testId="batch-steering-notice" />
      <StudyForm />
      {rows.length > 0 ? (
        <>
          <p className="muted" data-testid="batch-status">
            {model}<SteeredTag steering={steering} testId="batch-steered-tag" /> · {rows.length}{result ? ` of ${result.total}` : ''} prompts{job?.kind === 'batch' ? ' so far…' : ''}{result?.cancelled ? ' (cancelled: the rows done are kept)' : ''}{errors ? ` · ${errors} could not be analysed (see the error column)` : ''}
          </p>
          <div className="row settings">
            <label>Plot
              <select data-testid="batch-y" value={yMetric} onChange={(e) => setPlot({ y: e.target.value as BatchMetric })}>
                {metrics.map((m) => <option key={m} value={m} title={METRIC_DOCS[m]}>{m}</option>)}
              </select>
            </label>
            <label>against
              <select data-testid="batch-x" value={x ?? ''} onChange={(e) => setPlot({ x: e.target.value })}>
                {columns.map((c) => <option key={c} value={c}>{c}</option>)}
              </select>
            </label>
            <ExportButtons name={`batch-${model}`}
              json={() => ({ model, interventions: steering.map((a) => ({ text: interventionText(a, vectors), ...a })), metrics, rows: records.map((r) => r.flat), aggregate: x ? summarize(rows, metrics, x) : null })}
              csv={() => [header, ...records.map((r) => header.map((h) => r.flat[h] ?? ''))]}
              figure={() => svg.current && ({ title: `${yMetric} against ${x} · ${model}`, caption: [METRIC_DOCS[yMetric], 'grey dots: prompts; blue: mean with its 95 % percentile bootstrap interval (2000 resamples)', ...steering.map((a) => `under ${interventionText(a, vectors)}`)], panels: [{ kind: 'svg', element: svg.current }] })} />
          </div>
          {model !== null && <ResultStatus model={model} computedWith={computedWith} noun="batch" rerun={{ label: 'Run batch', run: () => void runBatch() }} testId="batch-stale" />}
          {[...new Map(rows.flatMap((r) => (r.sharedPrefix ? [[r.sharedPrefix.note, r.sharedPrefix] as const] : []))).values()].map((sp) => (
            <SharedPrefixNote key={sp.note} shared={sp} tokens={false} reads={`the first-token metrics of ${rows.filter((r) => r.sharedPrefix?.note === sp.note).length} of ${rows.length} rows read`} testId="batch-shared-prefix" />
          ))}
          <div className={`figure${stale ? ' stale' : ''}`}>
            {stale && <StaleOverlay testId="batch-stale-figure" action="run the batch again" />}
            {groups.length > 0 ? (
              <IntervalChart groups={groups} points={rows.filter((r) => !r.error && x).map((r) => [xOf.get(r.vars[x!]) ?? NaN, r.metrics[yMetric] ?? NaN] as [number, number])}
                xLabel={x ?? ''} yLabel={yMetric} line={numericX} svgRef={svg} label={`${yMetric} against ${x}: means with 95 % bootstrap intervals`} testId="batch-plot" />
            ) : <p className="hint">No finite {yMetric} values to plot yet.</p>}
            <p className="hint">{METRIC_DOCS[yMetric]}.</p>
          </div>
          <div className="row">
            <label>Filter <input data-testid="batch-filter" value={filter} placeholder="text in any cell" onChange={(e) => setFilter(e.target.value)} /></label>
            <span className="muted">{shown.length} of {rows.length} rows · click a column to sort, a row to open its full analysis</span>
          </div>
          <div className="table-scroll">
            <table className="data-table batch-table" data-testid="batch-table">
              <thead>
                <tr>{shownHeader.map((h) => (
                  <th key={h} scope="col" title={(METRIC_DOCS as Record<string, string>)[h]} aria-sort={sort?.key === h ? (sort.desc ? 'descending' : 'ascending') : undefined}>
                    <button type="button" className="link" data-testid={`sort-${h}`} onClick={() => setSort({ key: h, desc: sort?.key === h ? !sort.desc : false })}>{h}{sort?.key === h ? (sort.desc ? ' ▼' : ' ▲') : ''}</button>
                  </th>
                ))}</tr>
              </thead>
              <tbody>
                {shown.map(({ row, flat }) => (
                  <tr key={row.index} data-testid="batch-row" data-index={row.index} className={`clickable${row.error ? ' error' : ''}`} title="Open this prompt's full analysis" onClick={() => { if (!job) void openRow(row); }}>
                    {shownHeader.map((h) => (h === 'lens_visible_layer' && flat[h] === null && !row.error
                      ? <td key={h} className="muted never" title={METRIC_DOCS.lens_visible_layer}>never*</td>
                      : h === 'lens_visible_layer' && typeof flat[h] === 'number'
                        ? <td key={h} className="mono" title={`residual row ${flat[h]} (the CSV's value): ${residShort(flat[h] as number)}`}>{residShort(flat[h] as number)}</td>
                      : <td key={h} className={typeof flat[h] === 'number' ? 'mono' : 'text'} title={typeof flat[h] === 'string' ? String(flat[h]) : undefined}>{typeof flat[h] === 'number' && !Number.isInteger(flat[h]) ? fixed(flat[h] as number, 4) : String(flat[h] ?? '')}</td>))}
                  </tr>
                ))}
              </tbody>
            </table>
          </div>
          {neverVisible && (
            <p className="muted" data-testid="batch-never-legend">
              * never: the lens margin at {decisionPointText(rows.map((r) => r.sharedPrefix))} never keeps its final sign with |Δ| ≥ the visibility threshold ({result?.visibleThreshold ?? 1} nats), so lens_visible_layer has no value (empty in the CSV).
            </p>
          )}
        </>
      ) : <p className="placeholder" data-testid="batch-empty">{valuesName !== null ? `Run the batch over ${valuesName} to fill the table and the plot.` : 'Load an example (the distractor study runs on the bundled stories260K) or write a template and a values table, then run the batch.'}</p>}
    </section>
  );
}
