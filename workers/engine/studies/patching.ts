/**
 * Activation patching heatmaps (DESIGN.md §3 "Activation patching": where the decision becomes
 * causal). Two prompts of equal token length, clean and corrupted; the value of one hook in one
 * run is replaced by the other run's value at one (layer, position) — or one (layer, head) for
 * attn.hook_z — and the margin Δ is measured again. Normalised recovery
 *
 *   r = (Δ_patched − Δ_corrupt) / (Δ_clean − Δ_corrupt)
 *
 * (Heimersheim & Nanda, arXiv 2404.15255; Zhang & Nanda, arXiv 2309.16042).
 * - denoise: the corrupted run with clean values patched in. r = 0: the patch restores nothing;
 *   r = 1: it restores the clean margin (the component is sufficient).
 * - noise: the clean run with corrupted values patched in. The same formula: r = 1: the patch
 *   changes nothing; r = 0: it destroys the clean margin (the component is necessary).
 * Δ ('final', default) is the final-layer margin at the last prompt position (the decision point:
 * after the futures' shared prefix, Engine.decisionPoint) between the futures' first tokens (sets: logsumexp) — `margins`' final_margin; 'sequence' is the teacher-forced
 * margin of multi-token futures (branch tokens unpatched: the patch covers the prompt).
 *
 * Cost: a patch at position p leaves positions < p unchanged, so each cell reuses the patched
 * run's KV cache for the prefix (model/kv_prefix.ts) and computes positions ≥ p only, positions in
 * descending order; a cell whose two values are equal (positions before the prompts first differ)
 * changes nothing and is not run (Δ_patched = the run's own margin, exactly). `reuse: false` runs
 * the naive loop (one full forward per cell), for the equality test and the benchmark.
 * Structure after studies/sweep.ts: progress after each cell, cancel between cells, one result.
 */
import type { Engine } from '../engine';
import { chatTurn, type ChatTurn, type FutureInput, type ResolvedFuture } from '../prompt';
import type { SharedPrefix } from '../decision_point';
import { logSumExp } from '../analysis/margin';
import { logSoftmaxCpu } from '../ops/logits.cpu';
import type { Intervention } from '../model/intervention';
import { forwardSpan } from '../model/span';
import { PrefixCache } from '../model/kv_prefix';
import { sameFirstTokens } from '../analysis/future_overlap';
import type { Progress } from '../progress';

/** Hooks a patching grid can sweep, with the block hook each stands for. */
export const PATCH_HOOKS = {
  resid_pre: 'hook_resid_pre',
  attn_out: 'hook_attn_out',
  mlp_out: 'hook_mlp_out',
  z: 'attn.hook_z',
} as const;
export type PatchHook = keyof typeof PATCH_HOOKS;
export type PatchDirection = 'denoise' | 'noise';
export type PatchMetric = 'final' | 'sequence';

export interface PatchingRequest {
  clean: string;
  corrupt: string;
  /** Apply the chat template to both prompts. */
  chatTemplate?: boolean;
  /** With the chat template: the system prompt and tools of both prompts (PromptInput). */
  system?: string;
  tools?: Record<string, unknown>[];
  /** With the chat template: the template's enable_thinking for both prompts (PromptInput.enableThinking). */
  enableThinking?: boolean;
  good: FutureInput;
  bad: FutureInput;
  hook: PatchHook;
  /** 'denoise' (default): clean values into the corrupted run; 'noise': corrupted values into the clean run. */
  direction?: PatchDirection;
  /** 'final' (default): first-token margin at the last prompt position; 'sequence': teacher-forced multi-token margin. */
  metric?: PatchMetric;
  /** false: one full forward per cell (the naive loop). Default true (prefix KV reuse). */
  reuse?: boolean;
  /**
   * Run this one cell only (layer, column = position or head; a negative column counts from the
   * end: −1 = the last position): the other cells and the whole-layer patches are NaN.
   */
  only?: { layer: number; col: number };
  /**
   * Interventions applied in every run (clean, corrupted and each patched one), before the patch at
   * the same hook: the patch then writes the source run's value as it was under them (values are
   * captured after a hook's interventions). Positions are prompt positions of both prompts.
   */
  interventions?: Intervention[];
}

