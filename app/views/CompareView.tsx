import { useMemo, useState } from 'react';
import { interpolateOranges, scaleSequential } from 'd3';
import { useStore } from '../store';
import { Heatmap, type Cell } from '../components/Heatmap';
import { ColorLegend } from '../components/ColorLegend';
import { ScaleControl } from '../components/ScaleControl';
import { ExportButtons } from '../components/ExportButtons';
import { ModelPicker } from '../components/ModelPicker';
import { ResultStatus } from '../components/ResultStatus';
import { DenominatorWarning } from '../components/DenominatorWarning';
import { SteeringTransferSection } from '../components/SteeringTransferSection';
import { useStudy } from '../components/useStudy';
import { compareRequest, DEFAULT_COMPARE, runCompare } from '../actions/compare';
import { unloadModelB } from '../actions/model_b';
import { divergingScale, rangeNote, symmetricRange } from '../lib/color_scale';
import { fixed, signed, visibleToken } from '../lib/format';
import { blockShort, residShort, BLOCK_AXIS, RESID_AXIS } from '../lib/layer_names';
import { waitingFor } from '../lib/job_rules';
import { comparisonJson } from '../../workers/shared';
import type { ComparisonResult, PatchHook, StudyRequest } from '../../workers/protocol';
import type { FigureSpec, HeatmapPanel } from '../lib/figure';

/** The hooks of the cross-model patching, in the grid's column order. */
const HOOKS: { hook: PatchHook; label: string }[] = [
  { hook: 'resid_pre', label: 'resid_pre' },
  { hook: 'attn_out', label: 'attn_out' },
  { hook: 'mlp_out', label: 'mlp_out' },
  { hook: 'z', label: 'z (all heads)' },
];

/** A resolved future as text: its sequences' tokens, alternatives joined by " | ". */
const futureText = (f: { tokens: string[][] }) => f.tokens.map((t) => t.join('')).join(' | ');

/** Colour of an exact zero in the weight diff: a neutral grey, told apart from the lightest orange of a small but non-zero change. */
const ZERO = '#e7eaee';

interface Scale { color: (v: number) => string; domain: [number, number]; note: string }

/** A signed, symmetric scale over all of `sets` (A and B on one scale). */
function signedScale(mode: 'robust' | 'max', what: string, ...sets: ArrayLike<number>[]): Scale {
  const all = new Float64Array(sets.reduce((n, s) => n + s.length, 0));
  let o = 0;
  for (const s of sets) { all.set(Array.from(s), o); o += s.length; }
  const r = symmetricRange(all, mode);
  return { color: divergingScale(r.m), domain: [-r.m, r.m], note: rangeNote(r, mode, what) };
}

/** A non-negative scale over [0, m], exact zeros drawn ZERO. */
function positiveScale(values: ArrayLike<number>, mode: 'robust' | 'max', what: string): Scale {
  const r = symmetricRange(values, mode);
  const seq = scaleSequential(interpolateOranges).domain([0, r.m]).clamp(true);
  return { color: (v) => (v === 0 ? ZERO : seq(v)), domain: [0, r.m], note: rangeNote(r, mode, what).replace(/^scale ±/, 'scale 0 to ') };
}

/** One grid on the page and its panel in the exported figure. */
interface Grid {
  id: string;
  title: string;
  values: ArrayLike<number>;
  nRows: number;
  nCols: number;
  rowLabels: string[];
  colLabels: string[];
  rowTitle: string;
  colTitle: string;
  scale: Scale;
  scaleTitle: string;
  lowNote?: string;
  highNote?: string;
  /** The text of a cell in the figure and, when it fits, on screen. */
  text: (v: number) => string | null;
  /** Outlined cells (the weight diff's changed modules). */
  marked?: Cell[];
  /** What a cell reads under the pointer. */
  readout: (row: number, col: number, v: number) => string;
  /** A sentence under the grid saying what it finds. */
  summary?: string;
}

/**
 * Where the cross-model patching finds the change: the first (layer, hook), in forward order, whose
 * patch carries at least half of it (B into A: r ≥ 0.5; A into B: r ≤ 0.5), with its r and the
 * largest departure from "no effect" of the patches before it (row-major: earlier blocks, earlier columns).
 */
