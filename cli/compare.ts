/**
 * The runner's `compare` subcommand: model A (--model) against model B (--model-b) on one prompt
 * (workers/engine/studies/compare.ts compareModels) as one JSON object.
 */
import * as fs from 'node:fs';
import { Engine } from '../workers/engine/engine';
import { NodeFiles } from '../workers/engine/io/node_files';
import { HubFiles, parseRepoRef } from '../workers/engine/io/hub_files';
import type { ModelFiles } from '../workers/engine/io/model_files';
import { compareModels, type ModelComparison } from '../workers/engine/studies/compare';
import type { CrossPatchResult } from '../workers/engine/studies/cross_patch';
import { PATCH_HOOKS, type PatchHook } from '../workers/engine/studies/patching';
import { gridRows } from '../workers/engine/studies/report_json';
import { bool, custom, num, text, type Values } from './flags';
import { BAD, CHAT_TEMPLATE, COMMON_FLAGS, GOOD, PROGRESS, PROMPT, SET } from './shared_flags';
import { transferJob, transferJson } from '../workers/engine/studies/transfer_job';
import { readLabelledSet } from './probe';
import { cpuBackendFromArgs } from './threads';

/** The --hooks list: a comma-separated subset of the patching hooks. @throws Error naming an unknown hook and the known ones. */
function parseHooks(v: string): PatchHook[] {
  const known = Object.keys(PATCH_HOOKS);
  const hooks = v.split(',').map((h) => h.trim());
  const bad = hooks.find((h) => !known.includes(h));
  if (bad !== undefined) throw new Error(`--hooks "${v}": ${bad === '' ? 'an empty item' : `${bad} is not a patching hook`}; use a comma-separated list of ${known.join(', ')}`);
  return hooks as PatchHook[];
}

/** --model-b: model B beside --model. */
export const MODEL_B = text('DIR|ID', { nonEmpty: true });

export const COMPARE_FLAGS = {
  'model-b': MODEL_B.required().describe('model B: a folder or a Hub id org/name[@revision] (same tokenizer, architecture and shapes as --model)'),
  prompt: PROMPT, good: GOOD.required(), bad: BAD.required(),
  hooks: custom(parseHooks, `a comma-separated list of ${Object.keys(PATCH_HOOKS).join(', ')}`, 'H,H…', 'resid_pre,mlp_out', ['', 'resid_pre,,z', 'nope'])
    .default(Object.keys(PATCH_HOOKS) as PatchHook[]).describe('the hooks cross-model patching runs at'),
  positions: bool().default(false).describe('also patch each (layer, position) cell: cross_patch_positions'),
  'caa-set': SET.describe('steering transfer: a labelled set as in probe (CAA vector positive − negative at the last token, built on both models per layer)'),
  alpha: num().describe('steering transfer: α each CAA vector is added with at its layer (default 4; with --caa-set)'),
  progress: PROGRESS, 'chat-template': CHAT_TEMPLATE,
};
export type CompareFlags = Values<typeof COMPARE_FLAGS>;
type CommonValues = Values<typeof COMMON_FLAGS>;

export const COMPARE_ABOUT = `compare prints {weight_diff: {module: [n_layers]; embed, unembed, final_norm: numbers} (‖W_B − W_A‖_F/‖W_A‖_F,
0 where equal), lens_margin_a, lens_margin_b, lens_margin_diff (B − A), resid_rel_diff, resid_cosine:
[n_layers+1][n_tokens], sink_alpha0_a, sink_alpha0_b, sink_dalpha0, sink_js: [n_layers][n_heads], sink_rate_a,
sink_rate_b, cross_patch: {hook: [n_layers]} (B's activation patched into A at every position of the layer;
z: [n_layers][n_heads]), cross_patch_reverse (A into B), margin_a, margin_b, and with --positions
cross_patch_positions (+ _reverse): {hook: [n_layers][n_tokens]}}; recovery r = (Δ_patched − Δ_A)/(Δ_B − Δ_A)
in both directions. A and B need the same tokenizer, architecture and shapes (else: what differs).
Mixture-of-experts pairs also print route_divergence [{layer, jaccard [n_tokens], js [n_tokens]}] per sparse layer
(overlap of the experts A and B chose, Jensen-Shannon divergence in nats of their router distributions).
With --caa-set FILE (steering transfer): caa_cosine, caa_norm_ratio: [n_layers] (cos and ‖v_B‖/‖v_A‖ of the CAA vectors
of the set built on A and on B at blocks.{l}.hook_resid_post), steer_margin: {a_by_a, b_by_a, b_by_b, a_by_b}: [n_layers]
(final Δ of model A / B with A's / B's vector added at that layer, α = --alpha, all positions).`;

/** --alpha only with --caa-set; the set file readable, with both classes. @throws Error otherwise. */
export function checkCompare(f: CompareFlags): void {
  if (f.alpha !== undefined && f['caa-set'] === undefined) throw new Error('--alpha without --caa-set: it sets the steering transfer, which needs the contrastive set');
  const file = f['caa-set'];
  if (file !== undefined && !fs.existsSync(file)) throw new Error(`--caa-set ${file}: no such file`);
  if (file !== undefined) readLabelledSet(file);
}

