import { useEffect, useRef, useState } from 'react';
import { useStore } from '../store';
import { loadSae, openFeature, placeFeature, readFeatures, saeSourceFromFiles, togglePin } from '../actions/sae';
import { Heatmap, type Cell } from '../components/Heatmap';
import { ColorLegend } from '../components/ColorLegend';
import { SharedPrefixNote } from '../components/SharedPrefixNote';
import { decisionPointText } from '../lib/decision_point_text';
import { ExportButtons } from '../components/ExportButtons';
import { ScaleControl, useHeatmapColour } from '../components/ScaleControl';
import { fixed, signed, quotedToken, visibleToken } from '../lib/format';
import type { SaeResult } from '../store/sae';
import { useWaitingFor } from '../components/useWaitingFor';

/** Loading controls: a SAELens folder, a Gemma Scope .npz, or a Hub path; and the SAE in use. */
function SaeLoader() {
  const saes = useStore((s) => s.saes);
  const active = useStore((s) => s.activeSae);
  const setActive = useStore((s) => s.setActiveSae);
  const busy = useStore((s) => !!s.job);
  const waiting = useWaitingFor();
  const ready = useStore((s) => s.modelStatus === 'ready');
  const folder = useRef<HTMLInputElement>(null);
  const file = useRef<HTMLInputElement>(null);
  const [hook, setHook] = useState('');
  const [repo, setRepo] = useState('');
  const [path, setPath] = useState('');
  useEffect(() => { folder.current?.setAttribute('webkitdirectory', ''); }, []);
  const sae = saes.find((x) => x.id === active);
  return (
    <div className="sae-loader">
      <div className="row">
        <button type="button" data-testid="sae-open-folder" disabled={busy || !ready} onClick={() => folder.current?.click()} title={waiting ?? 'A SAELens folder: cfg.json + sae_weights.safetensors'}>Open SAE folder…</button>
        <input ref={folder} className="visually-hidden" type="file" multiple data-testid="sae-folder-input" aria-label="SAE folder"
          onChange={(e) => { const l = e.currentTarget.files; if (l?.length) void loadSae(saeSourceFromFiles(l)); e.currentTarget.value = ''; }} />
        <button type="button" data-testid="sae-open-npz" disabled={busy || !ready} onClick={() => file.current?.click()} title={waiting ?? 'A Gemma Scope params.npz'}>Open params.npz…</button>
        <input ref={file} className="visually-hidden" type="file" accept=".npz" data-testid="sae-npz-input" aria-label="SAE params.npz"
          onChange={(e) => { const l = e.currentTarget.files; if (l?.length) void loadSae(saeSourceFromFiles(l), hook.trim()); e.currentTarget.value = ''; }} />
        <label>hook for a bare .npz <input className="repo-id" value={hook} onChange={(e) => setHook(e.target.value)} placeholder="blocks.12.hook_resid_post" spellCheck={false} /></label>
      </div>
      <div className="row">
        <label>Hub repo <input className="repo-id" data-testid="sae-hub-repo" value={repo} onChange={(e) => setRepo(e.target.value)} placeholder="google/gemma-scope-2b-pt-res" spellCheck={false} /></label>
        <label>folder <input className="repo-id" data-testid="sae-hub-path" value={path} onChange={(e) => setPath(e.target.value)} placeholder="layer_12/width_16k/average_l0_82" spellCheck={false} /></label>
        <button type="button" title={waiting} disabled={busy || !ready || !repo.trim()} onClick={() => void loadSae({ kind: 'hub', repo: repo.trim(), path: path.trim().replace(/^\/|\/$/g, '') }, hook.trim())}>Load from Hub</button>
      </div>
      {saes.length > 0 && (
        <div className="row">
          <label>SAE
            <select data-testid="sae-select" value={active ?? ''} onChange={(e) => setActive(e.target.value || null)}>
              {saes.map((x) => <option key={x.id} value={x.id}>{x.label}</option>)}
            </select>
          </label>
          {sae && (
            <span className="muted" data-testid="sae-info">
              {sae.cfg.architecture}{sae.cfg.k ? ` (k = ${sae.cfg.k})` : ''} at {sae.cfg.hookName} · d_in {sae.cfg.dIn} · d_sae {sae.cfg.dSae} · {sae.cfg.applyBDecToInput ? 'b_dec subtracted from the input' : 'no b_dec subtraction'} · {sae.cfg.layout.replace('_', ' ')} layout
            </span>
          )}
        </div>
      )}
    </div>
  );
}

