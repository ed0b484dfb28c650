import { useEffect, useMemo, useState } from 'react';
import { SharedPrefixNote } from '../components/SharedPrefixNote';
import { useStore } from '../store';
import { Heatmap, type Cell } from '../components/Heatmap';
import { ColorLegend } from '../components/ColorLegend';
import { ScaleControl, useHeatmapColour } from '../components/ScaleControl';
import { DataTable } from '../components/DataTable';
import { ExportButtons } from '../components/ExportButtons';
import { ResultStatus, StaleOverlay, usePairStaleParts } from '../components/ResultStatus';
import { fixed, signed, visibleToken } from '../lib/format';
import { BLOCK_AXIS, hookName, hookShort, RESID_AXIS } from '../lib/layer_names';
import { followExperimentPrompt, openPatchCell, pickExamplePair, runPatching } from '../actions/patching';
import { inOrder } from '../actions/worker';
import type { PatchingDisplay, PatchingSettings } from '../store/patching';
import type { PatchHook } from '../../workers/protocol';
import { DenominatorWarning } from '../components/DenominatorWarning';
import { EXAMPLE_PAIR, pairFor } from '../lib/patching_prompts';
import { waitingFor } from '../lib/job_rules';
import { AtpBesideExact } from './AtpBesideExact';
import { useChatTurn } from '../components/useExperimentRequest';
import { decisionPointText } from '../lib/decision_point_text';

const HOOKS: { hook: PatchHook; title: string }[] = [
  { hook: 'resid_pre', title: 'blocks.{l}.hook_resid_pre (layer × position)' },
  { hook: 'attn_out', title: 'blocks.{l}.hook_attn_out (layer × position)' },
  { hook: 'mlp_out', title: 'blocks.{l}.hook_mlp_out (layer × position)' },
  { hook: 'z', title: 'blocks.{l}.attn.hook_z (layer × head)' },
];

/** Token counts of the clean and corrupted prompts as the worker tokenizes them in the experiment's chat turn (null while unknown). */
function useLengths(clean: string, corrupt: string): { clean: number; corrupt: number } | null {
  const turn = useChatTurn();
  const ready = useStore((s) => s.modelStatus === 'ready');
  const [n, setN] = useState<{ clean: number; corrupt: number } | null>(null);
  useEffect(() => {
    setN(null);
    if (!ready || !clean || !corrupt) return;
    let live = true;
    const t = setTimeout(() => {
      void Promise.all([inOrder((w) => w.tokenize({ prompt: clean, ...turn })), inOrder((w) => w.tokenize({ prompt: corrupt, ...turn }))])
        .then(([a, b]) => { if (live) setN({ clean: a.ids.length, corrupt: b.ids.length }); })
        .catch(() => undefined);
    }, 250);
    return () => { live = false; clearTimeout(t); };
  }, [ready, clean, corrupt, turn]);
  return n;
}

