/**
 * Batch studies (DESIGN.md §3 "Distractor study", and any prompt template over a table of values):
 * every prompt of the study is analysed as the workbench analyses one prompt (Engine.analyse), and
 * each result is reduced to scalar columns (metrics.ts). Composes Engine calls like
 * studies/sweep.ts: progress after each prompt, cancel between prompts — a cancelled batch
 * resolves with the rows it finished (partial results are kept, not thrown away).
 */
import type { SharedPrefix } from '../../decision_point';
import type { Engine } from '../../engine';
import { chatTurn, type FutureInput, type PromptInput } from '../../prompt';
import type { Intervention } from '../../model/intervention';
import { hookWidth } from '../../model/hook_width';
import { patchingGrid, type PatchHook } from '../patching';
import { expandStudy, type BatchPrompt, type StudyTemplate } from './template';
import { ANALYSIS_METRICS, BATCH_METRICS, metricsOf, type BatchMetric } from './metrics';
import type { ValueRow, ValuesTable } from './values';
import type { Progress } from '../../progress';
import { futureInput } from '../../experiment';
import { atDecisionPoint } from '../resolve_interventions';

export interface BatchRequest {
  template: StudyTemplate;
  values: ValuesTable;
  /** The chat-template toggle; a template's own chat_template wins. */
  chatTemplate?: boolean;
  /** Columns to keep (default the Analysis metrics, plus probe_score / patch_recovery when set up). */
  metrics?: BatchMetric[];
  /** probe_score: the direction v [width of hook] read at `hook` (e.g. a probe's difference of means). */
  probe?: { hook: string; vector: Float32Array };
  /**
   * patch_recovery: the cell (hook of studies/patching.ts, layer, position; a negative position
   * counts from the end) patched from each clean prompt into its corrupt variant (template.corrupt),
   * with the prompt's interventions applied in the clean, corrupted and patched runs.
   */
  patchCell?: { hook: PatchHook; layer: number; position: number };
  /** |Δ| threshold of lens_visible_layer, nats (default 1). */
  visibleThreshold?: number;
  /** Sink threshold ε (default 0.3, Gu et al. 2024). */
  sinkEps?: number;
  /**
   * The interventions applied to one prompt, resolved by the caller for that prompt and its length
   * (at the decision point: its forcedIds counted in nPrompt).
   * Explicit positions are absolute (counted from the first token, as everywhere): on rows of other
   * lengths they address the same index, and a row too short for one is refused with the resolver's
   * "position p is outside the run" as its error (the batch goes on).
   */
  interventions?: (p: PromptInput & { nPrompt: number }) => Promise<Intervention[]> | Intervention[];
}

/** One prompt's result: its variables, texts and metric values (null = undefined for this prompt). */
export interface BatchRow {
  index: number;
  vars: ValueRow;
  prompt: string;
  good: string;
  bad: string;
  /** How the futures are written (a tool call's good/bad is its JSON). */
  goodMode: BatchPrompt['goodMode'];
  badMode: BatchPrompt['badMode'];
  /** Number of prompt tokens. */
  nTokens: number;
  metrics: Partial<Record<BatchMetric, number | null>>;
  /** The futures' shared prefix teacher-forced after the prompt (decision_point.ts): the first-token metrics are read after it; null when they share none. */
  sharedPrefix?: SharedPrefix | null;
  /** Why this prompt could not be analysed (its metrics are empty); the batch goes on. */
  error?: string;
}

export interface BatchResult {
  columns: string[];
  metrics: BatchMetric[];
  rows: BatchRow[];
  /** Prompts in the study (rows.length < total when cancelled). */
  total: number;
  cancelled: boolean;
  visibleThreshold: number;
  sinkEps: number;
}

/** The columns of a study: the asked ones, else the Analysis metrics plus probe_score / patch_recovery when set up. */
export function batchMetrics(req: Pick<BatchRequest, 'metrics' | 'probe' | 'patchCell'>): BatchMetric[] {
  return req.metrics ?? [...ANALYSIS_METRICS, ...(req.probe ? ['probe_score' as const] : []), ...(req.patchCell ? ['patch_recovery' as const] : [])];
}

