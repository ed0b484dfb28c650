/**
 * The runner's `batch` subcommand: a prompt template over a table of values (batch/), one JSON line
 * per prompt and a last line with the aggregate (means with 95 % bootstrap intervals, overall and
 * per value of the study's x variable).
 */
import * as fs from 'node:fs';
import type { Engine } from '../workers/engine/engine';
import { batchMetrics, flatRow, runBatch } from '../workers/engine/studies/batch/batch';
import { summarize } from '../workers/engine/studies/batch/aggregate';
import { BATCH_METRICS, METRIC_DOCS, parseMetrics, type BatchMetric } from '../workers/engine/studies/batch/metrics';
import { parseTemplate, promptListTemplate } from '../workers/engine/studies/batch/template';
import { PATCH_HOOKS, type PatchHook } from '../workers/engine/studies/patching';
import { formatOfName, parseValues } from '../workers/engine/studies/batch/values';
import type { ModelSpec } from '../workers/engine/arch/spec';
import { custom, num, text, type Values } from './flags';
import { CHAT_TEMPLATE, EPS, INTERVENTION } from './shared_flags';
import { interventionsFromArgs, loadVectorFile } from './steering';
import { runShapeOf } from '../workers/engine/studies/resolve_interventions';

export const BATCH_FLAGS = {
  values: text('FILE', { nonEmpty: true }).required().describe('a CSV, TSV, JSONL or JSON table, one row per prompt'),
  template: text('FILE.json', { nonEmpty: true }).describe('the prompt template (default: the table lists prompts)'),
  metric: custom(parseMetricFlag, `metric names or all`, `${BATCH_METRICS.join(',')}|all`, 'final_margin', ['final_margin,,sink_rate', 'margin']).describe('the metrics'),
  by: text('VAR', { nonEmpty: true }).describe("group the aggregate by this variable (default the template's x)"),
  'visible-threshold': num({ min: 0 }).default(1).describe('|Δ| in nats for lens_visible_layer'),
  eps: EPS,
  intervention: INTERVENTION,
  'probe-vector': text('FILE', { nonEmpty: true }).describe('a direction: adds probe_score'),
  'probe-hook': text('HOOK', { nonEmpty: true }).describe("the probe's hook (default the file's)"),
  'patch-cell': custom(parsePatchCell, 'HOOK:LAYER:POSITION', 'HOOK:LAYER:POSITION', 'resid_pre:1:-1', ['resid_pre:99:0', 'resid_pre:-1:0', 'resid_pre:1', 'x:1:1', 'resid_pre:1:1:1']).describe('adds patch_recovery'),
  'chat-template': CHAT_TEMPLATE,
};
export type BatchFlags = Values<typeof BATCH_FLAGS>;

/** --metric: comma-separated metric names (no empty items) or "all". @throws Error naming the flag and the value. */
function parseMetricFlag(s: string): BatchMetric[] {
  try {
    if (s.split(',').some((p) => p.trim() === '')) throw new Error(`an empty item (known: ${BATCH_METRICS.join(', ')})`);
    return parseMetrics(s);
  } catch (e) {
    throw new Error(`--metric "${s}": ${(e as Error).message}`);
  }
}

/** --probe-hook needs --probe-vector. @throws Error otherwise. */
export function checkBatch(f: BatchFlags): void {
  if (f['probe-hook'] !== undefined && f['probe-vector'] === undefined) throw new Error('--probe-hook without --probe-vector: give the direction (.npy, .safetensors or .json)');
}

/** --patch-cell's layer (and head, for z) inside the model. @throws Error naming the flag. */
export function checkPatchCell(f: BatchFlags, spec: ModelSpec): void {
  const c = f['patch-cell'];
  if (!c) return;
  if (c.layer >= spec.nLayers) throw new Error(`--patch-cell ${c.hook}:${c.layer}:${c.position}: layer ${c.layer} is out of range; this model has ${spec.nLayers} layers (0..${spec.nLayers - 1})`);
  if (c.hook === 'z' && (c.position >= spec.nHeads || c.position < -spec.nHeads)) throw new Error(`--patch-cell ${c.hook}:${c.layer}:${c.position}: head ${c.position} is out of range; this model has ${spec.nHeads} heads`);
}

export const BATCH_ABOUT = `template: {"prompt": "…{var}…", "good": " {a}", "bad": " {b}", "corrupt": "…", "x": "n"}; without
one, the values table lists prompts with their own futures (columns prompt, good, bad, corrupt). A future may be
{"mode": "text"|"ids"|"tool" (or a {var}), "value": "{var}"}: a tool call's value is JSON {"name", "arguments"}
naming a tool of the template's "tools"; "system" (a template) and "tools" render each prompt as a chat turn, and
"chat_template": true runs it with the chat template whatever --chat-template says (public/studies/agent_actions.*);
a model whose chat template cannot render them is refused before the first prompt. "enable_thinking": true|false
is passed to the template (Qwen3: false writes the empty think block after each prompt).
--probe-vector adds probe_score (the file's hook unless --probe-hook); --patch-cell adds
patch_recovery, e.g. resid_pre:2:-1 (hook ${Object.keys(PATCH_HOOKS).join('|')}, layer, position or
head; negative counts from the end), patching each prompt into its "corrupt" variant. Prints one JSON line per
prompt (index, the variables, prompt, good, bad, n_tokens, the metrics, error) and then
{"aggregate": {overall, by, groups}}: mean, lo, hi (95 % percentile bootstrap, 2000 resamples, seed 0)
per metric, grouped by --by (default the template's x). Metrics:
${BATCH_METRICS.map((m) => `  ${m}: ${METRIC_DOCS[m]}`).join('\n')}`;

function readText(file: string, what: string): string {
  if (!fs.existsSync(file)) throw new Error(`${what} file ${file} does not exist`);
  return fs.readFileSync(file, 'utf8');
}

/** Runs `batch`, writing each row as it finishes. @throws Error for bad files, templates or flags. */
export async function batchCommand(engine: Engine, f: BatchFlags, write: (line: string) => void): Promise<void> {
  checkBatch(f);
  const valuesFile = f.values;
  const values = parseValues(readText(valuesFile, 'values'), formatOfName(valuesFile) ?? undefined);
  const tf = f.template;
  const template = tf ? parseTemplate(readText(tf, 'template')) : promptListTemplate(values.columns);
  const probe = probeFlags(f), patchCell = f['patch-cell'];
  const metrics = batchMetrics({ metrics: f.metric, probe, patchCell });
  const chatTemplate = f['chat-template'];
  const r = await runBatch(engine, {
    template, values, metrics, chatTemplate,
    visibleThreshold: f['visible-threshold'], sinkEps: f.eps,
    interventions: f.intervention.length ? (p) => interventionsFromArgs(engine, f.intervention, runShapeOf(engine, p)) : undefined,
    probe, patchCell,
  }, (row) => write(JSON.stringify(flatRow(row, values.columns, metrics))));
  write(JSON.stringify({ aggregate: summarize(r.rows, metrics, f.by ?? template.x ?? null) }));
}

/** --probe-vector FILE [--probe-hook HOOK]: the probe_score direction. @throws Error for a file without a hook and no --probe-hook. */
function probeFlags(f: BatchFlags): { hook: string; vector: Float32Array } | undefined {
  const file = f['probe-vector'];
  if (!file) return undefined;
  const v = loadVectorFile(file);
  const hook = f['probe-hook'] ?? v.hook;
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
