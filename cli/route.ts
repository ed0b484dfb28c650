/**
 * The runner's `route` subcommand: a mixture-of-experts model's routing on one prompt and, with
 * --good/--bad, the route margin grid (workers/engine/studies/route.ts), as one JSON object.
 */
import type { Engine } from '../workers/engine/engine';
import type { Sae } from '../workers/engine/sae/sae';
import { routeStudy, type BanAt } from '../workers/engine/studies/route';
import type { PatchMetric } from '../workers/engine/studies/patching';
import { oneOf, text, type Values } from './flags';
import { BAD, CHAT_TEMPLATE, GOOD, INTERVENTION, PROGRESS, PROMPT } from './shared_flags';
import { interventionsFromArgs } from './steering';
import { atDecisionPoint, runShapeOf } from '../workers/engine/studies/resolve_interventions';

export const ROUTE_FLAGS = {
  prompt: PROMPT, good: GOOD.describe('the good future: with --bad, the route margin grid'), bad: BAD,
  metric: oneOf<PatchMetric>(['final', 'sequence']).default('final').describe('the margin: of the first tokens, or of the whole futures'),
  'ban-at': oneOf<BanAt>(['all', 'decision']).default('all').describe('route_margin bans each expert at every position, or at the decision point (the last prompt token, or after the futures\' shared prefix when they share one)'),
  'prompt-b': text('TEXT', { nonEmpty: true }).describe('a second prompt of the same token count: route_divergence between the two'),
  'chat-template': CHAT_TEMPLATE, intervention: INTERVENTION, progress: PROGRESS,
};
export type RouteFlags = Values<typeof ROUTE_FLAGS>;

export const ROUTE_ABOUT = `route (mixture-of-experts models) prints ids, tokens, n_experts, top_k, layers (the sparse layers) and per
sparse layer router_logits [n_tokens][n_experts] (before the softmax), expert_indices [n_tokens][k] and
expert_weights [n_tokens][k], expert_paths [{path, count, examples}] (each token's top-1 expert per sparse
layer, grouped, most frequent first); with --good and --bad also margin and route_margin [n_layers][n_experts]: the
change of the margin when that expert is banned at every position, or with --ban-at decision at the last prompt
token only (null on dense layers; 0 where no banned position chose it); ban_at. With --prompt-b also tokens_b and
route_divergence [{layer, jaccard [n_tokens], js [n_tokens]}] per sparse layer: each token's overlap of the chosen
experts (|A∩B|/|A∪B|) and the Jensen-Shannon divergence (nats) of the two router distributions.`;

/** @throws Error when only one of --good / --bad is given (before the model loads). */
export function checkRoute(f: RouteFlags): void {
  if ((f.good === undefined) !== (f.bad === undefined)) throw new Error(`--${f.good === undefined ? 'good' : 'bad'} is missing: the route margin needs both futures (or neither)`);
}

/** `branchpoint route`. */
export async function routeCommand(engine: Engine, f: RouteFlags, loadSae: (ref: string) => Promise<Sae>): Promise<unknown> {
  const { prompt, 'chat-template': chatTemplate } = f;
  const futures = f.good !== undefined && f.bad !== undefined ? { good: { text: f.good }, bad: { text: f.bad } } : {};
  const interventions = await interventionsFromArgs(engine, f.intervention, runShapeOf(engine, atDecisionPoint(engine, { prompt, chatTemplate }, futures.good, futures.bad)), loadSae);
  const r = await routeStudy(engine, { prompt, chatTemplate, ...futures, promptB: f['prompt-b'], metric: f.metric, banAt: f['ban-at'], interventions }, f.progress ? (p) => process.stderr.write(`\r${p.done}/${p.total}`) : undefined);
  if (f.progress) process.stderr.write('\n');
  const T = r.ids.length;
  const rows = (a: ArrayLike<number>, w: number) => Array.from({ length: T }, (_, t) => Array.from({ length: w }, (_, j) => a[t * w + j]));
  return {
    ids: r.ids, tokens: r.tokens, n_experts: r.nExperts, top_k: r.topK, layers: r.layers.map((x) => x.layer),
    router_logits: r.layers.map((x) => rows(x.routerLogits, r.nExperts)),
    expert_indices: r.layers.map((x) => rows(x.expertIndices, r.topK)),
    expert_weights: r.layers.map((x) => rows(x.expertWeights, r.topK)),
    expert_paths: r.paths,
    ...(r.divergence ? { tokens_b: r.tokensB, route_divergence: r.divergence.map((x) => ({ layer: x.layer, jaccard: Array.from(x.jaccard), js: Array.from(x.js) })) } : {}),
    ...(r.routeMargin ? {
      good: r.good, bad: r.bad, margin: r.margin, ban_at: r.banAt,
      route_margin: Array.from({ length: r.nLayers }, (_, l) => Array.from({ length: r.nExperts }, (_, e) => { const v = r.routeMargin![l * r.nExperts + e]; return Number.isNaN(v) ? null : v; })),
    } : {}),
  };
}
