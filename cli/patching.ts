/**
 * The runner's `patch` subcommand: the activation-patching grid of workers/engine/studies/patching.ts
 * as one JSON object (the same numbers the Patching view draws).
 */
import type { Engine } from '../workers/engine/engine';
import { PATCH_HOOKS, patchingGrid, type PatchDirection, type PatchHook, type PatchMetric } from '../workers/engine/studies/patching';
import { patchJson } from '../workers/engine/studies/report_json';
import { checkRecoveryDenominator } from '../workers/engine/analysis/recovery_denominator';
import { bool, num, oneOf, text, type Values } from './flags';
import { atpCommand } from './attribute';
import { BAD, CHAT_TEMPLATE, GOOD, PROGRESS } from './shared_flags';

export const CLEAN = text().required().describe('the clean prompt');
export const CORRUPT = text().required().describe('the corrupted prompt (as many tokens as the clean one)');

export const PATCH_FLAGS = {
  clean: CLEAN, corrupt: CORRUPT, good: GOOD.required(), bad: BAD.required(),
  hook: oneOf(Object.keys(PATCH_HOOKS) as PatchHook[]).required().describe('the activation patched'),
  direction: oneOf<PatchDirection>(['denoise', 'noise']).default('denoise').describe('clean into corrupt (denoise) or corrupt into clean (noise)'),
  metric: oneOf<PatchMetric>(['final', 'sequence']).default('final').describe('the margin recovered'),
  method: oneOf(['exact', 'atp']).default('exact').describe('exact patched runs, or attribution patching (two forwards, one backward: the linear estimate)'),
  'compare-exact': bool().default(false).describe('atp: also run the exact grid, print recovery, rank_correlation and the cells that disagree'),
  threshold: num({ min: 0 }).default(0.1).describe('atp with --compare-exact: |atp − recovery| above which a cell is listed'),
  'atp-star': bool().default(false).describe('atp on resid_pre: AtP*\'s attention-saturation correction (the block\'s attention recomputed for the patched query, key and value)'),
  progress: PROGRESS, 'chat-template': CHAT_TEMPLATE,
};
export type PatchFlags = Values<typeof PATCH_FLAGS>;

export const PATCHING_ABOUT = `patch prints {clean_margin, corrupt_margin, recovery: [n_layers][n_tokens] (z: [n_layers][n_heads]),
layer_recovery: [n_layers] (every position / head of the layer at once), patched_margin, tokens};
recovery r = (Δ_patched − Δ_corrupt)/(Δ_clean − Δ_corrupt); the prompts need equal token lengths.
With --method atp: {atp: [n_layers][n_cols] (normalised like recovery), atp_nats, clean_margin, corrupt_margin}, and with
--compare-exact true also recovery, rank_correlation (Spearman) and disagreements [{layer, col, atp, exact}]; --atp-star true
applies AtP*'s attention-saturation correction to the resid_pre grid (correction: "qk").`;

/** --method atp takes the final metric only; --compare-exact, --threshold and --atp-star (resid_pre) are atp's. */
export function checkPatch(f: PatchFlags, g: { given: (n: string) => boolean }): void {
  if (f.method !== 'atp' && (g.given('compare-exact') || g.given('threshold') || g.given('atp-star'))) throw new Error('--compare-exact, --threshold and --atp-star are for --method atp');
  if (f['atp-star'] && f.hook !== 'resid_pre') throw new Error(`--atp-star corrects the resid_pre grid (a patch there moves its own block's queries and keys), not --hook ${f.hook}`);
  if (f.method === 'atp' && f.metric !== 'final') throw new Error('--method atp estimates the final margin only: drop --metric sequence');
}

/**
 * `branchpoint patch`: the patching grid as JSON. Progress goes to stderr with --progress true, and
 * so does a warning when |Δ_clean − Δ_corrupt| is too small for r to mean anything (recovery_denominator.ts).
 */
export async function patchCommand(engine: Engine, f: PatchFlags): Promise<unknown> {
  if (f.method === 'atp') return atpCommand(engine, f);
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