function firstCarrier(values: ArrayLike<number>, L: number, C: number, name: (l: number, j: number) => string, dir: 'B into A' | 'A into B'): string {
  // forward order within a block: resid_pre (entering it), attn_out / z, mlp_out
  for (let l = 0; l < L; l++) {
    for (let j = 0; j < C; j++) {
      const v = values[l * C + j];
      const carries = dir === 'B into A' ? v >= 0.5 : v <= 0.5;
      if (!carries) continue;
      const upstream = Array.from({ length: l * C + j }, (_, i) => values[i]).map((x) => (dir === 'B into A' ? Math.abs(x) : Math.abs(1 - x)));
      const worst = upstream.length ? Math.max(...upstream) : 0;
      const what = dir === 'B into A' ? 'the first patch that carries the change (B’s decision in A’s run)' : 'the first patch that undoes the change (A’s value in B’s run)';
      return `${dir}: ${what} is ${name(l, j)} (r = ${fixed(v, 4)}); every patch before it (earlier blocks, earlier hooks of block ${l}) ${dir === 'B into A' ? 'has |r|' : 'has |1 − r|'} ${worst === 0 ? '= 0 exactly' : `≤ ${worst.toPrecision(2)}`}.`;
    }
  }
  return `${dir}: no single patch carries half of the change.`;
}

const panelOf = (g: Grid): HeatmapPanel => ({
  kind: 'heatmap', title: g.title, values: g.values, nRows: g.nRows, nCols: g.nCols, rowLabels: g.rowLabels, colLabels: g.colLabels,
  rowTitle: g.rowTitle, colTitle: g.colTitle, rowsUpward: true, annotate: (r, c) => g.text(g.values[r * g.nCols + c]),
  scale: { color: g.scale.color, domain: g.scale.domain, title: `${g.scaleTitle} (${g.scale.note})`, lowNote: g.lowNote, highNote: g.highNote },
});

/** One grid with its legend and a readout of the cell under the pointer. */
function GridFigure({ g }: { g: Grid }) {
  const [hover, setHover] = useState<Cell | null>(null);
  const v = hover ? g.values[hover.row * g.nCols + hover.col] : NaN;
  return (
    <figure className="compare-grid" data-testid={`compare-${g.id}`} data-marked={g.marked?.map((c) => `${g.rowLabels[c.row]} ${g.colLabels[c.col]}`).join(', ')}>
      <figcaption><b>{g.title}</b></figcaption>
      <Heatmap
        values={g.values} nRows={g.nRows} nCols={g.nCols} color={g.scale.color} rowLabels={g.rowLabels} colLabels={g.colLabels}
        rowTitle={g.rowTitle} colTitle={g.colTitle} rowsUpward cellWidth={{ min: 14, max: 56 }} cellHeight={24} colIndex={null}
        annotate={(c) => g.text(g.values[c.row * g.nCols + c.col])} markedCells={g.marked} active={hover} onHover={setHover}
        label={g.title} testId={`compare-${g.id}-heatmap`}
      />
      <ColorLegend color={g.scale.color} domain={g.scale.domain} title={g.scaleTitle} lowNote={g.lowNote} highNote={g.highNote} testId={`compare-${g.id}-legend`} />
      {g.summary && <p data-testid={`compare-${g.id}-summary`}>{g.summary}</p>}
      <p className="muted readout-line" data-testid={`compare-${g.id}-readout`}>
        {hover ? g.readout(hover.row, hover.col, v) : `Point at a cell to read it. Colour ${g.scale.note}.`}
      </p>
    </figure>
  );
}