export interface PatchingResult {
  hook: PatchHook;
  /** The hook per layer, with {l}: "blocks.{l}.hook_resid_pre". */
  hookTemplate: string;
  direction: PatchDirection;
  metric: PatchMetric;
  nLayers: number;
  /** Columns of the grid: prompt positions (n_tokens) or heads (n_heads, hook z). */
  columns: 'position' | 'head';
  nCols: number;
  cleanIds: number[];
  corruptIds: number[];
  cleanTokens: string[];
  corruptTokens: string[];
  /** The futures, tokenized after the clean prompt (the same ids are scored in both runs). */
  good: ResolvedFuture;
  bad: ResolvedFuture;
  /** The futures' shared prefix, teacher-forced after both prompts (the ids end with it; decision_point.ts), or null. */
  sharedPrefix?: SharedPrefix | null;
  /** Δ of the unpatched clean and corrupted runs (nats). */
  cleanMargin: number;
  corruptMargin: number;
  /** Δ with one cell patched [n_layers·n_cols], row-major (layer, column); NaN where not run (`only`). */
  patchedMargin: Float32Array;
  /** r per cell [n_layers·n_cols]. */
  recovery: Float32Array;
  /** r with every column of a layer patched at once (all positions, or all heads) [n_layers]. */
  layerRecovery: Float32Array;
  /** Token positions computed in all patched runs (the naive loop: cells × n_tokens). */
  positionsComputed: number;
  /** Cells not run because both runs hold equal values there (r is exact without a forward). */
  cellsSkipped: number;
}

/** r = (Δ_patched − Δ_corrupt)/(Δ_clean − Δ_corrupt) (Heimersheim & Nanda, arXiv 2404.15255). */
export function recoveryOf(patched: number, clean: number, corrupt: number): number {
  return (patched - corrupt) / (clean - corrupt);
}

/** One patch of the grid: where it acts and the first position it can change. */
interface Cell { layer: number; col: number; iv: Intervention; from: number }

/**
 * The values a patch writes: a source run's value at the patched hook of every layer
 * ("blocks.{l}.<hook>" → [n_tokens, width]) and its margin Δ (nats). It comes from the same model
 * (patchingGrid: the other prompt) or from another model of the same shapes on the same prompt
 * (studies/compare.ts, cross-model patching): the grid below does not care which.
 */
export interface PatchSource {
  captured: Map<string, Float32Array>;
  margin: number;
}

/** What every run of one patching grid shares: the hook, the metric and the futures it scores. */
export interface PatchPlan {
  hook: PatchHook;
  metric: PatchMetric;
  /** The futures' token sequences, resolved once (the same ids are scored in every run). */
  good: ResolvedFuture;
  bad: ResolvedFuture;
  /** Interventions of every run (source, reference and each patched one), before the patch at the same hook. */
  interventions?: readonly Intervention[];
  /** false: one full forward per cell (the naive loop). Default true (prefix KV reuse). */
  reuse?: boolean;
  /** Run this one cell only (see PatchingRequest.only). */
  only?: { layer: number; col: number };
  /** false: the whole-layer patches only (the per-cell margins are NaN). Default true. */
  cells?: boolean;
  /** The prompt as the user wrote it, for the `only` error message. */
  promptLabel?: string;
}

/** Hook names per layer of a plan's hook, and the template with {l}. */
export function patchHooks(nLayers: number, hook: PatchHook): { hookTemplate: string; hooks: string[] } {
  if (!(hook in PATCH_HOOKS)) throw new Error(`patching hook "${hook}": use ${Object.keys(PATCH_HOOKS).join(', ')}`);
  const hookTemplate = `blocks.{l}.${PATCH_HOOKS[hook]}`;
  return { hookTemplate, hooks: Array.from({ length: nLayers }, (_, l) => hookTemplate.replace('{l}', String(l))) };
}

/**
 * log p of one future from the log-softmax `lp` of a run's last position [d_vocab]: 'final' = log Σ
 * p over its first tokens; 'sequence' = log Σ over its alternatives of Π p along each, the later
 * tokens read from branch(ids) → [ids.length − T, d_vocab] logits (teacher forcing).
 */
export function futureLogProb(metric: PatchMetric, V: number) {
  return async (lp: Float32Array, prompt: readonly number[], branch: (ids: number[]) => Promise<Float32Array>, f: ResolvedFuture): Promise<number> => {
    if (metric === 'final') return logSumExp(f.firstIds.map((i) => lp[i]));
    const per: number[] = [];
    for (const q of f.sequences) {
      let x = lp[q[0]];
      if (q.length > 1) {
        const rows = await branch([...prompt, ...q.slice(0, -1)]);
        for (let j = 1; j < q.length; j++) x += logSoftmaxCpu(rows.subarray((j - 1) * V, j * V), V)[q[j]];
      }
      per.push(x);
    }
    return logSumExp(per);
  };
}

/**
 * Δ from the last-position logits of a run of `prompt` and, for 'sequence', the logits of its
 * branch continuations (branch(ids) → [ids.length − T, d_vocab]): futureLogProb(good) − futureLogProb(bad).
 */
