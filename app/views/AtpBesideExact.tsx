import { useMemo, useState } from 'react';
import { useStore } from '../store';
import { runStudy } from '../actions/study';
import { useStudy } from '../components/useStudy';
import { Heatmap, type Cell } from '../components/Heatmap';
import { ColorLegend } from '../components/ColorLegend';
import { ExportButtons } from '../components/ExportButtons';
import { useHeatmapColour } from '../components/ScaleControl';
import { fixed, visibleToken } from '../lib/format';
import { BLOCK_AXIS, hookShort, RESID_AXIS } from '../lib/layer_names';
import { waitingFor } from '../lib/job_rules';
import { atpAgreement, futureInput } from '../../workers/shared';
import type { PatchingDisplay } from '../store/patching';
import { chatTurnOf } from '../lib/experiment_request';
import type { StudyRequest } from '../../workers/protocol';
import { decisionPointText } from '../lib/decision_point_text';

/** The AtP request that matches the exact grid on display (its pair, chat turn, hook, direction and futures). */
function atpRequestFor(p: PatchingDisplay, correction: boolean): StudyRequest<'attributionPatching'> {
  const r = p.result;
  return {
    clean: p.clean, corrupt: p.corrupt, ...chatTurnOf(p), good: futureInput(p.good), bad: futureInput(p.bad),
    hook: r.hook, direction: r.direction, ...(correction && r.hook === 'resid_pre' ? { correction: 'qk' as const } : {}),
  };
}

/**
 * Attribution patching beside the exact grid on display (DESIGN.md §3 "Attribution"; studies/atp.ts):
 * AtP's linear estimate r̂ of every cell from two forwards and one backward, normalised like recovery,
 * drawn beside the exact r on one colour scale, with Spearman's ρ over the cells and the cells where
 * |r̂ − r| exceeds the threshold outlined on both grids (analysis/atp_agreement.ts). For resid_pre,
 * AtP*'s attention-saturation correction is an option (studies/atp_qk_fix.ts).
 */