/** The grids of a result, in page order, by section. */
function gridsOf(r: ComparisonResult, mode: 'robust' | 'max'): { weights: Grid[]; lens: Grid[]; sinks: Grid[]; patch: Grid[] } {
  const s = r.sides, A = s.a, B = s.b, L = A.nLayers;
  const tokLabels = (t: string[]) => t.map((x, i) => `${i}:${visibleToken(x)}`);
  const resid = (n: number) => Array.from({ length: n + 1 }, (_, l) => residShort(l));
  const blocks = (n: number) => Array.from({ length: n }, (_, l) => blockShort(l));
  const out = { weights: [] as Grid[], lens: [] as Grid[], sinks: [] as Grid[], patch: [] as Grid[] };

  if (r.weights) {
    const w = r.weights, M = w.modules.length;
    const values = new Float64Array(w.nLayers * M);
    const marked: Cell[] = [];
    w.modules.forEach((m, j) => { for (let l = 0; l < w.nLayers; l++) { values[l * M + j] = m.values[l]; if (m.values[l] !== 0 && Number.isFinite(m.values[l])) marked.push({ row: l, col: j }); } });
    out.weights.push({
      id: 'weights', title: 'Weight diff ‖W_B − W_A‖_F / ‖W_A‖_F per block and module', values, nRows: w.nLayers, nCols: M,
      rowLabels: blocks(w.nLayers), colLabels: w.modules.map((m) => m.name), rowTitle: BLOCK_AXIS, colTitle: 'module',
      scale: positiveScale(values, mode, '‖ΔW‖/‖W‖'), scaleTitle: 'relative weight change (grey: exactly 0, bytes equal)',
      text: (v) => (v === 0 ? '0' : Number.isFinite(v) ? v.toPrecision(2) : '–'), marked,
      readout: (row, col, v) => `${blockShort(row)} ${w.modules[col].name}: ${v === 0 ? 'exactly 0 (equal weights)' : v.toPrecision(4)}`,
    });
  }

  const lensScale = signedScale(mode, 'Δ', A.lensMargin, B.lensMargin);
  const lensGrid = (id: string, who: string, an: typeof A): Grid => ({
    id, title: `Lens margin Δ, model ${who}`, values: an.lensMargin, nRows: an.nLayers + 1, nCols: an.ids.length,
    rowLabels: resid(an.nLayers), colLabels: tokLabels(an.tokens), rowTitle: RESID_AXIS, colTitle: 'position · token',
    scale: lensScale, scaleTitle: 'Δ (nats), A and B on one scale', lowNote: `favours ${visibleToken(futureText(an.bad))}`, highNote: `favours ${visibleToken(futureText(an.good))}`,
    text: (v) => (Math.abs(v) >= 0.95 ? v.toFixed(0) : null),
    readout: (row, col, v) => `model ${who}, ${residShort(row)}, ${col}:${visibleToken(an.tokens[col])}: Δ = ${signed(v, 4)}`,
  });
  out.lens.push(lensGrid('lens-a', `A (${r.labelA})`, A), lensGrid('lens-b', `B (${r.labelB})`, B));
  const al = s.aligned;
  if (al) {
    out.lens.push({
      id: 'lens-diff', title: 'Lens margin B − A', values: al.lensMarginDiff, nRows: L + 1, nCols: A.ids.length,
      rowLabels: resid(L), colLabels: tokLabels(A.tokens), rowTitle: RESID_AXIS, colTitle: 'position · token',
      scale: signedScale(mode, 'Δ_B − Δ_A', al.lensMarginDiff), scaleTitle: 'Δ_B − Δ_A (nats)', lowNote: 'B less for the good future', highNote: 'B more for the good future',
      text: (v) => (v === 0 ? '0' : Math.abs(v) >= 0.95 ? v.toFixed(0) : null),
      readout: (row, col, v) => `${residShort(row)}, ${col}:${visibleToken(A.tokens[col])}: Δ_B − Δ_A = ${v === 0 ? '0 exactly' : signed(v, 4)}`,
    });
    out.lens.push({
      id: 'resid-div', title: 'Residual divergence ‖h_B − h_A‖ / ‖h_A‖', values: al.residRelDiff, nRows: L + 1, nCols: A.ids.length,
      rowLabels: resid(L), colLabels: tokLabels(A.tokens), rowTitle: RESID_AXIS, colTitle: 'position · token',
      scale: positiveScale(al.residRelDiff, mode, '‖Δh‖/‖h‖'), scaleTitle: 'relative distance (grey: exactly 0, equal streams)',
      text: (v) => (v === 0 ? '0' : null),
      readout: (row, col, v) => `${residShort(row)}, ${col}:${visibleToken(A.tokens[col])}: ‖h_B − h_A‖/‖h_A‖ = ${v === 0 ? '0 exactly' : v.toPrecision(3)}, cos = ${fixed(al.residCosine[row * A.ids.length + col], 5)}`,
    });
    const H = A.nHeads;
    const heads = Array.from({ length: H }, (_, h) => `H${h}`);
    out.sinks.push({
      id: 'sink-dalpha', title: 'Sink divergence Δα₀ = α₀(B) − α₀(A) per head', values: al.sinkDAlpha0, nRows: L, nCols: H,
      rowLabels: blocks(L), colLabels: heads, rowTitle: BLOCK_AXIS, colTitle: 'head',
      scale: signedScale(mode, 'Δα₀', al.sinkDAlpha0), scaleTitle: 'Δα₀', lowNote: 'B attends less to token 0', highNote: 'B attends more',
      text: (v) => (v === 0 ? '0' : Math.abs(v) >= 0.005 ? v.toFixed(2) : null),
      readout: (row, col, v) => `${blockShort(row)} H${col}: α₀ A ${fixed(A.sinks.alpha0[row * H + col], 3)}, B ${fixed(B.sinks.alpha0[row * H + col], 3)}, Δα₀ ${v === 0 ? '0 exactly' : signed(v, 4)}`,
    }, {
      id: 'sink-js', title: 'Sink divergence: Jensen–Shannon of the key distributions per head', values: al.sinkJs, nRows: L, nCols: H,
      rowLabels: blocks(L), colLabels: heads, rowTitle: BLOCK_AXIS, colTitle: 'head',
      scale: positiveScale(al.sinkJs, mode, 'JS'), scaleTitle: 'JS (nats; grey: exactly 0)',
      text: (v) => (v === 0 ? '0' : v >= 0.0005 ? v.toFixed(3) : null),
      readout: (row, col, v) => `${blockShort(row)} H${col}: JS ${v === 0 ? '0 exactly' : v.toPrecision(3)}`,
    });
  }

  const grid = (dir: 'B into A' | 'A into B', list: ComparisonResult['crossPatch']) => {
    if (!list.length) return;
    const hooks = HOOKS.filter((h) => list.some((x) => x.hook === h.hook));
    const C = hooks.length;
    const values = new Float32Array(L * C);
    hooks.forEach((h, j) => { const x = list.find((y) => y.hook === h.hook)!; for (let l = 0; l < L; l++) values[l * C + j] = x.layerRecovery[l]; });
    const id = dir === 'B into A' ? 'patch' : 'patch-reverse';
    out.patch.push({
      id, title: `Cross-model patching, ${dir}: recovery per hook and layer (all positions)`, values, nRows: L, nCols: C,
      rowLabels: blocks(L), colLabels: hooks.map((h) => h.label), rowTitle: BLOCK_AXIS, colTitle: 'hook',
      scale: signedScale(mode, 'r', values), scaleTitle: 'recovery r = (Δ_patched − Δ_A)/(Δ_B − Δ_A)',
      lowNote: dir === 'B into A' ? '← away from B' : '← undoes the fine-tune', highNote: dir === 'B into A' ? 'B’s decision →' : 'no effect →',
      text: (v) => (Number.isFinite(v) ? (Math.abs(v) < 0.005 ? '0' : v.toFixed(2)) : '–'),
      readout: (row, col, v) => `${dir}, ${hooks[col].hook === 'resid_pre' ? 'resid_pre (the stream entering block ' + row + ')' : `${hooks[col].hook} of block ${row}`}: r = ${fixed(v, 5)}`,
      summary: firstCarrier(values, L, C, (l, j) => `${hooks[j].label} of block ${l}`, dir),
    });
    const z = list.find((x) => x.hook === 'z');
    if (z && dir === 'B into A') {
      out.patch.push({
        id: 'patch-heads', title: `Cross-model patching, ${dir}: attn.hook_z per head`, values: z.recovery, nRows: L, nCols: z.nCols,
        rowLabels: blocks(L), colLabels: Array.from({ length: z.nCols }, (_, h) => `H${h}`), rowTitle: BLOCK_AXIS, colTitle: 'head',
        scale: signedScale(mode, 'r', z.recovery), scaleTitle: 'recovery r',
        text: (v) => (Number.isFinite(v) && Math.abs(v) >= 0.05 ? v.toFixed(1) : null),
        readout: (row, col, v) => `${dir}, block ${row} head ${col} (hook_z): r = ${fixed(v, 5)}`,
      });
    }
    for (const x of list) {
      if (x.hook === 'z' || !Array.from(x.recovery).some(Number.isFinite)) continue;
      out.patch.push({
        id: `${id}-${x.hook}-positions`, title: `Cross-model patching, ${dir}: ${x.hookTemplate} per position`, values: x.recovery, nRows: L, nCols: x.nCols,
        rowLabels: blocks(L), colLabels: tokLabels(x.tokens), rowTitle: 'layer', colTitle: 'position · token',
        scale: signedScale(mode, 'r', x.recovery), scaleTitle: 'recovery r',
        text: (v) => (Number.isFinite(v) && Math.abs(v) >= 0.05 ? v.toFixed(1) : null),
        readout: (row, col, v) => `${dir}, ${x.hook} of block ${row} at ${col}:${visibleToken(x.tokens[col])}: r = ${fixed(v, 5)}`,
      });
    }
  };
  grid('B into A', r.crossPatch);
  grid('A into B', r.crossPatchReverse);
  return out;
}