export function marginOf(plan: Pick<PatchPlan, 'metric' | 'good' | 'bad'>, V: number) {
  const logp = futureLogProb(plan.metric, V);
  return async (last: Float32Array, prompt: readonly number[], branch: (ids: number[]) => Promise<Float32Array>): Promise<number> => {
    const lp = logSoftmaxCpu(last, last.length);
    return (await logp(lp, prompt, branch, plan.good)) - (await logp(lp, prompt, branch, plan.bad));
  };
}

/**
 * The source run of a patching grid on `engine`: one forward over `ids` capturing the plan's hook
 * at every layer (after the plan's interventions), and its margin Δ.
 * @throws Error for an unknown hook or a prompt too long.
 */
export async function patchSource(engine: Engine, ids: readonly number[], plan: PatchPlan): Promise<PatchSource> {
  const { hooks } = patchHooks(engine.spec.nLayers, plan.hook);
  const base = plan.interventions ?? [], T = ids.length;
  const src = await engine.run(ids, { capture: hooks, interventions: base, logits: 'last' });
  const margin = await marginOf(plan, engine.spec.dVocab)(src.logits, ids, async (q) => (await forwardSpan(engine.model, q, T, q.length, { nPrompt: T, interventions: base, logits: 'all' })).logits!);
  return { captured: src.captured, margin };
}

/** The patched runs of one grid: Δ per cell and per whole layer, and what it cost. */
export interface PatchRuns {
  hookTemplate: string;
  /** Δ of the unpatched run (nats). */
  runMargin: number;
  columns: 'position' | 'head';
  nCols: number;
  /** Δ per cell [n_layers·n_cols] (NaN where not run: `only`, `cells: false`). */
  patchedMargin: Float64Array;
  /** Δ with every column of a layer patched [n_layers] (NaN with `only`). */
  layerPatched: Float64Array;
  positionsComputed: number;
  cellsSkipped: number;
}

/**
 * The one patching loop: runs `engine` on `runIds` with `source`'s values patched in, per (layer,
 * column) cell and per whole layer, reusing the unpatched run's KV cache for the prefix a patch
 * cannot change (model/kv_prefix.ts; positions in descending order; a cell whose two values are
 * equal is not run and gets Δ_run exactly). The source may come from another model with the same
 * shapes (studies/compare.ts): only its captured values and margin are used.
 * @param checkMargins called with Δ_run before any patched run (it throws to refuse the grid).
 * @param onProgress after each patched run: done/total (total = cells + one whole-layer patch per layer).
 * @param signal checked between runs; when aborted the job throws signal.reason.
 * @throws Error for an unknown hook, an `only` cell outside the grid, or what checkMargins throws.
 */
