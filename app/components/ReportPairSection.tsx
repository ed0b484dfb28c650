import { useRef } from 'react';
import { useStore } from '../store';
import { useStudy } from './useStudy';
import { ReportFigure } from './ReportFigure';
import { reportPanels } from '../lib/report_panels';
import { ExportButtons } from './ExportButtons';
import { ResultStatus } from './ResultStatus';
import { reportPairRequest, runReportPair } from '../actions/report';
import { hookName, residInterval, residShort } from '../lib/layer_names';
import { fixed, visibleToken } from '../lib/format';
import { waitingFor } from '../lib/job_rules';
import { reportPairJson } from '../../workers/shared';
import type { ReportDifference, ReportPairResult, ReportResult, StudyRequest } from '../../workers/protocol';

type Answer = 'visible' | 'causal' | 'ponr';

/** Minus sign for negatives, plus for positives: "−5", "+2", "0". */
const signedInt = (v: number) => (v > 0 ? `+${fixed(v, 0)}` : v < 0 ? `−${fixed(-v, 0)}` : '0');

/** One model's answer in the layer naming (visible: residual row; causal: the block whose hook_resid_pre is patched; steps as numbers), with its interval. */
function answerText(r: ReportResult, what: Answer): string {
  if (what === 'visible') return r.visible.layer === null ? 'never' : `${residShort(r.visible.layer)}${r.visible.interval ? ` ${residInterval(r.visible.interval)}` : ''}`;
  if (what === 'causal') return r.causal.layer === null ? 'never' : `${hookName(`blocks.${r.causal.layer}.hook_resid_pre`)}${r.causal.interval ? ` ${residInterval(r.causal.interval)}` : ''}`;
  const w = r.changeable;
  if (!w) return 'not computed';
  return w.pointOfNoReturn === null ? 'no step flips it' : `step ${w.pointOfNoReturn}${w.interval ? ` [${fixed(w.interval[0], 1)}, ${fixed(w.interval[1], 1)}]` : ''}`;
}

/** B − A of one answer: "−5 layers [−5, −2]" (the interval paired over prompts), or why there is none. */
function differenceText(d: ReportDifference | null, unit: 'layer' | 'step'): string {
  if (!d) return 'not computed';
  if (d.value === null) return d.a === null && d.b === null ? 'neither model reaches it' : `only ${d.a === null ? 'B' : 'A'} reaches it`;
  const units = `${unit}${Math.abs(d.value) === 1 ? '' : 's'}`;
  return `${signedInt(d.value)} ${units}${d.interval ? ` [${signedInt(d.interval[0])}, ${signedInt(d.interval[1])}]` : ''}`;
}

const ROWS: { what: Answer; name: string; unit: 'layer' | 'step'; diff: (r: ReportPairResult) => ReportDifference | null }[] = [
  { what: 'visible', name: 'Visible (logit lens)', unit: 'layer', diff: (r) => r.difference.visibleLayer },
  { what: 'causal', name: 'Causal (patching hook_resid_pre)', unit: 'layer', diff: (r) => r.difference.causalLayer },
  { what: 'ponr', name: 'Changeable (point of no return)', unit: 'step', diff: (r) => r.difference.pointOfNoReturn },
];

/**
 * The decision-point report on model A and model B side by side (the `reportPair` study, DESIGN.md
 * §3 "Model comparison"): the Report view's setup built on both, each model's three answers with
 * their intervals and B − A with a paired bootstrap interval over the prompt set, then both figures.
 * Shown in the Report view once model B is loaded (the Compare view's picker), or while its result is on display.
 */
