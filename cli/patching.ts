/**
 * The runner's `patch` subcommand: the activation-patching grid of workers/engine/studies/patching.ts
 * as one JSON object (the same numbers the Patching view draws).
 */
import type { Engine } from '../workers/engine/engine';
import { PATCH_HOOKS, patchingGrid, type PatchDirection, type PatchHook, type PatchMetric } from '../workers/engine/studies/patching';
import { patchJson } from '../workers/engine/studies/report_json';
import { checkRecoveryDenominator } from '../workers/engine/analysis/recovery_denominator';
import type { Args } from './args';

export const PATCHING_USAGE = `  branchpoint patch    --model DIR --clean TEXT --corrupt TEXT --good TEXT --bad TEXT
                       --hook resid_pre|attn_out|mlp_out|z [--direction denoise|noise] [--metric final|sequence]
patch prints {clean_margin, corrupt_margin, recovery: [n_layers][n_tokens] (z: [n_layers][n_heads]),
layer_recovery: [n_layers] (every position / head of the layer at once), patched_margin, tokens};
recovery r = (Δ_patched − Δ_corrupt)/(Δ_clean − Δ_corrupt); the prompts need equal token lengths.`;

/** Reads a flag restricted to a list of values. @throws Error naming the allowed values. */
export function oneOf<T extends string>(a: Args, key: string, allowed: readonly T[], fallback?: T): T {
  const v = a.flags.get(key) ?? fallback;
  if (v === undefined) throw new Error(`--${key} is required: ${allowed.join(' | ')}`);
  if (!(allowed as readonly string[]).includes(v)) throw new Error(`--${key} ${v}: use ${allowed.join(' | ')}`);
  return v as T;
}

/**
 * `branchpoint patch`: the patching grid as JSON. Progress goes to stderr with --progress true, and
 * so does a warning when |Δ_clean − Δ_corrupt| is too small for r to mean anything (recovery_denominator.ts).
 */
export async function patchCommand(engine: Engine, a: Args, required: (key: string) => string): Promise<unknown> {
  const hook = oneOf<PatchHook>(a, 'hook', Object.keys(PATCH_HOOKS) as PatchHook[]);
  const showProgress = a.flags.get('progress') === 'true';
  const r = await patchingGrid(engine, {
    clean: required('clean'), corrupt: required('corrupt'), chatTemplate: a.flags.get('chat-template') === 'true',
    good: { text: required('good') }, bad: { text: required('bad') }, hook,
    direction: oneOf<PatchDirection>(a, 'direction', ['denoise', 'noise'], 'denoise'),
    metric: oneOf<PatchMetric>(a, 'metric', ['final', 'sequence'], 'final'),
  }, showProgress ? (p) => process.stderr.write(`\r${p.done}/${p.total}`) : undefined);
  if (showProgress) process.stderr.write('\n');
  const d = checkRecoveryDenominator(r.cleanMargin, r.corruptMargin);
  if (d.message) process.stderr.write(`warning: ${d.message}\n`);
  return patchJson(r);
}
