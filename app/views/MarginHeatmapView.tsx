import { SharedPrefixNote } from '../components/SharedPrefixNote';
import { useMemo, useState } from 'react';
import { useStore } from '../store';
import { Heatmap, type Cell } from '../components/Heatmap';
import { useTokenCellHover } from '../components/useTokenCellHover';
import { useLensTop } from '../components/useLensTop';
import { ColorLegend } from '../components/ColorLegend';
import { DataTable } from '../components/DataTable';
import { ExportButtons } from '../components/ExportButtons';
import type { AnalysisResult } from '../store/results';
import { fixed, signed, visibleToken } from '../lib/format';
import { residName, residShort, RESID_AXIS } from '../lib/layer_names';
import { lensRowOf } from '../lib/hooks';
import { doseText, steeredPromptPositions } from '../lib/steered';
import { placeAtLensCell, type LensCellPlacement } from '../actions/steering';
import { VectorNeededNote } from '../components/VectorNeededNote';
import { SteeredTag } from '../components/SteeredTag';
import { ResultStatus, StaleOverlay, useStaleParts } from '../components/ResultStatus';
import { InputWarnings } from '../components/InputWarnings';
import type { InterventionDraft } from '../store/steering';
import { steeringName, steeringNow } from '../lib/stale';
import { ScaleControl, useHeatmapColour } from '../components/ScaleControl';
import { decisionPointText } from '../lib/decision_point_text';
import { inPrefix, PREFIX_TITLE } from '../lib/decision_point_tokens';

/** Steered − unsteered, cell by cell (for display; both grids come from the engine). */
function difference(steered: Float32Array, unsteered: Float32Array): Float32Array {
  return steered.map((v, i) => v - unsteered[i]);
}

/** Row markers and steered cells of the interventions an analysis was computed under, named by their places in the list now. */
function steeringMarks(r: AnalysisResult, list: readonly InterventionDraft[]): { rows: Map<number, string>; cells: Cell[] } {
  const a = r.analysis, T = a.ids.length;
  const rows = new Map<number, string>(), cells: Cell[] = [];
  const now = steeringNow(r.steering, list);
  for (const [i, { draft }] of r.steering.entries()) {
    const row = lensRowOf(draft.hook, a.nLayers);
    const text = `${steeringName(now[i], true)}: ${draft.type} ${doseText(draft)}`;
    rows.set(row, rows.has(row) ? `${rows.get(row)}, ${text}` : text);
    for (const col of steeredPromptPositions(draft, T)) cells.push({ row, col });
  }
  return { rows, cells };
}

/** What the pointer is on: layer, position, token, Δ, and the lens's top tokens there (fetched on demand). */
function Readout({ r, cell }: { r: AnalysisResult; cell: Cell | null }) {
  const b = r.baseline;
  const a = r.analysis;
  const T = a.ids.length;
  const lens = useLensTop(a.lensHandle, cell);
  if (!cell) return <aside className="readout" data-testid="margin-readout"><p className="muted">Point at a cell (or focus the map and use the arrow keys) to read it.</p></aside>;
  const { row, col } = cell;
  const pre = inPrefix(col, T, a.sharedPrefix?.ids.length ?? 0);
  return (
    <aside className="readout" data-testid="margin-readout" data-layer={row} data-position={col}>
      <dl>
        <dt>Layer</dt><dd data-testid="readout-layer">{residName(row, a.nLayers)}</dd>
        <dt>Position</dt><dd data-testid="readout-position">{col}</dd>
        <dt>Token</dt>
        <dd data-testid="readout-token" className={pre ? 'mono prefix' : 'mono'} data-prefix={pre ? 'true' : undefined} title={pre ? PREFIX_TITLE : undefined}>
          {visibleToken(a.tokens[col])}{pre && <span className="muted"> ({PREFIX_TITLE})</span>}
        </dd>
        <dt>Margin Δ{b ? ' steered' : ''}</dt><dd data-testid="readout-margin" className="mono big">{fixed(a.lensMargin[row * T + col], 4)}</dd>
        {b && (
          <>
            <dt>Δ unsteered</dt><dd data-testid="readout-margin-unsteered" className="mono">{fixed(b.lensMargin[row * T + col], 4)}</dd>
            <dt>difference</dt><dd data-testid="readout-margin-difference" className="mono">{signed(a.lensMargin[row * T + col] - b.lensMargin[row * T + col], 4)}</dd>
          </>
        )}
      </dl>
      {lens && 'error' in lens
        ? <p className="muted" data-testid="readout-topk-error">Lens top tokens unavailable: {lens.error}</p>
        : (
          <table className="topk" data-testid="readout-topk" aria-busy={!lens}>
            <caption>Lens top {lens ? lens.top.ids.length : ''} next tokens (log p){lens ? '' : ' …'}</caption>
            <tbody>
              {lens?.top.ids.map((id, i) => (
                <tr key={i} data-testid={`readout-top-${i}`} data-id={id}>
                  <td className="mono">{visibleToken(lens.top.tokens[i])}</td>
                  <td className="mono num">{fixed(lens.top.logProbs[i], 4)}</td>
                </tr>
              ))}
            </tbody>
          </table>
        )}
    </aside>
  );
}