/** The grid's setup: clean and corrupted prompts, hook, direction, metric; Run. */
function PatchingForm() {
  const set = useStore((s) => s.patchingSettings);
  const update = useStore((s) => s.setPatchingSettings);
  const prompt = useStore((s) => s.prompt);
  const job = useStore((s) => s.job);
  const info = useStore((s) => s.info);
  const follows = useStore((s) => s.patchingFollowsPrompt);
  const setFollows = useStore((s) => s.setPatchingFollowsPrompt);
  // an experiment loaded (link, file) or typed: the pair starts from its prompt until the user edits the pair
  useEffect(() => { followExperimentPrompt(); }, [prompt, follows]);
  const [exampleNote, setExampleNote] = useState<string | null>(null);
  const edit = (patch: Partial<PatchingSettings>) => { setFollows(false); update(patch); setExampleNote(null); };
  const n = useLengths(set.clean, set.corrupt);
  const differ = n !== null && n.clean !== n.corrupt;
  const same = set.corrupt === set.clean && set.clean.trim() !== '';
  return (
    <form className="settings patching-form" onSubmit={(e) => { e.preventDefault(); if (!job) void runPatching(); }}>
      <label className="wide">Clean prompt
        <span className="row">
          <input data-testid="patching-clean" value={set.clean} onChange={(e) => edit({ clean: e.target.value })} spellCheck={false} />
          <button type="button" className="small" data-testid="patching-use-prompt" disabled={prompt === set.clean} onClick={() => { const pair = pairFor(prompt, set); update({ clean: pair.clean, corrupt: pair.corrupt }); }} title="Copy the experiment’s prompt here (with its known corruption, for the shipped prompts)">Use the experiment’s prompt</button>
          <button type="button" className="small" data-testid="patching-example" onClick={() => setExampleNote(pickExamplePair())} title={`README’s example: “${EXAMPLE_PAIR.clean}” against “${EXAMPLE_PAIR.corrupt}”; it also sets the experiment’s futures to “ Tom” vs “ Lily”`}>Example</button>
        </span>
        <span className="hint" data-testid="patching-example-note">{exampleNote ?? 'Example sets the README’s pair and the experiment’s futures (“ Tom” vs “ Lily”).'}</span>
      </label>
      <label className="wide">Corrupted prompt
        <input data-testid="patching-corrupt" value={set.corrupt} onChange={(e) => edit({ corrupt: e.target.value })} spellCheck={false} />
      </label>
      {same && (
        <p className="warn" data-testid="patching-corrupt-needed">
          The corrupted prompt is still a copy of the clean one: change the words that carry the answer (a name for another, keeping the token count), so the two runs differ where the decision is read.
        </p>
      )}
      {n && (
        <p className={differ ? 'warn' : 'muted'} data-testid="patching-lengths" data-clean={n.clean} data-corrupt={n.corrupt}>
          {differ
            ? `The clean prompt has ${n.clean} tokens and the corrupted prompt ${n.corrupt}: patching needs equal token lengths (the same positions). Reword one of them.`
            : `Both prompts have ${n.clean} tokens.`}
        </p>
      )}
      <div className="row">
        <label>Hook
          <select data-testid="patching-hook" value={set.hook} onChange={(e) => update({ hook: e.target.value as PatchHook })}>
            {HOOKS.map((h) => <option key={h.hook} value={h.hook}>{h.title}</option>)}
          </select>
        </label>
        <label>Direction
          <select data-testid="patching-direction" value={set.direction} onChange={(e) => update({ direction: e.target.value as PatchingSettings['direction'] })}>
            <option value="denoise">denoise: clean → corrupted run</option>
            <option value="noise">noise: corrupted → clean run</option>
          </select>
        </label>
        <label>Metric
          <select data-testid="patching-metric" value={set.metric} onChange={(e) => update({ metric: e.target.value as PatchingSettings['metric'] })}>
            <option value="final">final-layer margin, first tokens</option>
            <option value="sequence">teacher-forced sequence margin</option>
          </select>
        </label>
        <button type="submit" className="primary" data-testid="run-patching" title={waitingFor(job)} disabled={!!job || !info || differ || same}>Run patching</button>
      </div>
    </form>
  );
}

/** Column labels: the clean token, and "clean/corrupt" where the prompts differ. */
function columnLabels(p: PatchingDisplay): string[] {
  const r = p.result;
  if (r.columns === 'head') return [...Array.from({ length: r.nCols }, (_, h) => `head ${h}`), 'all heads'];
  const cols = r.cleanTokens.map((t, i) => (r.cleanIds[i] === r.corruptIds[i] ? visibleToken(t) : `${visibleToken(t)}/${visibleToken(r.corruptTokens[i])}`));
  return [...cols, 'all'];
}

/** The numbers under the pointer. */
function Readout({ p, cell }: { p: PatchingDisplay; cell: Cell | null }) {
  const r = p.result;
  if (!cell) return <aside className="readout" data-testid="patching-readout"><p className="muted">Point at a cell (or focus the map and use the arrow keys) to read it.</p></aside>;
  const all = cell.col === r.nCols;
  const i = cell.row * r.nCols + cell.col;
  const rec = all ? r.layerRecovery[cell.row] : r.recovery[i];
  const patched = all ? r.corruptMargin + rec * (r.cleanMargin - r.corruptMargin) : r.patchedMargin[i];
  return (
    <aside className="readout" data-testid="patching-readout" data-layer={cell.row} data-col={cell.col}>
      <dl>
        <dt>Layer</dt><dd className="mono" data-testid="patching-readout-layer">{hookName(r.hookTemplate.replace('{l}', String(cell.row)))}</dd>
        {r.columns === 'head'
          ? <><dt>Head</dt><dd data-testid="patching-readout-col">{all ? 'all heads' : cell.col}</dd></>
          : <><dt>Position</dt><dd data-testid="patching-readout-col">{all ? 'all positions' : cell.col}</dd>
            {!all && <><dt>Token</dt><dd className="mono">{visibleToken(r.cleanTokens[cell.col])}{r.cleanIds[cell.col] !== r.corruptIds[cell.col] && <> (corrupted: {visibleToken(r.corruptTokens[cell.col])})</>}</dd></>}</>}
        <dt>Δ patched</dt><dd className="mono">{fixed(patched, 4)}</dd>
        <dt>Recovery r</dt><dd className="mono big" data-testid="patching-readout-recovery">{fixed(rec, 3)}</dd>
      </dl>
    </aside>
  );
}