export function AtpBesideExact({ p }: { p: PatchingDisplay }) {
  const job = useStore((s) => s.job);
  const [correction, setCorrection] = useState(false);
  const [threshold, setThreshold] = useState(0.1);
  const [hover, setHover] = useState<Cell | null>(null);
  const r = p.result;
  const req = atpRequestFor(p, correction);
  const atp = useStudy('attributionPatching', req);
  const a = atp.run && atp.stale === null ? atp.run.result : null;
  const canRun = r.metric === 'final';
  const thresholdOk = Number.isFinite(threshold) && threshold >= 0;
  const agreement = useMemo(() => (a && thresholdOk ? atpAgreement(a.atp, r.recovery, r.nCols, threshold) : null), [a, r, threshold, thresholdOk]);
  const marked = useMemo(() => agreement?.disagreements.map((d) => ({ row: d.layer, col: d.col })) ?? [], [agreement]);
  const both = useMemo(() => (a ? Float32Array.from([...r.recovery, ...a.atp]) : r.recovery), [a, r]);
  const scale = useHeatmapColour(both, 'r');
  const rowLabels = Array.from({ length: r.nLayers }, (_, l) => hookShort(r.hookTemplate.replace('{l}', String(l))));
  const colLabels = r.columns === 'head' ? Array.from({ length: r.nCols }, (_, h) => `H${h}`) : r.cleanTokens.map((t) => visibleToken(t));
  const rowTitle = r.hook === 'resid_pre' ? RESID_AXIS : BLOCK_AXIS;
  const run = () => void runStudy('attributionPatching', req, { label: correction ? 'AtP* (attention fix)' : 'Attribution patching', what: 'Could not compute attribution patching', total: 1 });
  const method = a?.correction === 'qk' ? 'AtP*' : 'AtP';
  const grid = (values: ArrayLike<number>, title: string, testId: string) => (
    <div className="figure">
      <h3>{title}</h3>
      <Heatmap
        values={values} nRows={r.nLayers} nCols={r.nCols} color={scale.color} rowLabels={rowLabels} colLabels={colLabels}
        colIndex={r.columns === 'head' ? null : undefined} rowTitle={rowTitle} colTitle={r.columns === 'head' ? 'head' : 'position · clean token'}
        rowsUpward cellWidth={{ min: 22, max: 22 }} cellHeight={22} markedCells={marked} active={hover} onHover={(c) => { if (c) setHover(c); }}
        label={`${title} per layer and ${r.columns}`} testId={testId}
      />
    </div>
  );
  const at = hover ? hover.row * r.nCols + hover.col : -1;
  return (
    <section className="atp-beside" data-testid="atp-panel">
      <h3>Attribution patching beside exact</h3>
      <p className="muted">
        AtP estimates every cell from two forwards and one backward: (h_source − h_run) · ∂Δ/∂h at the run, normalised like r (Nanda 2023; Kramár et al. 2024).
        The linear estimate fails where a patch moves the residual stream far or saturates a softmax: the outlined cells differ from the exact r by more than the threshold.
      </p>
      <div className="row settings">
        <label className="toggle" title={r.hook === 'resid_pre' ? 'Recompute block l’s attention for the patched query, key and value (AtP*, Kramár et al. 2024 §3.1.1)' : 'Only a resid_pre patch moves its own block’s queries and keys'}>
          <input type="checkbox" data-testid="atp-correction" checked={correction && r.hook === 'resid_pre'} disabled={r.hook !== 'resid_pre'} onChange={(e) => setCorrection(e.target.checked)} />
          AtP* attention-saturation fix{r.hook !== 'resid_pre' ? ' (resid_pre only)' : ''}
        </label>
        <label>flag |r̂ − r| &gt;
          <input type="number" step={0.05} min={0} value={threshold} data-testid="atp-threshold" style={{ width: 64 }} onChange={(e) => setThreshold(e.target.value === '' ? NaN : Number(e.target.value))} />
        </label>
        <button type="button" data-testid="run-atp" disabled={!!job || !canRun} title={canRun ? waitingFor(job) : 'AtP estimates the final-layer margin: run the exact grid with that metric'} onClick={run}>Run AtP beside it</button>
      </div>
      {!canRun && <p className="warn" data-testid="atp-metric-note">AtP estimates the final-layer margin at {decisionPointText(r.sharedPrefix)}; this grid measures the teacher-forced sequence margin. Run patching with the final-layer metric to compare.</p>}
      {!thresholdOk && <p className="warn" data-testid="atp-threshold-bad">The threshold must be a number ≥ 0 (in units of r); the cells are not flagged until it is.</p>}
      {atp.run && atp.stale !== null && <p className="muted" data-testid="atp-stale">The AtP grid on record was computed for another pair, chat turn, hook, direction or model: run AtP again to compare it with this grid.</p>}
      {a && agreement && (
        <>
          <p className="muted" data-testid="atp-caption" data-rho={agreement.rankCorrelation} data-flagged={agreement.disagreements.length}>
            {method} against exact over {r.nLayers * r.nCols} cells: Spearman ρ = <b className="mono" data-testid="atp-rho">{fixed(agreement.rankCorrelation, 3)}</b> ·{' '}
            <span data-testid="atp-flagged">{agreement.disagreements.length}</span> cells with |r̂ − r| &gt; {threshold} outlined · {a.forwards} forwards and {a.backwards} backward{a.correction === 'qk' ? `, then AtP*'s attention recomputed on the host for each of the ${r.nLayers * r.nCols} resid_pre cells (block l's pattern with q_t, k_t, v_t patched: O(H·T²·d_head) per block, no further forward)` : ''}
          </p>
          <p className="mono" data-testid="atp-readout">
            {at >= 0
              ? `${rowLabels[hover!.row]} · ${r.columns} ${hover!.col}: exact r ${fixed(r.recovery[at], 3)} · ${method} r̂ ${fixed(a.atp[at], 3)} · r̂ − r ${fixed(a.atp[at] - r.recovery[at], 3)}`
              : 'Point at a cell of either grid to read both numbers.'}
          </p>
          {grid(r.recovery, 'exact r (patched runs)', 'atp-exact-heatmap')}
          {grid(a.atp, `${method} r̂ (linear estimate)`, 'atp-heatmap')}
          <ColorLegend color={scale.color} domain={scale.domain} title="recovery r and its estimate r̂ (one scale)" lowNote="← moves away from clean" highNote="restores clean →" testId="atp-legend" />
          <ExportButtons
            name={`atp-${r.hook}-${r.direction}-${p.modelLabel}`}
            json={() => ({ model: p.modelLabel, clean: p.clean, corrupt: p.corrupt, hook: r.hookTemplate, direction: r.direction, method, threshold, rankCorrelation: agreement.rankCorrelation, disagreements: agreement.disagreements, atp: Array.from(a.atp), atpNats: Array.from(a.atpNats), recovery: Array.from(r.recovery), nCols: r.nCols })}
            csv={() => [['layer', r.columns, 'label', 'exact r', `${method} r̂`, `${method} (nats)`, 'flagged'], ...Array.from({ length: r.nLayers * r.nCols }, (_, i) => {
              const l = Math.floor(i / r.nCols), c = i % r.nCols;
              return [rowLabels[l], c, colLabels[c], r.recovery[i], a.atp[i], a.atpNats[i], Math.abs(a.atp[i] - r.recovery[i]) > threshold ? 'yes' : ''];
            })]}
            figure={() => ({
              title: `${method} beside exact patching · ${p.modelLabel} · ${r.hookTemplate} · ${r.direction}`,
              caption: [`Spearman ρ = ${fixed(agreement.rankCorrelation, 3)}; ${agreement.disagreements.length} cells with |r̂ − r| > ${threshold}`, `clean: “${p.clean}”`, `corrupted: “${p.corrupt}”`],
              panels: [['exact r', r.recovery], [`${method} r̂`, a.atp]].map(([title, values]) => ({
                kind: 'heatmap' as const, title: title as string, values: values as Float32Array, nRows: r.nLayers, nCols: r.nCols, rowLabels, colLabels, rowTitle, colTitle: r.columns, rowsUpward: true,
                scale: { color: scale.color, domain: scale.domain, title: 'recovery r' },
              })),
            })}
          />
        </>
      )}
    </section>
  );
}
