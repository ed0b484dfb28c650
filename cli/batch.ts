/**
 * The runner's `batch` subcommand: a prompt template over a table of values (batch/), one JSON line
 * per prompt and a last line with the aggregate (means with 95 % bootstrap intervals, overall and
 * per value of the study's x variable).
 */
import * as fs from 'node:fs';
import type { Engine } from '../workers/engine/engine';
import { flatRow, runBatch } from '../workers/engine/batch/batch';
import { summarize } from '../workers/engine/batch/aggregate';
import { BATCH_METRICS, METRIC_DOCS, parseMetrics } from '../workers/engine/batch/metrics';
import { parseTemplate, PROMPT_LIST_TEMPLATE } from '../workers/engine/batch/template';
import { formatOfName, parseValues } from '../workers/engine/batch/values';
import type { Args } from './args';
import { interventionsFromArgs } from './steering';

export const BATCH_USAGE = `  branchpoint batch    --model DIR --values FILE.csv|.tsv|.jsonl|.json [--template FILE.json]
                       [--metric ${BATCH_METRICS.join(',')}|all] [--by VAR]
                       [--visible-threshold 1] [--eps 0.3] [--intervention JSON]
    template: {"prompt": "…{var}…", "good": " {a}", "bad": " {b}", "x": "n"}; without one, the values
    table lists prompts with their own futures (columns prompt, good, bad). Prints one JSON line per
    prompt (index, the variables, prompt, good, bad, n_tokens, the metrics, error) and then
    {"aggregate": {overall, by, groups}}: mean, lo, hi (95 % percentile bootstrap, 2000 resamples, seed 0)
    per metric, grouped by --by (default the template's x). Metrics:
${BATCH_METRICS.map((m) => `      ${m}: ${METRIC_DOCS[m]}`).join('\n')}`;

function readText(file: string, what: string): string {
  if (!fs.existsSync(file)) throw new Error(`${what} file ${file} does not exist`);
  return fs.readFileSync(file, 'utf8');
}

/** Runs `batch`, writing each row as it finishes. @throws Error for bad files, templates or flags. */
export async function batchCommand(engine: Engine, a: Args, write: (line: string) => void): Promise<void> {
  const valuesFile = a.flags.get('values');
  if (!valuesFile) throw new Error('--values is required: a CSV, TSV, JSONL or JSON table, one row per prompt');
  const values = parseValues(readText(valuesFile, 'values'), formatOfName(valuesFile) ?? undefined);
  const tf = a.flags.get('template');
  const template = tf ? parseTemplate(readText(tf, 'template')) : PROMPT_LIST_TEMPLATE;
  const metrics = parseMetrics(a.flags.get('metric') ?? 'all');
  const num = (key: string, dflt: number) => {
    const v = Number(a.flags.get(key) ?? dflt);
    if (!Number.isFinite(v)) throw new Error(`--${key} must be a number`);
    return v;
  };
  const chatTemplate = a.flags.get('chat-template') === 'true';
  const r = await runBatch(engine, {
    template, values, metrics, chatTemplate,
    visibleThreshold: num('visible-threshold', 1), sinkEps: num('eps', 0.3),
    interventions: a.repeated.get('intervention')?.length ? (p) => interventionsFromArgs(engine, a, { nPrompt: p.nPrompt, chatTemplate }) : undefined,
  }, (row) => write(JSON.stringify(flatRow(row, values.columns, metrics))));
  write(JSON.stringify({ aggregate: summarize(r.rows, metrics, a.flags.get('by') ?? template.x ?? null) }));
}