/** The feature open in the panel: its decoder direction and buttons that place interventions. */
function FeaturePanel({ r }: { r: SaeResult }) {
  const open = useStore((s) => s.openFeature);
  const pinned = useStore((s) => s.pinnedFeatures);
  const [alpha, setAlpha] = useState(4);
  const [value, setValue] = useState(0);
  const [where, setWhere] = useState<'token' | 'all'>('token');
  const [placed, setPlaced] = useState<string | null>(null);
  if (!open) return <p className="muted">Click a feature (a chip or a heatmap cell) to see what its decoder direction promotes and to steer or clamp it.</p>;
  const { info, position } = open;
  const T = r.analysis.ids.length;
  const positions = where === 'token' && position !== null ? [position] : 'all';
  const act = position !== null ? featureAt(r, info.feature, position) : null;
  const fires = maxTokens(r, info.feature);
  return (
    <section className="subview sae-feature" data-testid="sae-feature" data-feature={info.feature}>
      <h4>Feature {info.feature}{position !== null ? ` at token ${position} ${quotedToken(r.analysis.tokens[position])}` : ''}</h4>
      <p>
        ‖W_dec[f]‖ = {fixed(info.decoderNorm, 3)}{position !== null ? ` · activation here ${act !== null ? fixed(act, 3) : 'below the top-k (pin it to see every token)'}` : ''}
        {info.neuronpedia && <> · <a href={info.neuronpedia} target="_blank" rel="noreferrer" data-testid="sae-neuronpedia">Neuronpedia</a></>}
      </p>
      <p data-testid="sae-feature-max">
        {fires.length ? <>Fires most in this prompt at: {fires.map(([t, v]) => (
          <button key={t} type="button" className="chip" data-testid="sae-max-token" data-position={t} onClick={() => void openFeature(info.feature, t)}>{t} {quotedToken(r.analysis.tokens[t])} {fixed(v, 3)}</button>
        ))}</> : 'Does not fire anywhere in this prompt.'}
      </p>
      <p data-testid="sae-feature-lens">Promotes (logit lens of W_dec[f], final norm recomputed; log-probs in nats): {info.lensTokens.map((t, i) => <span key={i}>{i ? ' · ' : ''}<span className="chip">{quotedToken(t)} <span className="muted">{fixed(info.lensLogProbs[i], 2)}</span></span></span>)}</p>
      {info.cosines.length > 0 && <p data-testid="sae-feature-cosines">cos with library vectors: {info.cosines.map((c) => `${c.name} ${signed(c.cosine, 3)}`).join(' · ')}</p>}
      <div className="row">
        <button type="button" data-testid="sae-pin" onClick={() => void togglePin(info.feature)}>{pinned.includes(info.feature) ? 'Unpin' : 'Pin to heatmap'}</button>
        <label>at <select data-testid="sae-place-where" value={where} onChange={(e) => setWhere(e.target.value as 'token' | 'all')}>
          {position !== null && <option value="token">token {position}</option>}
          <option value="all">all {T} positions</option>
        </select></label>
      </div>
      <div className="row">
        <label>α <input className="short" type="number" data-testid="sae-alpha" value={alpha} onChange={(e) => setAlpha(Number(e.target.value))} /></label>
        <button type="button" data-testid="sae-steer" onClick={() => { const n = placeFeature('add', info.feature, alpha, positions); setPlaced(n ? `Added #${n}: steer along W_dec[${info.feature}], α = ${alpha}, at ${positions === 'all' ? 'all positions' : `token ${positions[0]}`}` : null); }} title="h += α·W_dec[f]/‖W_dec[f]‖">Steer along W_dec[f] (unit norm)</button>
        <label>c <input className="short" type="number" data-testid="sae-clamp-value" value={value} onChange={(e) => setValue(Number(e.target.value))} /></label>
        <button type="button" data-testid="sae-clamp" onClick={() => { const n = placeFeature('sae_clamp', info.feature, value, positions); setPlaced(n ? `Added #${n}: clamp feature ${info.feature} to c = ${value}, at ${positions === 'all' ? 'all positions' : `token ${positions[0]}`}` : null); }} title="x' = x + (c − f(x))·W_dec[f], the SAE's error term kept">Clamp f to c</button>
      </div>
      {placed && <p className="hint" role="status" data-testid="sae-placed">{placed} — it is now in the experiment's intervention list (Steering panel, top of the page) and applies to the next run.</p>}
    </section>
  );
}

/** f's activation at position t when the analysis holds it (pinned, top-k there, or a max-activating token); else null. */
function featureAt(r: SaeResult, f: number, t: number): number | null {
  const a = r.analysis;
  const k = a.pinned.indexOf(f);
  if (k >= 0) return a.pinnedActs[k * a.ids.length + t];
  for (let j = 0; j < a.topK; j++) if (a.topIndices[t * a.topK + j] === f) return a.topValues[t * a.topK + j];
  const m = maxTokens(r, f);
  if (m.length < a.maxK || m.some(([p]) => p === t)) return m.find(([p]) => p === t)?.[1] ?? 0;
  return null;
}

/** (position, activation) of f's max-activating tokens in the prompt, largest first. */
function maxTokens(r: SaeResult, f: number): [number, number][] {
  const a = r.analysis, out: [number, number][] = [];
  for (let j = 0; j < a.maxK; j++) if (a.maxPositions[f * a.maxK + j] >= 0) out.push([a.maxPositions[f * a.maxK + j], a.maxValues[f * a.maxK + j]]);
  return out;
}

const NONE = new Float32Array();

/**
 * SAE features of the prompt: per token the top features with their activations, L0, MSE and
 * explained variance; a feature × token heatmap of the pinned features; the margin attributions
 * (DLA with the final norm frozen, ablation Δ) and the splice cost; a feature panel to steer or clamp.
 */
export function SaeView() {
  const r = useStore((s) => s.saeResult);
  const active = useStore((s) => s.activeSae);
  const busy = useStore((s) => !!s.job);
  const waiting = useWaitingFor();
  const topK = useStore((s) => s.saeTopK);
  const setTopK = useStore((s) => s.setSaeTopK);
  const [hover, setHover] = useState<Cell | null>(null);
  const a = r?.analysis;
  const T = a?.ids.length ?? 0;
  const scale = useHeatmapColour(a?.pinnedActs ?? NONE, 'activation', 'nonnegative');
  const color = scale.color;
  return (
    <div className="view" data-testid="sae-view">
      <header className="view-head">
        <h2>SAE features</h2>
        <p className="muted">Sparse autoencoders in SAELens or Gemma Scope format, attached at their hook (unsteered prompt).</p>
      </header>
      <SaeLoader />
      <div className="row">
        <label>top-k per token <input className="short" type="number" min={1} max={64} data-testid="sae-topk" value={topK} onChange={(e) => setTopK(Math.max(1, Math.min(64, Number(e.target.value) || 1)))} /></label>
        <button type="button" className="primary" data-testid="sae-read" title={waiting} disabled={busy || !active} onClick={() => void readFeatures()}>Read features</button>
        {a && r && (
          <ExportButtons
            name={`sae-${r.modelLabel}`} json={() => saeJson(r)}
            csv={() => [['position', 'token', 'L0 (features > 0)', 'MSE per element', 'explained variance', 'top features (index:activation)'], ...a.tokens.map((t, i) => [i, t, a.l0[i], a.mse[i], a.explainedVariancePerToken[i], topList(r, i).map(([f, v]) => `${f}:${v.toFixed(4)}`).join(' ')])]}
            figure={() => (a.pinned.length ? {
              title: `SAE feature activations · ${r.modelLabel}`,
              caption: [`pinned features of the SAE at ${a.hook}, at each prompt token`, `prompt: “${r.prompt}”`],
              panels: [{ kind: 'heatmap', values: a.pinnedActs, nRows: a.pinned.length, nCols: T, rowLabels: a.pinned.map((f) => `f${f}`), colLabels: a.tokens.map(visibleToken), rowTitle: 'feature', colTitle: 'position · token', scale: { color, domain: scale.domain, title: `feature activation (colour ${scale.note})` } }],
            } : null)}
          />
        )}
      </div>
      {a && r && (
        <>
          <p data-testid="sae-summary">
            Explained variance over the prompt <b data-testid="sae-ev">{fixed(a.explainedVariance, 4)}</b> · mean L0 {fixed(Array.from(a.l0).reduce((x, y) => x + y, 0) / T, 2)} · hook {a.hook}
            {a.margin && <> · margin {signed(a.margin.clean, 3)} → spliced <span data-testid="sae-spliced">{signed(a.margin.spliced, 3)}</span> (spliced − clean = <span data-testid="sae-splice-cost">{signed(a.margin.spliced - a.margin.clean, 3)}</span>: splicing the SAE in {a.margin.spliced >= a.margin.clean ? 'raises' : 'lowers'} the margin)</>}
          </p>
          <table className="data sae-tokens" data-testid="sae-token-table">
            <thead><tr><th>#</th><th>token</th><th>L0</th><th>MSE</th><th>EV</th><th>top features (activation)</th></tr></thead>
            <tbody>
              {a.tokens.map((t, i) => (
                <tr key={i} data-testid="sae-token-row">
                  <td>{i}</td><td>{visibleToken(t)}</td>
                  <td data-testid="sae-l0">{a.l0[i]}</td><td data-testid="sae-mse">{a.mse[i].toFixed(4)}</td>
                  <td>{Number.isFinite(a.explainedVariancePerToken[i]) ? fixed(a.explainedVariancePerToken[i], 3) : '—'}</td>
                  <td>{topList(r, i).map(([f, v]) => (
                    <button key={f} type="button" className="chip" data-testid="sae-chip" data-feature={f} onClick={() => void openFeature(f, i)}>f{f} {v.toFixed(2)}</button>
                  ))}</td>
                </tr>
              ))}
            </tbody>
          </table>
          {a.pinned.length > 0 && (
            <div className="figure">
              <Heatmap
                values={a.pinnedActs} nRows={a.pinned.length} nCols={T} color={color}
                rowLabels={a.pinned.map((f) => `f${f}`)} colLabels={a.tokens.map(visibleToken)} rowTitle="feature" colTitle="token"
                cellWidth={{ min: 14, max: 40 }} cellHeight={22} active={hover} onHover={setHover}
                annotate={(c) => { const v = a.pinnedActs[c.row * T + c.col]; return v > 0 ? v.toFixed(1) : null; }}
                onSelect={(c) => void openFeature(a.pinned[c.row], c.col)}
                label="Activations of the pinned features at every token" testId="sae-heatmap"
              />
              <ScaleControl what="activation" testId="sae-scale" />
              <ColorLegend color={color} domain={scale.domain} title="feature activation" testId="sae-legend" />
              <p className="muted scale-note" data-testid="sae-scale-note">Colour {scale.note}.</p>
            </div>
          )}
          {a.margin && (
            <section className="subview" data-testid="sae-attribution">
              <h3 data-testid="sae-attribution-head">Which features carry the margin “{r.good}” vs “{r.bad}” at {decisionPointText(a.sharedPrefix)}</h3>
              <SharedPrefixNote shared={a.sharedPrefix} reads="the attributions read" testId="sae-shared-prefix" />
              <p className="muted">DLA = f·⟨W_dec[f], g ⊙ (W_U[good] − W_U[bad])⟩ / rms(h_final): a linear approximation with the final norm's scale frozen, ignoring the layers after the hook. Ablation Δ = margin with f zeroed in the reconstruction (error term kept) − margin without: measured.</p>
              <table className="data">
                <thead><tr><th>feature</th><th>activation</th><th>DLA (linear approx.)</th><th>ablation Δ margin</th></tr></thead>
                <tbody>
                  {a.margin.attributions.map((x) => (
                    <tr key={x.feature} data-testid="sae-attribution-row" data-feature={x.feature}>
                      <td><button type="button" className="chip" onClick={() => void openFeature(x.feature, T - 1)}>f{x.feature}</button></td>
                      <td>{fixed(x.activation, 3)}</td><td>{Number.isFinite(x.dla) ? signed(x.dla, 4) : '—'}</td>
                      <td data-testid="sae-ablation" title={x.ablationDelta === undefined ? 'not measured: only the top features by |DLA| are ablated (one forward pass each)' : undefined}>{x.ablationDelta !== undefined ? signed(x.ablationDelta, 4) : <span className="muted">not measured</span>}</td>
                    </tr>
                  ))}
                </tbody>
              </table>
              {a.margin.attributions.some((x) => x.ablationDelta === undefined) && (
                <p className="muted" data-testid="sae-ablation-note">
                  Ablation Δ is measured for the top {a.margin.attributions.filter((x) => x.ablationDelta !== undefined).length} features by |DLA| (one forward pass each); the rest show their DLA only.
                </p>
              )}
            </section>
          )}
          <FeaturePanel r={r} />
        </>
      )}
      {!a && active && <p className="muted">Read features to see which fire on the prompt.</p>}
    </div>
  );
}

/** (feature, activation) pairs of position t with activation > 0. */
function topList(r: SaeResult, t: number): [number, number][] {
  const a = r.analysis;
  const out: [number, number][] = [];
  for (let j = 0; j < a.topK; j++) if (a.topValues[t * a.topK + j] > 0) out.push([a.topIndices[t * a.topK + j], a.topValues[t * a.topK + j]]);
  return out;
}

/** The analysis as the runner prints it (same keys), for export. */
function saeJson(r: SaeResult): unknown {
  const a = r.analysis;
  return {
    model: r.modelLabel, prompt: r.prompt, hook: a.hook, d_sae: a.dSae, ids: a.ids, tokens: a.tokens,
    top_features: a.tokens.map((_, t) => ({ indices: Array.from(a.topIndices.subarray(t * a.topK, (t + 1) * a.topK)), values: Array.from(a.topValues.subarray(t * a.topK, (t + 1) * a.topK)) })),
    l0: Array.from(a.l0), mse: Array.from(a.mse), explained_variance: a.explainedVariance,
    ...(a.margin ? { margin: { clean: a.margin.clean, spliced: a.margin.spliced, attributions: a.margin.attributions } } : {}),
  };
}