/**
 * Runs the study.
 * @param onRow called with each finished row, in order (the UI fills its table as they come).
 * @param signal checked before each prompt; once aborted the batch stops and resolves with
 *   `cancelled: true` and the rows done so far.
 * @throws Error before the first prompt runs for a template variable without a column, an empty
 *   filled-in prompt or future, an unknown metric, or a study of tool calls or a system prompt on a
 *   model whose chat template cannot render them (assertChatStudy); a prompt that fails later (too long for the
 *   context, a future that does not tokenize) becomes a row with `error` and the batch goes on.
 */
export async function runBatch(engine: Engine, req: BatchRequest, onRow?: (r: BatchRow) => void, onProgress?: (p: Progress) => void, signal?: AbortSignal): Promise<BatchResult> {
  const prompts: BatchPrompt[] = expandStudy(req.template, req.values);
  const metrics = batchMetrics(req);
  for (const m of metrics) if (!(BATCH_METRICS as readonly string[]).includes(m)) throw new Error(`unknown metric "${m}" (known: ${BATCH_METRICS.join(', ')})`);
  const probe = metrics.includes('probe_score') ? req.probe : undefined;
  if (metrics.includes('probe_score')) {
    if (!probe) throw new Error('probe_score needs a direction and the hook it is read at (e.g. a probe direction from the vector library)');
    const w = hookWidth(engine.spec, probe.hook).width;
    if (probe.vector.length !== w) throw new Error(`probe_score: the direction has ${probe.vector.length} values; ${probe.hook} is ${w} wide`);
  }
  if (metrics.includes('patch_recovery')) {
    if (!req.patchCell) throw new Error('patch_recovery needs a cell: the hook, layer and position to patch');
    if (!req.template.corrupt) throw new Error('patch_recovery needs the corrupted variant of each prompt: a "corrupt" template (or a corrupt column in a prompt list)');
  }
  const norm = probe ? Math.hypot(...probe.vector) : 1;
  if (probe && !(norm > 0)) throw new Error('probe_score: the direction is the zero vector');
  const chatTemplate = req.template.chatTemplate ?? req.chatTemplate;
  assertChatStudy(engine, req.template, prompts, chatTemplate);
  const visibleThreshold = req.visibleThreshold ?? 1;
  const sinkEps = req.sinkEps ?? 0.3;
  const rows: BatchRow[] = [];
  let cancelled = false;
  for (const p of prompts) {
    await new Promise((r) => setTimeout(r, 0)); // lets a cancel message in between prompts (worker)
    if (signal?.aborted) { cancelled = true; break; }
    const row: BatchRow = { index: p.index, vars: p.vars, prompt: p.prompt, good: p.good, bad: p.bad, goodMode: p.goodMode, badMode: p.badMode, nTokens: 0, metrics: {} };
    try {
      const input = promptOf(p, req.template, chatTemplate);
      const { good, bad } = futuresOf(p);
      row.nTokens = engine.encodePrompt(input).length;
      // resolved for the run the analysis makes: the prompt at its decision point
      const at = req.interventions ? atDecisionPoint(engine, input, good, bad) : input;
      const interventions = req.interventions ? await req.interventions({ ...at, nPrompt: engine.encodePrompt(at).length }) : [];
      const a = await engine.analyse({ ...input, good, bad, interventions, sinkEps });
      row.sharedPrefix = a.sharedPrefix;
      const all: Partial<Record<BatchMetric, number | null>> = metricsOf(a, visibleThreshold);
      if (probe) {
        // The residual stream at the last token the analysis read (the decision point), under the same interventions, projected on v/‖v‖.
        const ids = a.ids;
        const h = (await engine.run(ids, { capture: [probe.hook], interventions, logits: 'last' })).captured.get(probe.hook)!;
        const d = probe.vector.length, t = ids.length - 1;
        let dot = 0;
        for (let j = 0; j < d; j++) dot += h[t * d + j] * probe.vector[j];
        all.probe_score = dot / norm;
      }
      if (req.patchCell && metrics.includes('patch_recovery')) {
        const c = req.patchCell;
        const g = await patchingGrid(engine, { clean: p.prompt, corrupt: p.corrupt!, ...chatTurn(input), good, bad, hook: c.hook, only: { layer: c.layer, col: c.position }, interventions });
        all.patch_recovery = g.recovery.find((r) => !Number.isNaN(r)) ?? null;
      }
      row.metrics = Object.fromEntries(metrics.map((m) => [m, all[m] ?? null]));
    } catch (e) {
      row.error = (e as Error).message;
      row.metrics = Object.fromEntries(metrics.map((m) => [m, null]));
    }
    rows.push(row);
    onRow?.(row);
    onProgress?.({ done: rows.length, total: prompts.length });
  }
  return { columns: req.values.columns, metrics, rows, total: prompts.length, cancelled, visibleThreshold, sinkEps };
}

