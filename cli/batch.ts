/**
 * The runner's `batch` subcommand: a prompt template over a table of values (batch/), one JSON line
 * per prompt and a last line with the aggregate (means with 95 % bootstrap intervals, overall and
 * per value of the study's x variable).
 */
import * as fs from 'node:fs';
import type { Engine } from '../workers/engine/engine';
import { batchMetrics, flatRow, runBatch } from '../workers/engine/studies/batch/batch';
import { summarize } from '../workers/engine/studies/batch/aggregate';
import { BATCH_METRICS, METRIC_DOCS, parseMetrics } from '../workers/engine/studies/batch/metrics';
import { parseTemplate, promptListTemplate } from '../workers/engine/studies/batch/template';
import { PATCH_HOOKS, type PatchHook } from '../workers/engine/studies/patching';
import { formatOfName, parseValues } from '../workers/engine/studies/batch/values';
import type { Args } from './args';
import { interventionsFromArgs, loadVectorFile } from './steering';

export const BATCH_USAGE = `  branchpoint batch    --model DIR --values FILE.csv|.tsv|.jsonl|.json [--template FILE.json]
                       [--metric ${BATCH_METRICS.join(',')}|all] [--by VAR]
                       [--visible-threshold 1] [--eps 0.3] [--intervention JSON]
                       [--probe-vector FILE [--probe-hook HOOK]] [--patch-cell HOOK:LAYER:POSITION]
    template: {"prompt": "…{var}…", "good": " {a}", "bad": " {b}", "corrupt": "…", "x": "n"}; without
    one, the values table lists prompts with their own futures (columns prompt, good, bad, corrupt).
    --probe-vector adds probe_score (the file's hook unless --probe-hook); --patch-cell adds
    patch_recovery, e.g. resid_pre:2:-1 (hook ${Object.keys(PATCH_HOOKS).join('|')}, layer, position or
    head; negative counts from the end), patching each prompt into its "corrupt" variant. Prints one JSON line per
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
  const template = tf ? parseTemplate(readText(tf, 'template')) : promptListTemplate(values.columns);
  const probe = probeFlags(a), patchCell = a.flags.has('patch-cell') ? parsePatchCell(a.flags.get('patch-cell')!) : undefined;
  const metrics = batchMetrics({ metrics: a.flags.has('metric') ? parseMetrics(a.flags.get('metric')!) : undefined, probe, patchCell });
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
    probe, patchCell,
  }, (row) => write(JSON.stringify(flatRow(row, values.columns, metrics))));
  write(JSON.stringify({ aggregate: summarize(r.rows, metrics, a.flags.get('by') ?? template.x ?? null) }));
}

/** --probe-vector FILE [--probe-hook HOOK]: the probe_score direction. @throws Error for a file without a hook and no --probe-hook. */
function probeFlags(a: Args): { hook: string; vector: Float32Array } | undefined {
  const file = a.flags.get('probe-vector');
  if (!file) {
    if (a.flags.has('probe-hook')) throw new Error('--probe-hook without --probe-vector: give the direction (.npy, .safetensors or .json)');
    return undefined;
  }
  const v = loadVectorFile(file);
  const hook = a.flags.get('probe-hook') ?? v.hook;
  if (!hook) throw new Error(`--probe-vector ${file} names no hook: add --probe-hook, e.g. blocks.3.hook_resid_post`);
  return { hook, vector: v.vector };
}

/** "resid_pre:2:-1" → the patch_recovery cell. @throws Error for anything else. */
export function parsePatchCell(text: string): { hook: PatchHook; layer: number; position: number } {
  const [hook, layer, position, ...rest] = text.split(':');
  if (rest.length || !(hook in PATCH_HOOKS) || !/^\d+$/.test(layer ?? '') || !/^-?\d+$/.test(position ?? '')) {
    throw new Error(`--patch-cell ${text}: write HOOK:LAYER:POSITION with HOOK one of ${Object.keys(PATCH_HOOKS).join(', ')} (e.g. resid_pre:2:-1; position −1 = the last token, or a head for z)`);
  }
  return { hook: hook as PatchHook, layer: Number(layer), position: Number(position) };
}