/** "block 3 gate, block 3 up, block 3 down" — the (layer, module) cells whose weights changed, and the whole-model tensors that did. */
function changedText(r: ComparisonResult): string {
  const w = r.weights!;
  const cells = w.modules.flatMap((m) => Array.from(m.values).flatMap((v, l) => (v !== 0 ? [`block ${l} ${m.name}`] : [])));
  const globals = w.globals.filter((g) => g.value !== 0).map((g) => g.name);
  const all = [...cells, ...globals];
  return all.length === 0 ? 'The two models’ weights are identical (every module exactly 0).' : `Weights differ only in: ${all.join(', ')}; every other module is exactly 0 (identical bytes).`;
}

/** The CSV rows of a comparison: one row per cell of every grid. */
function csvOf(groups: Grid[]): (string | number)[][] {
  const rows: (string | number)[][] = [['grid', 'row', 'column', 'value']];
  for (const g of groups) for (let r = 0; r < g.nRows; r++) for (let c = 0; c < g.nCols; c++) rows.push([g.title, g.rowLabels[r], g.colLabels[c], g.values[r * g.nCols + c]]);
  return rows;
}

/** Model B's picker, its badge line and Unload. */
function ModelBPanel() {
  const b = useStore((s) => s.modelB);
  const busy = useStore((s) => s.job !== null);
  return (
    <div className="compare-b">
      <ModelPicker slot="B" />
      {b && (
        <p className="muted" data-testid="compare-model-b" data-status={b.status}>
          Model B: <b>{b.label}</b>{b.info ? ` · ${b.info.modelType} · ${b.info.nLayers} layers · ${b.info.nHeads} heads · d_model ${b.info.dModel}` : ' (loading…)'}{' '}
          <button type="button" className="small" data-testid="unload-model-b" disabled={busy || b.status !== 'ready'} onClick={() => void unloadModelB()}>Unload B</button>
        </p>
      )}
    </div>
  );
}

