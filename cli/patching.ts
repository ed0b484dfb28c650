/**
 * The runner's `patch` subcommand: the activation-patching grid of workers/engine/studies/patching.ts
 * as one JSON object (the same numbers the Patching view draws).
 */
import type { Engine } from '../workers/engine/engine';
import { PATCH_HOOKS, patchingGrid, type PatchDirection, type PatchHook, type PatchMetric } from '../workers/engine/studies/patching';
import { patchJson } from '../workers/engine/studies/report_json';
import { checkRecoveryDenominator } from '../workers/engine/analysis/recovery_denominator';
import { oneOf, text, type Values } from './flags';
import { BAD, CHAT_TEMPLATE, GOOD, PROGRESS } from './shared_flags';

export const CLEAN = text().required().describe('the clean prompt');
export const CORRUPT = text().required().describe('the corrupted prompt (as many tokens as the clean one)');

export const PATCH_FLAGS = {
  clean: CLEAN, corrupt: CORRUPT, good: GOOD.required(), bad: BAD.required(),
  hook: oneOf(Object.keys(PATCH_HOOKS) as PatchHook[]).required().describe('the activation patched'),
  direction: oneOf<PatchDirection>(['denoise', 'noise']).default('denoise').describe('clean into corrupt (denoise) or corrupt into clean (noise)'),
  metric: oneOf<PatchMetric>(['final', 'sequence']).default('final').describe('the margin recovered'),
  progress: PROGRESS, 'chat-template': CHAT_TEMPLATE,
};
export type PatchFlags = Values<typeof PATCH_FLAGS>;

export const PATCHING_ABOUT = `patch prints {clean_margin, corrupt_margin, recovery: [n_layers][n_tokens] (z: [n_layers][n_heads]),
layer_recovery: [n_layers] (every position / head of the layer at once), patched_margin, tokens};
recovery r = (Δ_patched − Δ_corrupt)/(Δ_clean − Δ_corrupt); the prompts need equal token lengths.`;

/**
 * `branchpoint patch`: the patching grid as JSON. Progress goes to stderr with --progress true, and
 * so does a warning when |Δ_clean − Δ_corrupt| is too small for r to mean anything (recovery_denominator.ts).
 */
export async function patchCommand(engine: Engine, f: PatchFlags): Promise<unknown> {
  const showProgress = f.progress;
  const r = await patchingGrid(engine, {
    clean: f.clean, corrupt: f.corrupt, chatTemplate: f['chat-template'],
    good: { text: f.good }, bad: { text: f.bad }, hook: f.hook, direction: f.direction, metric: f.metric,
  }, showProgress ? (p) => process.stderr.write(`\r${p.done}/${p.total}`) : undefined);
  if (showProgress) process.stderr.write('\n');
  const d = checkRecoveryDenominator(r.cleanMargin, r.corruptMargin);
  if (d.message) process.stderr.write(`warning: ${d.message}\n`);
  return patchJson(r);
}
