import { useMemo } from 'react';
import { useStore } from '../store';
import { Heatmap } from '../components/Heatmap';
import { ColorLegend } from '../components/ColorLegend';
import { ExportButtons } from '../components/ExportButtons';
import { ResultStatus, useStaleParts } from '../components/ResultStatus';
import { ScaleControl, useHeatmapColour } from '../components/ScaleControl';
import { captureActivations, saveResidualStream } from '../actions/activations';
import { download } from '../lib/export';
import { visibleToken } from '../lib/format';
import { writeNpyArray } from '../../workers/shared';
import { useWaitingFor } from '../components/useWaitingFor';
import { GenerationCapturePanel } from './GenerationCapturePanel';

/**
 * Any hook, inspectable: captures one hook (TransformerLens name) for the analysed prompt, with its
 * interventions, shows it as a token × dimension heatmap, and saves it as .npy ([n_tokens, width]
 * float32) — only the tokens selected on the token strip when there is a selection — and the whole
 * residual stream, blocks.{l}.hook_resid_post of every layer, as one [n_layers, n_tokens, d_model]
 * .npy; and (GenerationCapturePanel) the hook at every generation step. The hook and the selection are saved with the experiment (`view.hook`, `view.selection`).
 */
export function ActivationsView() {
  const r = useStore((s) => s.result);
  const info = useStore((s) => s.info);
  const busy = useStore((s) => s.job !== null);
  const waiting = useWaitingFor();
  const hook = useStore((s) => s.activationsHook);
  const setHook = useStore((s) => s.setActivationsHook);
  const cap = useStore((s) => s.captured);
  const selection = useStore((s) => s.tokenSelection);
  const stale = useStaleParts(r);
  // The rows shown and saved: the selected tokens when the selection lies inside the capture, else all.
  const rows = useMemo(() => {
    const T = cap?.shape[0] ?? 0;
    const sel = selection && selection.end <= T && selection.start < selection.end ? selection : null;
    return { start: sel?.start ?? 0, end: sel?.end ?? T, selected: !!sel };
  }, [cap, selection]);
  const W = cap?.shape[1] ?? 0;
  const data = useMemo(() => cap?.data.subarray(rows.start * W, rows.end * W) ?? new Float32Array(), [cap, rows, W]);
  const scale = useHeatmapColour(data, 'value');
  if (!r || !info) return <p className="placeholder">Analyse a prompt, then capture any hook of the model for it here.</p>;
  const hooks = info.hookNames;
  const T = rows.end - rows.start;
  const values = () => Array.from({ length: T }, (_, t) => Array.from(data.subarray(t * W, (t + 1) * W)));
  const dimLabels = Array.from({ length: W }, (_, i) => String(i));
  const tokenLabels = (cap?.tokens ?? []).slice(rows.start, rows.end).map((t, i) => `${rows.start + i} ${visibleToken(t)}`);
  const which = rows.selected ? `tokens ${rows.start}–${rows.end - 1} (the selection on the token strip)` : 'every token';
  return (
    <section className="view" data-testid="activations-view">
      <header className="view-head">
        <h2>Activations</h2>
        <p className="muted">Any hook point of {r.modelLabel} for “{r.prompt}” (with the interventions of that analysis): rows are tokens, columns the hook's values. Select tokens on the token strip to show and save only those.</p>
        <ResultStatus model={r.modelLabel} computedWith={r.computedWith} stale={stale} testId="activations-status" />
        <div className="row settings">
          <label>Hook
            <select data-testid="activations-hook" value={hook} onChange={(e) => setHook(e.target.value)}>
              {hooks.map((h) => <option key={h} value={h}>{h}</option>)}
            </select>
          </label>
          <button type="button" data-testid="activations-capture" title={waiting} disabled={busy} onClick={() => void captureActivations()}>Capture</button>
          <button type="button" className="small" data-testid="activations-resid-npy" disabled={busy} title={waiting ?? 'blocks.{l}.hook_resid_post for every layer: float32 [n_layers, n_tokens, d_model]'} onClick={() => void saveResidualStream()}>
            Residual stream, all layers (.npy)
          </button>
          <ScaleControl what="value" testId="activations-scale" />
        </div>
      </header>
      {cap && (
        <div className="view-body">
          <div className="figure">
            <p className="muted" data-testid="activations-shape" data-start={rows.start} data-end={rows.end}>{cap.hook}: [{T} tokens, {W} values] float32 · {which} · colour {scale.note}</p>
            <span className="export">
              <button type="button" className="small" data-testid="activations-npy" onClick={() => download(`${cap.hook}-${cap.model}.npy`, new Blob([writeNpyArray(data, [T, W]) as Uint8Array<ArrayBuffer>], { type: 'application/octet-stream' }))}>.npy</button>
            </span>
            <ExportButtons
              name={`${cap.hook}-${cap.model}`}
              json={() => ({ model: cap.model, hook: cap.hook, prompt: cap.prompt, positions: [rows.start, rows.end], tokens: cap.tokens.slice(rows.start, rows.end), shape: [T, W], values: values() })}
              csv={() => [[`token \\ index — ${cap.hook} value`, ...dimLabels], ...values().map((row, t) => [tokenLabels[t], ...row])]}
              figure={() => ({
                title: `${cap.hook} · ${cap.model}`,
                caption: [`rows: ${which} of “${cap.prompt}”; columns: the hook's ${W} values; colour ${scale.note}`],
                panels: [{ kind: 'heatmap', values: data, nRows: T, nCols: W, rowLabels: tokenLabels, colLabels: dimLabels, rowTitle: 'token', colTitle: 'index', scale: { color: scale.color, domain: scale.domain, title: cap.hook } }],
              })}
            />
            <Heatmap
              values={data} nRows={T} nCols={W} color={scale.color} rowLabels={tokenLabels} colLabels={dimLabels}
              rowTitle="token" colTitle="index" cellWidth={{ min: 3, max: 24 }} cellHeight={18}
              label={`${cap.hook}, token by index`} testId="activations-heatmap"
            />
            <ColorLegend color={scale.color} domain={scale.domain} title={cap.hook} testId="activations-legend" />
          </div>
        </div>
      )}
      <GenerationCapturePanel hook={hook} />
    </section>
  );
}