/**
 * Activation patching (DESIGN.md §3: where the decision becomes causal): recovery
 * r = (Δ_patched − Δ_corrupt)/(Δ_clean − Δ_corrupt) for every layer × position (or layer × head),
 * with a last column patching the whole layer. Click a cell to open that patch as an intervention.
 */
export function PatchingView() {
  const p = useStore((s) => s.patching);
  const showTables = useStore((s) => s.showTables);
  const busy = useStore((s) => s.job !== null);
  const [hover, setHover] = useState<Cell | null>(null);
  const [opened, setOpened] = useState<{ id: number; promptChanged: boolean; text: string } | null>(null);
  const list = useStore((s) => s.interventions);
  const stale = usePairStaleParts(p);
  // dimmed as the other views dim a result that no longer answers the setup (another model: its own line, not dimmed)
  const outdated = stale.some((x) => x !== 'model');
  const values = useMemo(() => {
    if (!p) return new Float32Array();
    const r = p.result, C = r.nCols + 1;
    const out = new Float32Array(r.nLayers * C);
    for (let l = 0; l < r.nLayers; l++) {
      out.set(r.recovery.subarray(l * r.nCols, (l + 1) * r.nCols), l * C);
      out[l * C + r.nCols] = r.layerRecovery[l];
    }
    return out;
  }, [p]);
  // Recovery colours: red below 0, white at 0, blue toward ±m (the shared colour-scale setting; r can pass 1).
  const scale = useHeatmapColour(values, 'r');
  const r = p?.result;
  const openedAt = opened ? list.findIndex((d) => d.id === opened.id) + 1 : 0;
  const C = r ? r.nCols + 1 : 0;
  const cols = p ? columnLabels(p) : [];
  const rowLabels = r ? Array.from({ length: r.nLayers }, (_, l) => hookShort(r.hookTemplate.replace('{l}', String(l)))) : [];
  const rowTitle = r?.hook === 'resid_pre' ? RESID_AXIS : BLOCK_AXIS;
  const dirText = r?.direction === 'denoise' ? 'denoise: clean values patched into the corrupted run (r = 1: restores the clean margin)' : 'noise: corrupted values patched into the clean run (r = 1: no effect; r = 0: destroys the clean margin)';
  const metricText = r?.metric === 'sequence' ? 'teacher-forced sequence margin' : `final-layer margin at ${decisionPointText(r?.sharedPrefix)} (first tokens)`;
  return (
    <section className="view" data-testid="patching-view">
      <header className="view-head">
        <h2>Activation patching</h2>
        <p className="muted">
          Where the decision becomes causal: the value of one hook in one run is replaced by the other run’s value at one layer and position (or head),
          and the margin is measured again. Recovery r = (Δ_patched − Δ_corrupt)/(Δ_clean − Δ_corrupt) (Heimersheim &amp; Nanda, arXiv 2404.15255).
          The futures (and the chat-template setting) are the experiment’s.
        </p>
      </header>
      <PatchingForm />
      {p && r ? (
        <>
          <div className="view-head">
            <p className="muted" data-testid="patching-caption" data-direction={r.direction} data-hook={r.hook}>
              {p.modelLabel} · {r.hookTemplate} · <b>{dirText}</b> · Δ = log p(<b className="good">{visibleToken(p.good.value)}</b>) − log p(<b className="bad">{visibleToken(p.bad.value)}</b>), {metricText} ·
              Δ_clean = <span className="mono" data-testid="patching-clean-margin">{signed(r.cleanMargin, 4)}</span>, Δ_corrupt = <span className="mono" data-testid="patching-corrupt-margin">{signed(r.corruptMargin, 4)}</span>
            </p>
            <ExportButtons
              name={`patching-${r.hook}-${r.direction}-${p.modelLabel}`}
              json={() => ({ model: p.modelLabel, clean: p.clean, corrupt: p.corrupt, goodText: p.good.value, badText: p.bad.value, chatTemplate: p.chatTemplate, system: p.system ?? null, tools: p.tools, ...r, recovery: Array.from({ length: r.nLayers }, (_, l) => Array.from(r.recovery.subarray(l * r.nCols, (l + 1) * r.nCols))), patchedMargin: Array.from({ length: r.nLayers }, (_, l) => Array.from(r.patchedMargin.subarray(l * r.nCols, (l + 1) * r.nCols))) })}
              csv={() => [['layer', r.columns, 'label', 'patched margin Δ (nats)', 'recovery r'], ...Array.from({ length: r.nLayers }, (_, l) => Array.from({ length: r.nCols }, (_, c) => [rowLabels[l], c, cols[c], r.patchedMargin[l * r.nCols + c], r.recovery[l * r.nCols + c]])).flat(), ...Array.from({ length: r.nLayers }, (_, l) => [rowLabels[l], 'all', 'all', '', r.layerRecovery[l]])]}
              figure={() => ({
                title: `Activation patching · ${p.modelLabel} · ${r.hookTemplate} · ${r.direction}`,
                caption: [`recovery r = (Δ_patched − Δ_corrupt)/(Δ_clean − Δ_corrupt); Δ = log p(${visibleToken(p.good.value)}) − log p(${visibleToken(p.bad.value)}), ${metricText}; Δ_clean = ${signed(r.cleanMargin, 4)}, Δ_corrupt = ${signed(r.corruptMargin, 4)}; ${dirText}`, `clean: “${p.clean}”`, `corrupted: “${p.corrupt}”`],
                panels: [{
                  kind: 'heatmap', values, nRows: r.nLayers, nCols: C, rowLabels, colLabels: cols, rowTitle, colTitle: r.columns === 'head' ? 'head' : 'position · token (clean/corrupted)', rowsUpward: true,
                  annotate: (row, col) => fixed(values[row * C + col], 2),
                  scale: { color: scale.color, domain: scale.domain, title: `recovery r (colour ${scale.note})`, lowNote: '← moves away from clean', highNote: 'restores clean →' },
                }],
              })}
            />
          </div>
          <ResultStatus model={p.modelLabel} computedWith={p.computedWith} stale={stale} noun="patching grid" names={{ prompt: 'the prompt pair' }} rerun={{ label: 'Run patching', run: () => void runPatching() }} testId="patching-status" />
          <DenominatorWarning cleanMargin={r.cleanMargin} corruptMargin={r.corruptMargin} testId="patching-denominator" />
          <SharedPrefixNote shared={r.sharedPrefix} testId="patching-shared-prefix" />
          {opened && openedAt > 0 && (
            <p className="note-ok" role="status" data-testid="patching-opened">
              Added #{openedAt}: {opened.text}, open in the editor.{opened.promptChanged && ' The prompt is now the patched run’s prompt.'} Press Analyse to see the margins under it.
            </p>
          )}
          <div className="view-body">
            <div className={`figure${outdated ? ' stale' : ''}`}>
              {outdated && <StaleOverlay testId="patching-stale" action="run patching again" />}
              <ScaleControl what="r" testId="patching-scale" />
              <Heatmap
                values={values} nRows={r.nLayers} nCols={C} color={scale.color}
                rowLabels={rowLabels} colLabels={cols} colIndex={r.columns === 'head' ? null : (c) => (c === r.nCols ? 'all' : String(c))} rowTitle={rowTitle} colTitle={r.columns === 'head' ? 'head' : 'position · token (clean/corrupted where they differ)'}
                rowsUpward pinLastColumn cellWidth={{ min: 16, max: 56 }} cellHeight={30}
                annotate={(c) => { const v = values[c.row * C + c.col]; return Math.abs(v) >= 0.095 ? v.toFixed(1) : null; }}
                active={hover} onHover={(c) => { if (c) setHover(c); }}
                onSelect={busy ? undefined : (c) => setOpened(openPatchCell(c.row, c.col === r.nCols ? 'all' : c.col))}
                label={`Recovery per layer and ${r.columns}, ${r.direction}`} testId="patching-heatmap"
              />
              <ColorLegend color={scale.color} domain={scale.domain} title="recovery r" lowNote="← moves away from clean" highNote="restores clean →" testId="patching-legend" />
              <p className="muted scale-note" data-testid="patching-scale-note">Colour {scale.note}.</p>
              <p className="hint">Click a cell to add that patch to the interventions (a <code>patch</code> from the {r.direction === 'denoise' ? 'clean' : 'corrupted'} prompt at that hook and {r.columns}); the last column patches the whole layer.</p>
            </div>
            <Readout p={p} cell={hover} />
          </div>
          {!outdated && <AtpBesideExact p={p} />}
          <p className="muted" data-testid="patching-cost">{r.positionsComputed} token positions computed (prefix KV reuse){r.cellsSkipped ? `; ${r.cellsSkipped} cells hold equal values in both runs and were not run (r = 0 exactly)` : ''}.</p>
          {showTables && (
            <DataTable caption={`Recovery r by layer (rows) and ${r.columns} (columns)`} rowHeader={rowTitle} rowLabels={rowLabels} colLabels={cols}
              cell={(l, c) => fixed(values[l * C + c], 4)} cellTestId={(l, c) => `patching-cell-${l}-${c}`} testId="patching-table" />
          )}
        </>
      ) : <p className="placeholder">Run patching to see which layers and positions carry the decision: the corrupted prompt is the clean one with the decisive words changed (same token length).</p>}
    </section>
  );
}
