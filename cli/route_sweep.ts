/**
 * The runner's `route-sweep` subcommand: N seeded random masks of m routers of a mixture-of-experts
 * model and the rise of the target future's log-prob under each (workers/engine/studies/route_sweep.ts,
 * after RoSais, arXiv 2602.08621), as one JSON object.
 */
import type { Engine } from '../workers/engine/engine';
import type { ModelSpec } from '../workers/engine/arch/spec';
import type { Sae } from '../workers/engine/sae/sae';
import { routeSweep, SWEEP_QUANTILES } from '../workers/engine/studies/route_sweep';
import type { PatchMetric } from '../workers/engine/studies/patching';
import { int, oneOf, type Values } from './flags';
import { BAD, CHAT_TEMPLATE, GOOD, INTERVENTION, PROGRESS, PROMPT, SEED } from './shared_flags';
import { interventionsFromArgs } from './steering';
import { atDecisionPoint, runShapeOf } from '../workers/engine/studies/resolve_interventions';

export const ROUTE_SWEEP_FLAGS = {
  prompt: PROMPT, good: GOOD.required(), bad: BAD.required(),
  masks: int({ min: 1, max: 100_000 }).required().describe('N: the number of random masks'),
  'mask-size': int({ min: 1 }, 'M').required().describe('m: routers (sparse layers) per mask'),
  seed: SEED.describe('the masks\' seed'),
  target: oneOf(['bad', 'good'] as const).default('bad').describe('the future whose log-prob rise is measured'),
  metric: oneOf<PatchMetric>(['final', 'sequence']).default('final').describe('log p of the first tokens, or of the whole future'),
  'chat-template': CHAT_TEMPLATE, intervention: INTERVENTION, progress: PROGRESS,
};
export type RouteSweepFlags = Values<typeof ROUTE_SWEEP_FLAGS>;

export const ROUTE_SWEEP_ABOUT = `route-sweep (mixture-of-experts models; RoSais, arXiv 2602.08621) draws N masks, each of m distinct
routers (a router = one sparse layer's routing) with a random Φ ∈ {0, −∞}^n_experts on its router logits at
every position (each expert banned with probability ½, at least one banned and k left), and prints target,
log_prob (log p(target) unmasked), margin, masks [N][m] {layer, experts (banned)}, rise [N] (log p(target)
masked − unmasked, nats), margin_change [N], worst_mask {index, routers, rise} (the largest rise) and
quantiles [{q, rise}] of rise at q = 0, 0.1, 0.25, 0.5, 0.75, 0.9, 1 (linear interpolation).`;

/** @throws Error for a dense model or a mask size above its sparse layers (before any forward pass). */
export function checkRouteSweep(f: RouteSweepFlags, spec: ModelSpec): void {
  if (!spec.moe) throw new Error(`${spec.modelType} is not a mixture-of-experts model: it has no routers to mask (route-sweep runs Mixtral, Qwen2-MoE, OLMoE)`);
  const n = spec.moe.sparse.filter(Boolean).length;
  if (f['mask-size'] > n) throw new Error(`--mask-size "${f['mask-size']}": this model has ${n} routers (sparse layers)`);
}

/** `branchpoint route-sweep`. */
export async function routeSweepCommand(engine: Engine, f: RouteSweepFlags, loadSae: (ref: string) => Promise<Sae>): Promise<unknown> {
  const { prompt, 'chat-template': chatTemplate } = f;
  const interventions = await interventionsFromArgs(engine, f.intervention, runShapeOf(engine, atDecisionPoint(engine, { prompt, chatTemplate }, { text: f.good }, { text: f.bad })), loadSae);
  const r = await routeSweep(engine, {
    prompt, chatTemplate, good: { text: f.good }, bad: { text: f.bad }, target: f.target, masks: f.masks, maskSize: f['mask-size'], seed: f.seed, metric: f.metric, interventions,
  }, f.progress ? (p) => process.stderr.write(`\r${p.done}/${p.total}`) : undefined);
  if (f.progress) process.stderr.write('\n');
  return {
    ids: r.ids, tokens: r.tokens, good: r.good, bad: r.bad, target: r.target, metric: r.metric, log_prob: r.logProb, margin: r.margin,
    masks: r.masks, rise: Array.from(r.rise), margin_change: Array.from(r.marginChange),
    worst_mask: { index: r.worst, routers: r.masks[r.worst], rise: r.rise[r.worst] },
    quantiles: SWEEP_QUANTILES.map((q, i) => ({ q, rise: r.quantiles[i] })),
  };
}