export async function patchRuns(
  engine: Engine, runIds: readonly number[], source: PatchSource, plan: PatchPlan,
  checkMargins?: (runMargin: number) => void, onProgress?: (p: Progress) => void, signal?: AbortSignal,
): Promise<PatchRuns> {
  const s = engine.spec, L = s.nLayers, T = runIds.length;
  const { hookTemplate, hooks } = patchHooks(L, plan.hook);
  const base = plan.interventions ?? [];
  const margin = marginOf(plan, s.dVocab);
  // The run to patch, as the reference whose cache rows the cells reuse.
  const kv = new PrefixCache(engine.model);
  const ref = await kv.reference(runIds, { nPrompt: T, capture: hooks, interventions: base, logits: 'last' });
  const runMargin = await margin(ref.logits!, runIds, async (ids) => (await kv.extend(T, ids, { nPrompt: T, interventions: base, logits: 'all' })).logits!);
  checkMargins?.(runMargin);

  // Cells, each with the first position where the two runs' values differ (before it a patch is a no-op).
  const width = ref.captured.get(hooks[0])!.length / T;
  for (const h of hooks) {
    const v = source.captured.get(h);
    if (!v || v.length !== T * width) throw new Error(`patch source: ${h} holds ${v ? v.length : 'no'} values, the run ${T * width} (${T} positions × ${width})`);
  }
  const heads = plan.hook === 'z';
  const C = heads ? s.nHeads : T;
  const firstDiff = (l: number, c0: number, c1: number, from = 0, to = T): number => {
    const a = source.captured.get(hooks[l])!, b = ref.captured.get(hooks[l])!;
    for (let t = from; t < to; t++) for (let c = c0; c < c1; c++) if (a[t * width + c] !== b[t * width + c]) return t;
    return Number.POSITIVE_INFINITY;
  };
  const reuse = plan.reuse ?? true;
  const withCells = plan.cells ?? true;
  const patchOp = (l: number) => ({ kind: 'patch' as const, replacement: source.captured.get(hooks[l])! });
  // Patches of every position (z heads, whole layers): with reuse they start where the values first
  // differ, which changes nothing (earlier rows would be replaced by equal values).
  const spanFrom = (from: number) => (reuse && Number.isFinite(from) ? { start: from, end: T } : 'all' as const);
  const cells: Cell[] = [];
  const layerCells: Cell[] = [];
  let only: { layer: number; col: number } | null = null;
  if (plan.only) {
    const col = plan.only.col < 0 ? C + plan.only.col : plan.only.col;
    if (!Number.isInteger(plan.only.layer) || plan.only.layer < 0 || plan.only.layer >= L) throw new Error(`patch cell: layer ${plan.only.layer} is outside 0..${L - 1}`);
    if (!Number.isInteger(col) || col < 0 || col >= C) throw new Error(`patch cell: ${heads ? 'head' : 'position'} ${plan.only.col} is outside the ${C} ${heads ? 'heads' : `positions of “${plan.promptLabel ?? 'the prompt'}”`} (negative counts from the end)`);
    only = { layer: plan.only.layer, col };
  }
  for (let l = 0; l < L; l++) {
    if (only && l !== only.layer) continue;
    for (let c = 0; c < C && (withCells || only); c++) {
      if (only && c !== only.col) continue;
      const from = heads ? firstDiff(l, c * s.dHead, (c + 1) * s.dHead) : firstDiff(l, 0, width, c, c + 1);
      const iv: Intervention = heads
        ? { hook: hooks[l], op: patchOp(l), positions: spanFrom(from), groups: { size: s.dHead, indices: [c] } }
        : { hook: hooks[l], op: patchOp(l), positions: [c] };
      cells.push({ layer: l, col: c, iv, from });
    }
    if (only) continue;
    const from = firstDiff(l, 0, width);
    const all: Intervention = { hook: hooks[l], op: patchOp(l), positions: spanFrom(from) };
    layerCells.push({ layer: l, col: -1, iv: heads ? { ...all, groups: { size: s.dHead, indices: Array.from({ length: C }, (_, h) => h) } } : all, from });
  }

  let positionsComputed = 0, cellsSkipped = 0;
  const patched = async (cell: Cell): Promise<number> => {
    if (reuse && !Number.isFinite(cell.from)) { cellsSkipped++; return runMargin; }
    if (!reuse) {
      positionsComputed += T;
      const out = await engine.run(runIds, { interventions: [...base, cell.iv], logits: 'last' });
      return margin(out.logits, runIds, async (ids) => (await forwardSpan(engine.model, ids, T, ids.length, { nPrompt: T, interventions: [...base, cell.iv], logits: 'all' })).logits!);
    }
    positionsComputed += T - cell.from;
    const out = await kv.runFrom(cell.from, runIds, { nPrompt: T, interventions: [...base, cell.iv], logits: 'last' });
    return margin(out.logits!, runIds, async (ids) => (await kv.extend(T, ids, { nPrompt: T, interventions: [...base, cell.iv], logits: 'all' })).logits!);
  };

  const total = cells.length + layerCells.length;
  let done = 0;
  const step = async () => {
    await new Promise((r) => setTimeout(r, 0)); // lets a cancel message in between runs (worker)
    signal?.throwIfAborted();
  };
  // Latest start first: each run then finds its prefix rows still holding the reference.
  const order = reuse ? [...cells, ...layerCells].sort((a, b) => (Number.isFinite(b.from) ? b.from : T) - (Number.isFinite(a.from) ? a.from : T)) : [...cells, ...layerCells];
  const patchedMargin = new Float64Array(L * C).fill(only || !withCells ? NaN : 0);
  const layerPatched = new Float64Array(L).fill(only ? NaN : 0);
  for (const cell of order) {
    await step();
    const m = await patched(cell);
    if (cell.col < 0) layerPatched[cell.layer] = m;
    else patchedMargin[cell.layer * C + cell.col] = m;
    onProgress?.({ done: ++done, total });
  }
  return { hookTemplate, runMargin, columns: heads ? 'head' : 'position', nCols: C, patchedMargin, layerPatched, positionsComputed, cellsSkipped };
}

/**
 * A clean / corrupted prompt pair as token ids of equal length at the clean prompt's decision point
 * (Engine.decisionPoint: the futures' shared prefix, if any, teacher-forced after both prompts), and
 * the futures resolved after it (activation patching, attribution patching).
 * @param what the analysis in the length message ("activation patching").
 * @throws Error for prompts of different token lengths, or a bad prompt or future.
 */