/**
 * Model comparison (DESIGN.md §3 "Model comparison": how post-training reshapes a decision): model
 * A (the model bar) against model B (picked here) on the experiment's prompt and futures — weight
 * diff per block and module, lens margins of A and B on one colour scale with B − A, sink
 * divergence per head, and cross-model patching per hook and layer (and per position when asked)
 * in both directions, on one page and in one exported figure. A pair that differs shows each
 * model's lens, labelled, and says what differs.
 */
export function CompareView() {
  const modelB = useStore((s) => s.modelB);
  const info = useStore((s) => s.info);
  const prompt = useStore((s) => s.prompt);
  const chatTemplate = useStore((s) => s.chatTemplate);
  const good = useStore((s) => s.good);
  const bad = useStore((s) => s.bad);
  const job = useStore((s) => s.job);
  const mode = useStore((s) => s.heatmapScale);
  const [hooks, setHooks] = useState<PatchHook[]>(DEFAULT_COMPARE.hooks);
  const [positions, setPositions] = useState(DEFAULT_COMPARE.positions);
  const [reverse, setReverse] = useState(DEFAULT_COMPARE.reverse);
  // the request reads the experiment's prompt and futures from the store: they are this memo's inputs too
  const req = useMemo(() => compareRequest({ hooks, positions, reverse }), [prompt, chatTemplate, good, bad, hooks, positions, reverse]);
  const { run, stale, running } = useStudy('compare', (req ?? undefined) as StudyRequest<'compare'> | undefined);
  const r = run?.result ?? null;
  const grids = useMemo(() => (r ? gridsOf(r, mode) : null), [r, mode]);
  const all = grids ? [...grids.weights, ...grids.lens, ...grids.sinks, ...grids.patch] : [];
  const bStale = r && modelB?.info && r.labelB !== modelB.info.label ? modelB.info.label : null;
  const ready = !!info && modelB?.status === 'ready' && !!req && hooks.length > 0;
  const start = () => void runCompare({ hooks, positions, reverse });
  const toggle = (h: PatchHook) => setHooks((x) => (x.includes(h) ? x.filter((y) => y !== h) : [...x, h]));
  const figure = (): FigureSpec | null => r && ({
    title: `Model comparison · A ${r.labelA} vs B ${r.labelB}`,
    caption: [
      `prompt: “${prompt}”; Δ = log p(${visibleToken(futureText(r.sides.a.good))}) − log p(${visibleToken(futureText(r.sides.a.bad))}); Δ_A = ${signed(r.sides.a.finalMargin[r.sides.a.ids.length - 1], 4)}, Δ_B = ${signed(r.sides.b.finalMargin[r.sides.b.ids.length - 1], 4)}`,
      ...(r.mismatch ? [`not comparable weight by weight: ${r.mismatch.differences.join('; ')} (each model’s lens shown on its own tokens)`] : [changedText(r)]),
      'recovery r = (Δ_patched − Δ_A)/(Δ_B − Δ_A): B into A, r = 1 where the component carries the fine-tune’s whole change; A into B, r = 0 where undoing it removes the change',
    ],
    panels: all.map(panelOf),
  });
  return (
    <section className="view" data-testid="compare-view">
      <header className="view-head">
        <h2>Compare models</h2>
        <p className="muted">
          How post-training reshapes a decision: model A (the model bar) against model B (picked here) on the experiment’s prompt and futures —
          which modules’ weights moved, where the lens margins part, which heads’ sinks shifted, and which component carries the change
          (cross-model patching: one model’s activation patched into the other’s run, r = (Δ_patched − Δ_A)/(Δ_B − Δ_A)).
        </p>
      </header>
      <ModelBPanel />
      <form className="settings compare-form" onSubmit={(e) => { e.preventDefault(); if (!job && ready) start(); }}>
        <div className="row">
          <span>Cross-model patching at</span>
          {HOOKS.map((h) => (
            <label key={h.hook} className="toggle"><input type="checkbox" data-testid={`compare-hook-${h.hook}`} checked={hooks.includes(h.hook)} onChange={() => toggle(h.hook)} />{h.label}</label>
          ))}
          <label className="toggle" title="Also patch each (layer, position): n_layers × n_tokens runs per hook, with prefix KV reuse"><input type="checkbox" data-testid="compare-positions" checked={positions} onChange={(e) => setPositions(e.target.checked)} />per position</label>
          <label className="toggle"><input type="checkbox" data-testid="compare-reverse" checked={reverse} onChange={(e) => setReverse(e.target.checked)} />also A into B</label>
          <button type="submit" className="primary" data-testid="run-compare" disabled={!!job || !ready} title={waitingFor(job) ?? (!modelB ? 'Load model B first' : !req ? 'Fix the futures first' : undefined)}>Compare</button>
        </div>
      </form>
      {!modelB && <p className="placeholder" data-testid="compare-need-b">Load model B above (a fine-tune of model A, say) to compare the two on this prompt.</p>}
      {r && grids ? (
        <>
          <div className="view-head">
            <p className="muted" data-testid="compare-caption" data-label-a={r.labelA} data-label-b={r.labelB}>
              A <b>{r.labelA}</b> vs B <b>{r.labelB}</b> · Δ_A = <span className="mono" data-testid="compare-margin-a">{signed(r.sides.a.finalMargin[r.sides.a.ids.length - 1], 4)}</span>,
              Δ_B = <span className="mono" data-testid="compare-margin-b">{signed(r.sides.b.finalMargin[r.sides.b.ids.length - 1], 4)}</span>
            </p>
            <ExportButtons name={`compare-${r.labelA}-${r.labelB}`} json={() => comparisonJson(r)} csv={() => csvOf(all)} figure={figure} />
          </div>
          <ResultStatus model={run!.modelLabel} computedWith={run!.computedWith} stale={stale === 'request' ? ['prompt'] : []} noun="comparison" rerun={{ label: 'Compare', run: start }} testId="compare-status" />
          {bStale && <p className="stale-note" role="status" data-testid="compare-b-stale">Computed with model B {r.labelB}; {bStale} is model B now: press Compare.</p>}
          {running && <p className="muted">Comparing…</p>}
          {r.mismatch && (
            <div className="warn" role="status" data-testid="compare-mismatch">
              <p><b>{r.mismatch.need === 'tokens' ? 'The models do not share a tokenizer' : 'The models differ in architecture, shapes or tokenizer'}:</b> the weight diff, B − A and the cross-model patching need the same tokenizer, architecture and shapes. What differs:</p>
              <ul>{r.mismatch.differences.map((d) => <li key={d}>{d}</li>)}</ul>
              <p>Each model’s lens is still shown below, on its own tokens, labelled.</p>
            </div>
          )}
          {r.denominator && <DenominatorWarning cleanMargin={r.sides.b.finalMargin[r.sides.b.ids.length - 1]} corruptMargin={r.sides.a.finalMargin[r.sides.a.ids.length - 1]} testId="compare-denominator" />}
          <ScaleControl what="value" testId="compare-scale" />
          {grids.weights.length > 0 && (
            <section className="compare-section" aria-label="weight diff">
              <h3>Weight diff</h3>
              <p data-testid="compare-weights-changed">{changedText(r)}</p>
              <p className="muted" data-testid="compare-globals">Whole-model tensors: {r.weights!.globals.map((g) => `${g.name} ${g.value === 0 ? '0 (identical)' : g.value.toPrecision(3)}`).join(' · ')}</p>
              {grids.weights.map((g) => <GridFigure key={g.id} g={g} />)}
            </section>
          )}
          <section className="compare-section" aria-label="lens">
            <h3>Logit lens: A, B{r.sides.aligned ? ', B − A and the residual stream’s divergence' : ' (each on its own tokens)'}</h3>
            <div className="compare-row">{grids.lens.map((g) => <GridFigure key={g.id} g={g} />)}</div>
          </section>
          {grids.sinks.length > 0 && (
            <section className="compare-section" aria-label="sink divergence">
              <h3>Sink divergence (layer × head)</h3>
              <p className="muted" data-testid="compare-sink-rates">
                Sink rate per layer (heads with α₀ &gt; {r.sides.a.sinks.eps}): A {Array.from(r.sides.a.sinks.sinkRate, (v, l) => `${blockShort(l)} ${Math.round(v * 100)}%`).join(', ')};
                B {Array.from(r.sides.b.sinks.sinkRate, (v, l) => `${blockShort(l)} ${Math.round(v * 100)}%`).join(', ')}
              </p>
              <div className="compare-row">{grids.sinks.map((g) => <GridFigure key={g.id} g={g} />)}</div>
            </section>
          )}
          {grids.patch.length > 0 && (
            <section className="compare-section" aria-label="cross-model patching">
              <h3>Cross-model patching</h3>
              <p className="muted" data-testid="compare-patch-cost">
                {r.crossPatch.concat(r.crossPatchReverse).reduce((n, x) => n + x.positionsComputed, 0)} token positions computed (prefix KV reuse);{' '}
                {r.crossPatch.concat(r.crossPatchReverse).reduce((n, x) => n + x.cellsSkipped, 0)} cells hold equal values in both models and were not run (r exact).
              </p>
              <div className="compare-stack">{grids.patch.map((g) => <GridFigure key={g.id} g={g} />)}</div>
            </section>
          )}
        </>
      ) : modelB && <p className="placeholder">Press Compare to run the comparison on the experiment’s prompt and futures.</p>}
      {modelB && <SteeringTransferSection />}
    </section>
  );
}