/** The logit-lens margin grid Δ^l_t (DESIGN.md §3): layer × token heatmap, legend, readout, table and exports. */
export function MarginHeatmapView() {
  const r = useStore((s) => s.result);
  const showTables = useStore((s) => s.showTables);
  const showDifference = useStore((s) => s.showDifference);
  const setShowDifference = useStore((s) => s.setShowDifference);
  const busy = useStore((s) => s.job !== null);
  const list = useStore((s) => s.interventions);
  const stale = useStaleParts(r);
  const [hover, point] = useTokenCellHover();
  /** A cell clicked with an empty vector library: nothing was placed, the note offers a vector. */
  const [needsVector, setNeedsVector] = useState<Extract<LensCellPlacement, { placed: false }> | null>(null);
  const diff = showDifference && r?.baseline ? r.baseline : null;
  const values = useMemo(() => (r && diff ? difference(r.analysis.lensMargin, diff.lensMargin) : r?.analysis.lensMargin ?? new Float32Array()), [r, diff]);
  const scale = useHeatmapColour(values, 'Δ');
  const marks = useMemo(() => (r ? steeringMarks(r, list) : { rows: new Map<number, string>(), cells: [] }), [r, list]);
  if (!r) return <p className="placeholder">Analyse a prompt to see, layer by layer, where the model starts to prefer one future over the other.</p>;
  const a = r.analysis;
  const L1 = a.nLayers + 1, T = a.ids.length;
  const k = a.sharedPrefix?.ids.length ?? 0;
  const rowLabels = Array.from({ length: L1 }, (_, l) => residShort(l));
  const colLabels = a.tokens.map(visibleToken);
  const good = a.good.tokens.map((t) => t.join('')).join(' | ');
  const bad = a.bad.tokens.map((t) => t.join('')).join(' | ');
  const rows = () => Array.from({ length: L1 }, (_, l) => Array.from(values.subarray(l * T, (l + 1) * T)));
  const steered = r.steering.length > 0;
  const what = diff ? 'steered − unsteered Δ' : steered ? 'Δ under the interventions' : 'Δ';
  const unsteered = r.baseline;
  const outdated = stale.some((p) => p !== 'model');
  // Its columns are the old prompt's tokens (or its rows another model's layers): a click would steer a position that may not exist.
  const locked = stale.includes('prompt') || stale.includes('model');
  return (
    <section className="view" data-testid="margin-view">
      <header className="view-head">
        <h2>Logit-lens margin<SteeredTag steering={r.steering} testId="margin-steered-tag" /></h2>
        <p className="muted">
          Δ = log p(<b className="good">{visibleToken(good)}</b>) − log p(<b className="bad">{visibleToken(bad)}</b>) from log_softmax(W_U · LN_f(h)) at every layer and position
          (first tokens). {r.modelLabel} · “{r.prompt}”.
          {steered
            ? ' Orange bars mark the steered layers, dashed outlines the steered cells.'
            : locked ? '' : <span className="click-hint"> Click a cell to steer that layer at that token.</span>}
        </p>
        <ResultStatus model={r.modelLabel} computedWith={r.computedWith} stale={stale} computedFor={r.prompt} testId="margin-status" />
        <InputWarnings warnings={r.analysis.warnings} testId="margin-warnings" />
        <SharedPrefixNote shared={a.sharedPrefix} testId="margin-shared-prefix" />
        {unsteered && (
          <label className="toggle">
            <input type="checkbox" data-testid="show-difference" checked={showDifference} onChange={(e) => setShowDifference(e.target.checked)} />
            Show steered − unsteered
          </label>
        )}
        <ScaleControl what="Δ" />
        <ExportButtons
          name={`margins-${r.modelLabel}`}
          json={() => ({ model: r.modelLabel, prompt: r.prompt, tokens: a.tokens, ids: a.ids, good: a.good, bad: a.bad, layers: rowLabels, shown: what, lensMargin: rows(), finalMargin: Array.from(a.finalMargin), sequenceMargin: a.sequenceMargin, interventions: r.steering, unsteeredFinalMargin: unsteered ? Array.from(unsteered.finalMargin) : null })}
          csv={() => [[`layer \\ position:token — ${what} (nats)`, ...a.tokens.map((t, i) => `${i}:${t}`)], ...rows().map((row, l) => [rowLabels[l], ...row])]}
          figure={() => ({
            title: `Logit-lens margin · ${r.modelLabel}${steered ? ` · ${what}` : ''}`,
            caption: [`${what === 'Δ' ? '' : `${what}, with `}Δ = log p(${visibleToken(good)}) − log p(${visibleToken(bad)}) at each layer (rows: embed, then after block L0, L1, …) and prompt token (columns)`, `prompt: “${r.prompt}” · colour ${scale.note}`, ...r.steering.map(({ n, draft }) => `#${n}: ${draft.type} ${doseText(draft)} at ${draft.hook}`)],
            panels: [{
              kind: 'heatmap', values, nRows: L1, nCols: T, rowLabels, colLabels, rowTitle: RESID_AXIS, colTitle: 'position · token', rowsUpward: true,
              scale: { color: scale.color, domain: scale.domain, title: `${what} (nats)`, lowNote: `← favours ${visibleToken(bad)}`, highNote: `favours ${visibleToken(good)} →` },
            }],
          })}
        />
      </header>
      <div className="view-body">
        <div className={`figure${outdated ? ' stale' : ''}`}>
          {outdated && <StaleOverlay testId="margin-stale" />}
          <Heatmap
            values={values} nRows={L1} nCols={T} color={scale.color}
            rowLabels={rowLabels} colLabels={colLabels} rowTitle={RESID_AXIS} colTitle="position · token"
            rowsUpward cellWidth={{ min: 12, max: 96 }} cellHeight={34}
            active={hover} onHover={point} onSelect={busy || locked ? undefined : (c) => { const p = placeAtLensCell(c.row, c.col); setNeedsVector(p.placed ? null : p); }}
            rowMarks={marks.rows} markedCells={marks.cells} prefixCols={k}
            label={`Logit-lens margin, layer by token${steered ? ` (${what})` : ''}`} testId="margin-heatmap"
          />
          {needsVector && <VectorNeededNote placement={needsVector} token={visibleToken(a.tokens[needsVector.col] ?? '')} onDone={() => setNeedsVector(null)} />}
          <ColorLegend color={scale.color} domain={scale.domain} title={`${what} (nats)`} lowNote={`← ${diff ? 'steering moves toward' : 'favours'} ${visibleToken(bad)}`} highNote={`${diff ? 'steering moves toward' : 'favours'} ${visibleToken(good)} →`} testId="margin-legend" />
          <p className="muted scale-note" data-testid="margin-scale-note">Colour {scale.note}.</p>
          {k > 0 && <p className="muted" data-testid="margin-prefix-cols">{k === 1 ? `Position ${T - 1} (its label in grey italics) is` : `Positions ${T - k}–${T - 1} (labels in grey italics) are`} the {PREFIX_TITLE}, not prompt text; the margin is read at {decisionPointText(a.sharedPrefix)}, position {T - 1}.</p>}
          {locked
            ? <p className="hint" data-testid="margin-locked">This heatmap is of {stale.includes('prompt') ? 'an earlier prompt' : 'the previous model'}: press Analyse before placing interventions from it.</p>
            : <p className="hint">Click a cell to add an intervention there: the residual stream of that row (embed: blocks.0.hook_resid_pre; L<i>l</i>: blocks.<i>l</i>.hook_resid_post) at that token.</p>}
        </div>
        <Readout r={r} cell={hover} />
      </div>
      <dl className="summary">
        <dt data-testid="final-margin-last-label">Final-layer margin at {decisionPointText(a.sharedPrefix)}{steered ? ', steered' : ''}</dt>
        <dd className="mono" data-testid="final-margin-last">{signed(a.finalMargin[T - 1], 4)}</dd>
        {unsteered && (
          <>
            <dt>… unsteered</dt>
            <dd className="mono" data-testid="final-margin-last-unsteered">{signed(unsteered.finalMargin[T - 1], 4)}</dd>
          </>
        )}
        <dt>Sequence margin (teacher-forced, whole futures){steered ? ', steered' : ''}</dt>
        <dd className="mono" data-testid="sequence-margin">{signed(a.sequenceMargin, 4)}</dd>
        {unsteered && (
          <>
            <dt>… unsteered</dt>
            <dd className="mono" data-testid="sequence-margin-unsteered">{signed(unsteered.sequenceMargin, 4)}</dd>
          </>
        )}
      </dl>
      {showTables && (
        <>
          <DataTable
            caption={`Lens margin ${what} by layer (rows: embed, then after block L0, L1, …) and position (columns)`}
            rowHeader="layer" rowLabels={rowLabels} colLabels={a.tokens.map((t, i) => `${i} ${visibleToken(t)}`)}
            cell={(l, t) => fixed(values[l * T + t], 4)} cellTestId={(l, t) => `margin-cell-${l}-${t}`} testId="margin-table"
          />
          <DataTable
            caption="Final-layer margin Δ_t by position"
            rowHeader="" rowLabels={['final']} colLabels={a.tokens.map((t, i) => `${i} ${visibleToken(t)}`)}
            cell={(_, t) => fixed(a.finalMargin[t], 4)} cellTestId={(_, t) => `final-margin-${t}`} testId="final-margin-table"
          />
        </>
      )}
    </section>
  );
}