export function readPromptPair(engine: Engine, req: ChatTurn & { clean: string; corrupt: string; good: FutureInput; bad: FutureInput }, what: string): { cleanIds: number[]; corruptIds: number[]; good: ResolvedFuture; bad: ResolvedFuture; sharedPrefix: SharedPrefix | null } {
  const turn = chatTurn(req);
  const bare = engine.encodePrompt({ prompt: req.corrupt, ...turn }).length, clean = engine.encodePrompt({ prompt: req.clean, ...turn }).length;
  if (clean !== bare) {
    throw new Error(`the clean prompt has ${clean} tokens and the corrupted prompt ${bare}; ${what} needs equal token lengths (the same positions): reword one of them`);
  }
  const d = engine.decisionPoint({ prompt: req.clean, ...turn }, req.good, req.bad);
  return { cleanIds: d.promptIds, corruptIds: engine.encodePrompt({ ...d.input, prompt: req.corrupt }), good: d.good, bad: d.bad, sharedPrefix: d.sharedPrefix };
}

/**
 * Computes the patching grid as one job: the source run (the other prompt) by patchSource, the
 * patched runs by patchRuns.
 * @param onProgress after each patched run: done/total (total = cells + one whole-layer patch per layer).
 * @param signal checked between runs; when aborted the job throws signal.reason.
 * @throws Error for prompts of different token lengths (both lengths named), equal clean and
 *   corrupted margins (r undefined; futures with the same first tokens named as the cause), an unknown hook, a bad future, a prompt too long, or an
 *   `only` cell outside the grid.
 */
export async function patchingGrid(engine: Engine, req: PatchingRequest, onProgress?: (p: Progress) => void, signal?: AbortSignal): Promise<PatchingResult> {
  const L = engine.spec.nLayers;
  if (!(req.hook in PATCH_HOOKS)) throw new Error(`patching hook "${req.hook}": use ${Object.keys(PATCH_HOOKS).join(', ')}`);
  const direction = req.direction ?? 'denoise', metric = req.metric ?? 'final';
  if (direction !== 'denoise' && direction !== 'noise') throw new Error(`direction "${direction as string}": use denoise or noise`);
  if (metric !== 'final' && metric !== 'sequence') throw new Error(`metric "${metric as string}": use final or sequence`);
  const { cleanIds, corruptIds, good, bad, sharedPrefix } = readPromptPair(engine, req, 'activation patching');
  const [runIds, srcIds] = direction === 'denoise' ? [corruptIds, cleanIds] : [cleanIds, corruptIds];
  const plan: PatchPlan = { hook: req.hook, metric, good, bad, interventions: req.interventions, reuse: req.reuse, only: req.only, promptLabel: req.clean };

  const src = await patchSource(engine, srcIds, plan);
  let cleanMargin = 0, corruptMargin = 0;
  const runs = await patchRuns(engine, runIds, src, plan, (runMargin) => {
    [cleanMargin, corruptMargin] = direction === 'denoise' ? [src.margin, runMargin] : [runMargin, src.margin];
    if (Math.abs(cleanMargin - corruptMargin) < 1e-6) {
      if (metric === 'final' && sameFirstTokens(good.firstIds, bad.firstIds)) {
        throw new Error(`both futures start with the same token${good.firstIds.length > 1 ? 's' : ''} (id ${good.firstIds.join(', ')}), so the final margin is 0 for every prompt and recovery is undefined: choose futures whose first tokens differ, or the sequence metric`);
      }
      throw new Error(`the clean and corrupted prompts give the same margin (Δ = ${cleanMargin.toFixed(4)}), so recovery (Δ_patched − Δ_corrupt)/(Δ_clean − Δ_corrupt) is undefined: choose a corruption that changes the margin`);
    }
  }, onProgress, signal);
  const r = (m: number) => recoveryOf(m, cleanMargin, corruptMargin);
  return {
    hook: req.hook, hookTemplate: runs.hookTemplate, direction, metric, nLayers: L, columns: runs.columns, nCols: runs.nCols,
    cleanIds, corruptIds, cleanTokens: engine.tokenStrings(cleanIds), corruptTokens: engine.tokenStrings(corruptIds),
    good, bad, sharedPrefix, cleanMargin, corruptMargin,
    patchedMargin: Float32Array.from(runs.patchedMargin), recovery: Float32Array.from(runs.patchedMargin, r), layerRecovery: Float32Array.from(runs.layerPatched, r),
    positionsComputed: runs.positionsComputed, cellsSkipped: runs.cellsSkipped,
  };
}
