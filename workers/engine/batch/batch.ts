/**
 * Batch studies (DESIGN.md §3 "Distractor study", and any prompt template over a table of values):
 * every prompt of the study is analysed as the workbench analyses one prompt (Engine.analyse), and
 * each result is reduced to scalar columns (metrics.ts). Composes Engine calls like
 * steering/sweep.ts: progress after each prompt, cancel between prompts — a cancelled batch
 * resolves with the rows it finished (partial results are kept, not thrown away).
 */
import type { Engine } from '../engine';
import type { PromptInput } from '../api';
import type { Intervention } from '../model/intervention';
import { expandStudy, type BatchPrompt, type StudyTemplate } from './template';
import { BATCH_METRICS, metricsOf, type BatchMetric } from './metrics';
import type { ValueRow, ValuesTable } from './values';

export interface BatchRequest {
  template: StudyTemplate;
  values: ValuesTable;
  chatTemplate?: boolean;
  /** Columns to keep (default all of BATCH_METRICS). */
  metrics?: BatchMetric[];
  /** |Δ| threshold of lens_visible_layer, nats (default 1). */
  visibleThreshold?: number;
  /** Sink threshold ε (default 0.3, Gu et al. 2024). */
  sinkEps?: number;
  /** The interventions applied to one prompt (resolved by the caller for that prompt and its length). */
  interventions?: (p: PromptInput & { nPrompt: number }) => Promise<Intervention[]> | Intervention[];
}

/** One prompt's result: its variables, texts and metric values (null = undefined for this prompt). */
export interface BatchRow {
  index: number;
  vars: ValueRow;
  prompt: string;
  good: string;
  bad: string;
  /** Number of prompt tokens. */
  nTokens: number;
  metrics: Partial<Record<BatchMetric, number | null>>;
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

export interface BatchProgress { done: number; total: number }

/**
 * Runs the study.
 * @param onRow called with each finished row, in order (the UI fills its table as they come).
 * @param signal checked before each prompt; once aborted the batch stops and resolves with
 *   `cancelled: true` and the rows done so far.
 * @throws Error before the first prompt runs for a template variable without a column, an empty
 *   filled-in prompt or future, or an unknown metric; a prompt that fails later (too long for the
 *   context, a future that does not tokenize) becomes a row with `error` and the batch goes on.
 */
export async function runBatch(engine: Engine, req: BatchRequest, onRow?: (r: BatchRow) => void, onProgress?: (p: BatchProgress) => void, signal?: AbortSignal): Promise<BatchResult> {
  const prompts: BatchPrompt[] = expandStudy(req.template, req.values);
  const metrics = req.metrics ?? [...BATCH_METRICS];
  for (const m of metrics) if (!(BATCH_METRICS as readonly string[]).includes(m)) throw new Error(`unknown metric "${m}" (known: ${BATCH_METRICS.join(', ')})`);
  const visibleThreshold = req.visibleThreshold ?? 1;
  const sinkEps = req.sinkEps ?? 0.3;
  const rows: BatchRow[] = [];
  let cancelled = false;
  for (const p of prompts) {
    await new Promise((r) => setTimeout(r, 0)); // lets a cancel message in between prompts (worker)
    if (signal?.aborted) { cancelled = true; break; }
    const row: BatchRow = { index: p.index, vars: p.vars, prompt: p.prompt, good: p.good, bad: p.bad, nTokens: 0, metrics: {} };
    try {
      const input = { prompt: p.prompt, chatTemplate: req.chatTemplate };
      row.nTokens = engine.encodePrompt(input).length;
      const interventions = req.interventions ? await req.interventions({ ...input, nPrompt: row.nTokens }) : [];
      const a = await engine.analyse({ ...input, good: { text: p.good }, bad: { text: p.bad }, interventions, sinkEps });
      const all = metricsOf(a, visibleThreshold);
      row.metrics = Object.fromEntries(metrics.map((m) => [m, all[m]]));
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