export function ReportPairSection({ missing }: { missing: string }) {
  const modelB = useStore((s) => s.modelB);
  const info = useStore((s) => s.info);
  const job = useStore((s) => s.job);
  // the request reads these from the store: subscribe so staleness follows them
  useStore((s) => s.patchingSettings); useStore((s) => s.reportSettings); useStore((s) => s.probeSettings);
  useStore((s) => s.good); useStore((s) => s.bad); useStore((s) => s.chatTemplate); useStore((s) => s.interventions);
  const req = reportPairRequest();
  const { run, stale, running } = useStudy('reportPair', (req ?? undefined) as StudyRequest<'reportPair'> | undefined);
  const svgA = useRef<SVGSVGElement | null>(null), svgB = useRef<SVGSVGElement | null>(null);
  const r = run?.result ?? null;
  const ready = !!info && modelB?.status === 'ready' && !!req;
  if (!modelB && !r) return null; // shown once a model B is loaded (the Compare view's picker)
  const bStale = r && modelB?.info && r.labelB !== modelB.info.label ? modelB.info.label : null;
  const table = (p: ReportPairResult) => ROWS.map((row) => [row.name, answerText(p.a, row.what), answerText(p.b, row.what), differenceText(row.diff(p), row.unit)]);
  return (
    <section className="report-pair" aria-label="report on A and B" data-testid="report-pair">
      <header className="view-head">
        <h3>Model A and model B side by side</h3>
        <p className="muted">
          The same report on the Compare view’s model B: each model’s answers with their intervals, and B − A (in layers or steps). With a prompt set
          the interval of B − A is a paired bootstrap: every resample draws the same prompts for both models.
        </p>
        <div className="row">
          <button type="button" data-testid="run-report-pair" disabled={!!job || !ready} onClick={() => void runReportPair()}
            title={waitingFor(job) ?? (!modelB ? 'Load model B in the Compare view first' : !req ? 'Fix the futures first' : undefined)}>Build for A and B</button>
        </div>
      </header>
      {running && <p className="muted">Building the report on A, then on B…</p>}
      {r && (
        <>
          <div className="view-head">
            <p className="muted" data-testid="report-pair-caption" data-prompts={r.a.nPrompts}>
              A <b>{r.labelA}</b> vs B <b>{r.labelB}</b> · Δ = log p(<b className="good">{visibleToken(run!.request.good.text ?? '')}</b>) − log p(<b className="bad">{visibleToken(run!.request.bad.text ?? '')}</b>) · {r.a.label}
            </p>
            <ExportButtons
              name={`report-${r.labelA}-${r.labelB}`}
              json={() => reportPairJson(r)}
              csv={() => [['answer', `A (${r.labelA})`, `B (${r.labelB})`, 'B − A (paired interval over prompts)'], ...table(r)]}
              figure={() => (svgA.current && svgB.current ? {
                title: `Decision-point report · A ${r.labelA} vs B ${r.labelB}`,
                caption: [r.a.label, ...table(r).map(([name, a, b, d]) => `${name}: A ${a}; B ${b}; B − A ${d}`)],
                panels: [{ kind: 'svg', title: `A · ${r.labelA}`, element: svgA.current }, { kind: 'svg', title: `B · ${r.labelB}`, element: svgB.current }],
              } : null)}
            />
          </div>
          <ResultStatus model={run!.modelLabel} computedWith={run!.computedWith} stale={stale === 'request' ? ['prompt'] : []} noun="report" names={{ prompt: 'the report’s setup' }} rerun={{ label: 'Build for A and B', run: () => void runReportPair() }} testId="report-pair-status" />
          {bStale && <p className="stale-note" role="status" data-testid="report-pair-b-stale">Computed with model B {r.labelB}; {bStale} is model B now: build it again.</p>}
          <table className="data report-pair-table" data-testid="report-pair-table">
            <thead><tr><th>answer</th><th>A · {r.labelA}</th><th>B · {r.labelB}</th><th>B − A</th></tr></thead>
            <tbody>
              {table(r).map(([name, a, b, d], i) => (
                <tr key={name}>
                  <th scope="row">{name}</th>
                  <td className="mono" data-testid={`report-pair-${ROWS[i].what}-a`}>{a}</td>
                  <td className="mono" data-testid={`report-pair-${ROWS[i].what}-b`}>{b}</td>
                  <td className="mono" data-testid={`report-pair-${ROWS[i].what}-diff`} data-value={ROWS[i].diff(r)?.value ?? 'none'}>{d}</td>
                </tr>
              ))}
            </tbody>
          </table>
          <div className="report-pair-figures">
            {([['A', r.labelA, r.a, svgA], ['B', r.labelB, r.b, svgB]] as const).map(([who, label, one, ref]) => {
              const { layers, step } = reportPanels(one, missing, `report-pair-${who.toLowerCase()}`);
              return (
                <figure key={who}>
                  <figcaption><b>{who}</b> · {label}</figcaption>
                  <ReportFigure layerPanels={layers} stepPanel={step} nLayers={one.nLayers} svgRef={ref} testId={`report-pair-figure-${who.toLowerCase()}`} />
                </figure>
              );
            })}
          </div>
        </>
      )}
    </section>
  );
}
