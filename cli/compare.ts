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
import type { Args } from './args';
import { cpuBackendFromArgs } from './threads';
import { weightsFlag } from './weights';

export const COMPARE_USAGE = `  branchpoint compare  --model A --model-b B --prompt TEXT --good TEXT --bad TEXT
                       [--hooks resid_pre,attn_out,mlp_out,z] [--positions true]
compare prints {weight_diff: {module: [n_layers]; embed, unembed, final_norm: numbers} (‖W_B − W_A‖_F/‖W_A‖_F,
0 where equal), lens_margin_a, lens_margin_b, lens_margin_diff (B − A), resid_rel_diff, resid_cosine:
[n_layers+1][n_tokens], sink_alpha0_a, sink_alpha0_b, sink_dalpha0, sink_js: [n_layers][n_heads], sink_rate_a,
sink_rate_b, cross_patch: {hook: [n_layers]} (B's activation patched into A at every position of the layer;
z: [n_layers][n_heads]), cross_patch_reverse (A into B), margin_a, margin_b, and with --positions
cross_patch_positions (+ _reverse): {hook: [n_layers][n_tokens]}}; recovery r = (Δ_patched − Δ_A)/(Δ_B − Δ_A)
in both directions. A and B need the same tokenizer, architecture and shapes (else: what differs).`;

/** --model-b as a folder, or a Hub id org/name[@revision] (--endpoint / $HF_ENDPOINT, $HF_TOKEN). */
function openModelB(ref: string, a: Args): ModelFiles {
  if (fs.existsSync(ref)) return new NodeFiles(ref);
  const hub = parseRepoRef(ref);
  if (!hub) throw new Error(`--model-b ${ref}: no such folder, and not a Hub id (org/name[@revision])`);
  return new HubFiles(hub.repo, { revision: hub.revision, endpoint: a.flags.get('endpoint') ?? (process.env.HF_ENDPOINT || undefined), token: process.env.HF_TOKEN });
}

/** The --hooks list (default all four). @throws Error naming an unknown hook and the known ones. */
function hooksFlag(a: Args): PatchHook[] {
  const v = a.flags.get('hooks');
  if (v === undefined) return Object.keys(PATCH_HOOKS) as PatchHook[];
  const hooks = v.split(',').map((h) => h.trim()).filter((h) => h !== '');
  for (const h of hooks) if (!(h in PATCH_HOOKS)) throw new Error(`--hooks ${h}: use a comma-separated list of ${Object.keys(PATCH_HOOKS).join(', ')}`);
  if (hooks.length === 0) throw new Error(`--hooks is empty: use a comma-separated list of ${Object.keys(PATCH_HOOKS).join(', ')}`);
  return hooks as PatchHook[];
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
    ...(positions ? { cross_patch_positions: cells(c.crossPatch), cross_patch_reverse_positions: cells(c.crossPatchReverse) } : {}),
  };
}

/**
 * `branchpoint compare`: loads model B beside A on its own CPU backend, refuses a mismatched pair
 * (ModelMismatchError: what differs), prints the comparison. Progress goes to stderr with
 * --progress true, and so does a warning when |Δ_B − Δ_A| is too small for r to mean anything.
 */
export async function compareCommand(engine: Engine, a: Args, prompt: string, required: (key: string) => string): Promise<unknown> {
  const hooks = hooksFlag(a), good = required('good'), bad = required('bad');
  const files = openModelB(required('model-b'), a);
  const b = await Engine.load(files, await cpuBackendFromArgs(a), undefined, { weightDtype: weightsFlag(a) });
  try {
    const positions = a.flags.get('positions') === 'true';
    const showProgress = a.flags.get('progress') === 'true';
    const c = await compareModels(engine, b, {
      prompt, chatTemplate: a.flags.get('chat-template') === 'true', good: { text: good }, bad: { text: bad },
      hooks, positions,
    }, showProgress ? (p) => process.stderr.write(`\r${p.done}/${p.total}`) : undefined);
    if (showProgress) process.stderr.write('\n');
    if (c.denominator.message) process.stderr.write(`warning: ${c.denominator.message.replace(/Δ_clean − Δ_corrupt/g, 'Δ_B − Δ_A')}\n`);
    return compareJson(c, positions);
  } finally {
    b.dispose();
  }
}