/** --model-b as a folder, or a Hub id org/name[@revision] (--endpoint / $HF_ENDPOINT, $HF_TOKEN). @throws Error for neither. */
export function openModelB(ref: string, endpoint: string | undefined): ModelFiles {
  if (fs.existsSync(ref)) return new NodeFiles(ref);
  const hub = parseRepoRef(ref);
  if (!hub) throw new Error(`--model-b ${ref}: no such folder, and not a Hub id (org/name[@revision])`);
  return new HubFiles(hub.repo, { revision: hub.revision, endpoint: endpoint ?? (process.env.HF_ENDPOINT || undefined), token: process.env.HF_TOKEN });
}

const round = (x: number) => (Number.isFinite(x) ? x : null);
const rows = (flat: ArrayLike<number>, n: number) => gridRows(Float64Array.from(flat), n).map((r) => r.map(round));

/** The JSON object of a comparison (the shapes COMPARE_USAGE names). */
export function compareJson(c: ModelComparison, positions: boolean): Record<string, unknown> {
  const s = c.sides, T = s.a.ids.length, H = s.a.nHeads;
  const weight: Record<string, unknown> = {};
  for (const [m, v] of c.weights.modules) weight[m] = Array.from(v);
  for (const [m, v] of c.weights.globals) weight[m] = v;
  const layer = (g: Map<PatchHook, CrossPatchResult>) => Object.fromEntries([...g].map(([h, r]) => [h, h === 'z' ? rows(r.recovery, r.nCols) : Array.from(r.layerRecovery, round)]));
  const cells = (g: Map<PatchHook, CrossPatchResult>) => Object.fromEntries([...g].filter(([h]) => h !== 'z').map(([h, r]) => [h, rows(r.recovery, r.nCols)]));
  const al = s.aligned!;
  return {
    label_a: s.labelA, label_b: s.labelB, tokens: s.a.tokens, ids: s.a.ids,
    weight_diff: weight,
    lens_margin_a: rows(s.a.lensMargin, T), lens_margin_b: rows(s.b.lensMargin, T), lens_margin_diff: rows(al.lensMarginDiff, T),
    resid_rel_diff: rows(al.residRelDiff, T), resid_cosine: rows(al.residCosine, T),
    sink_alpha0_a: rows(s.a.sinks.alpha0, H), sink_alpha0_b: rows(s.b.sinks.alpha0, H),
    sink_dalpha0: rows(al.sinkDAlpha0, H), sink_js: rows(al.sinkJs, H),
    sink_rate_a: Array.from(s.a.sinks.sinkRate), sink_rate_b: Array.from(s.b.sinks.sinkRate),
    margin_a: s.a.finalMargin[T - 1], margin_b: s.b.finalMargin[T - 1],
    recovery_denominator: c.denominator.denominator,
    cross_patch: layer(c.crossPatch), cross_patch_reverse: layer(c.crossPatchReverse),
    ...(c.routeDivergence ? { route_divergence: c.routeDivergence.map((x) => ({ layer: x.layer, jaccard: Array.from(x.jaccard), js: Array.from(x.js) })) } : {}),
    ...(positions ? { cross_patch_positions: cells(c.crossPatch), cross_patch_reverse_positions: cells(c.crossPatchReverse) } : {}),
  };
}

/**
 * `branchpoint compare`: loads model B beside A on its own CPU backend, refuses a mismatched pair
 * (ModelMismatchError: what differs), prints the comparison. Progress goes to stderr with
 * --progress true, and so does a warning when |Δ_B − Δ_A| is too small for r to mean anything.
 */
export async function compareCommand(engine: Engine, f: CompareFlags & CommonValues): Promise<unknown> {
  const files = openModelB(f['model-b'], f.endpoint);
  const b = await Engine.load(files, await cpuBackendFromArgs(f.threads), undefined, { weightDtype: f.weights });
  try {
    const positions = f.positions;
    const c = await compareModels(engine, b, {
      prompt: f.prompt, chatTemplate: f['chat-template'], good: { text: f.good }, bad: { text: f.bad },
      hooks: f.hooks, positions,
    }, f.progress ? (p) => process.stderr.write(`\r${p.done}/${p.total}`) : undefined);
    if (f.progress) process.stderr.write('\n');
    if (c.denominator.message) process.stderr.write(`warning: ${c.denominator.message.replace(/Δ_clean − Δ_corrupt/g, 'Δ_B − Δ_A')}\n`);
    const out = compareJson(c, positions);
    if (f['caa-set'] === undefined) return out;
    const set = readLabelledSet(f['caa-set']);
    const t = await transferJob(engine, b, { prompt: f.prompt, chatTemplate: f['chat-template'], good: { text: f.good }, bad: { text: f.bad }, positive: set.positive, negative: set.negative, alpha: f.alpha });
    return { ...out, ...transferJson(t) };
  } finally {
    b.dispose();
  }
}
