import { useMemo, useState } from 'react';
import { useStore } from '../store';
import { Heatmap } from '../components/Heatmap';
import { ColorLegend } from '../components/ColorLegend';
import { ExportButtons } from '../components/ExportButtons';
import { ResultStatus, useStaleParts } from '../components/ResultStatus';
import { runJob } from '../actions/job';
import { inOrder } from '../actions/worker';
import { download } from '../lib/export';
import { divergingScale, rangeNote, symmetricRange } from '../lib/color_scale';
import { visibleToken } from '../lib/format';
import { writeNpyArray } from '../../workers/engine/io/npy';

interface Captured {
  hook: string;
  /** [n_tokens, values per token] */
  shape: [number, number];
  data: Float32Array;
  tokens: string[];
  model: string;
}

/**
 * Any hook, inspectable: captures one hook (TransformerLens name) for the analysed prompt, with its
 * interventions, shows it as a token × dimension heatmap, and saves it as .npy ([n_tokens, width]
 * float32) — and the whole residual stream, blocks.{l}.hook_resid_post of every layer, as one
 * [n_layers, n_tokens, d_model] .npy.
 */
export function ActivationsView() {
  const r = useStore((s) => s.result);
  const info = useStore((s) => s.info);
  const busy = useStore((s) => s.job !== null);
  const stale = useStaleParts(r);
  const hooks = info?.hookNames ?? [];
  const [hook, setHook] = useState(() => `blocks.0.hook_resid_post`);
  const [cap, setCap] = useState<Captured | null>(null);
  const scale = useMemo(() => {
    const range = symmetricRange(cap?.data ?? [], 'robust');
    return { m: range.m, color: divergingScale(range.m), note: rangeNote(range, 'robust') };
  }, [cap]);
  if (!r || !info) return <p className="placeholder">Analyse a prompt, then capture any hook of the model for it here.</p>;
  const tokens = r.analysis.tokens;
  const capture = () => runJob('activations', `Capturing ${hook}`, `Could not capture ${hook}`, async () => {
    const [c] = await inOrder((w) => w.activations([hook]));
    setCap({ ...c, tokens, model: r.modelLabel });
  });
  const residStack = () => runJob('activations', 'Capturing the residual stream', 'Could not capture the residual stream', async () => {
    const names = Array.from({ length: info.nLayers }, (_, l) => `blocks.${l}.hook_resid_post`);
    const got = await inOrder((w) => w.activations(names));
    const [T, D] = got[0].shape;
    const stack = new Float32Array(info.nLayers * T * D);
    got.forEach((g, l) => stack.set(g.data, l * T * D));
    download(`resid_post-${r.modelLabel}.npy`, new Blob([writeNpyArray(stack, [info.nLayers, T, D]) as Uint8Array<ArrayBuffer>], { type: 'application/octet-stream' }));
  });
  const [T, W] = cap?.shape ?? [0, 0];
  const rows = () => Array.from({ length: T }, (_, t) => Array.from(cap!.data.subarray(t * W, (t + 1) * W)));
  const dimLabels = Array.from({ length: W }, (_, i) => String(i));
  const tokenLabels = (cap?.tokens ?? []).map((t, i) => `${i} ${visibleToken(t)}`);
  return (
    <section className="view" data-testid="activations-view">
      <header className="view-head">
        <h2>Activations</h2>
        <p className="muted">Any hook point of {r.modelLabel} for “{r.prompt}” (with the interventions of that analysis): rows are tokens, columns the hook's values.</p>
        <ResultStatus model={r.modelLabel} stale={stale} testId="activations-status" />
        <div className="row settings">
          <label>Hook
            <select data-testid="activations-hook" value={hook} onChange={(e) => setHook(e.target.value)}>
              {hooks.map((h) => <option key={h} value={h}>{h}</option>)}
            </select>
          </label>
          <button type="button" data-testid="activations-capture" disabled={busy} onClick={() => void capture()}>Capture</button>
          <button type="button" className="small" data-testid="activations-resid-npy" disabled={busy} title="blocks.{l}.hook_resid_post for every layer: float32 [n_layers, n_tokens, d_model]" onClick={() => void residStack()}>
            Residual stream, all layers (.npy)
          </button>
        </div>
      </header>
      {cap && (
        <div className="view-body">
          <div className="figure">
            <p className="muted" data-testid="activations-shape">{cap.hook}: [{T} tokens, {W} values] float32 · colour {scale.note}</p>
            <span className="export">
              <button type="button" className="small" data-testid="activations-npy" onClick={() => download(`${cap.hook}-${cap.model}.npy`, new Blob([writeNpyArray(cap.data, cap.shape) as Uint8Array<ArrayBuffer>], { type: 'application/octet-stream' }))}>.npy</button>
            </span>
            <ExportButtons
              name={`${cap.hook}-${cap.model}`}
              json={() => ({ model: cap.model, hook: cap.hook, tokens: cap.tokens, shape: cap.shape, values: rows() })}
              csv={() => [[`token \\ index — ${cap.hook} value`, ...dimLabels], ...rows().map((row, t) => [tokenLabels[t], ...row])]}
              figure={() => ({
                title: `${cap.hook} · ${cap.model}`,
                caption: [`rows: tokens of “${r.prompt}”; columns: the hook's ${W} values; colour ${scale.note}`],
                panels: [{ kind: 'heatmap', values: cap.data, nRows: T, nCols: W, rowLabels: tokenLabels, colLabels: dimLabels, rowTitle: 'token', colTitle: 'index', scale: { color: scale.color, domain: [-scale.m, scale.m], title: cap.hook } }],
              })}
            />
            <Heatmap
              values={cap.data} nRows={T} nCols={W} color={scale.color} rowLabels={tokenLabels} colLabels={dimLabels}
              rowTitle="token" colTitle="index" cellWidth={{ min: 3, max: 24 }} cellHeight={18}
              label={`${cap.hook}, token by index`} testId="activations-heatmap"
            />
            <ColorLegend color={scale.color} domain={[-scale.m, scale.m]} title={cap.hook} testId="activations-legend" />
          </div>
        </div>
      )}
    </section>
  );
}