/** One prompt of the study as the engine reads it: the chat turn with the template's system prompt, tools and enable_thinking. */
export function promptOf(p: BatchPrompt, t: StudyTemplate, chatTemplate: boolean | undefined): PromptInput {
  return {
    prompt: p.prompt, chatTemplate, ...(p.system !== undefined ? { system: p.system } : {}), ...(t.tools?.length ? { tools: t.tools } : {}),
    ...(t.enableThinking !== undefined ? { enableThinking: t.enableThinking } : {}),
  };
}

/** A prompt's two futures as the engine reads them (text, ids or a tool call). @throws Error for a bad id list or call. */
export function futuresOf(p: BatchPrompt): { good: FutureInput; bad: FutureInput } {
  return { good: futureInput({ mode: p.goodMode, value: p.good }), bad: futureInput({ mode: p.badMode, value: p.bad }) };
}

/**
 * Refuses, before the first prompt, a study the model's chat template cannot render: a system
 * prompt, tools or tool-call futures without the chat template (off, or the tokenizer has none), and
 * tool-call futures on a template that writes no tool calls (the first such prompt's futures are
 * resolved here: Llama 3.1's and Gemma 3's packaged templates, or stories260K with no template at all).
 * @throws Error saying what the study needs and what this model lacks.
 */
export function assertChatStudy(engine: Engine, t: StudyTemplate, prompts: readonly BatchPrompt[], chatTemplate: boolean | undefined): void {
  const toolRow = prompts.find((p) => p.goodMode === 'tool' || p.badMode === 'tool');
  const needs = toolRow ? 'tool-call futures' : t.tools?.length ? 'tools' : t.system ? 'a system prompt' : null;
  if (!needs) return;
  if (!engine.info().hasChatTemplate) throw new Error(`${engine.label} has no chat template, and this study's prompts are chat turns with ${needs}; load an instruct model whose chat template writes tool calls (e.g. Qwen3)`);
  if (!chatTemplate) throw new Error(`this study's prompts have ${needs}, which only the chat template renders: switch the chat-template toggle on`);
  if (!toolRow) return;
  const input = promptOf(toolRow, t, chatTemplate);
  const ids = engine.encodePrompt(input, { anyLength: true });
  const { good, bad } = futuresOf(toolRow);
  try {
    for (const [which, f] of [['good', good], ['bad', bad]] as const) if ('toolCall' in f) engine.resolveFuture(ids, f, input, which);
  } catch (e) {
    throw new Error(`${engine.label} cannot run this study: values row ${toolRow.index + 1}: ${(e as Error).message}`);
  }
}

/**
 * A row as one flat record, the same for the runner's JSON lines and the view's CSV export:
 * index, the study's variables, prompt, good, bad, n_tokens, the metrics, error.
 */
export function flatRow(r: BatchRow, columns: readonly string[], metrics: readonly BatchMetric[]): Record<string, string | number | null> {
  const out: Record<string, string | number | null> = { index: r.index };
  for (const c of columns) if (!(c in out)) out[c] = r.vars[c] ?? '';
  Object.assign(out, { prompt: r.prompt, good: r.good, bad: r.bad, n_tokens: r.nTokens });
  for (const m of metrics) out[m] = r.metrics[m] ?? null;
  out.error = r.error ?? null;
  return out;
}
