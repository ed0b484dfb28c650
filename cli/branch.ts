/**
 * The runner's branch-explorer commands (workers/engine/branching/): `branch` generates a trunk and
 * one fork of it; `forks` scores the trunk's fork points (Bigelow et al. arXiv 2412.07961).
 */
import type { Engine } from '../workers/engine/engine';
import { BranchExplorer, firstTokenInContext, type ExploreRequest } from '../workers/engine/studies/branching/explorer';
import { forkPoints } from '../workers/engine/studies/branching/forks';
import { pathOf, type DrawSettings } from '../workers/engine/studies/branching/tree';
import { int, num, text, type Values } from './flags';
import { BAD, CHAT_TEMPLATE, GOOD, INTERVENTION, MAX_NEW_TOKENS, PROMPT, SEED, TEMPERATURE, TOP_K } from './shared_flags';
import { interventionsFromArgs } from './steering';
import { runShapeOf } from '../workers/engine/studies/resolve_interventions';

export const BRANCH_FLAGS = {
  prompt: PROMPT,
  at: int({ min: 0 }, 'K').describe('fork at new token K (0-based, < N); or --at-prompt'),
  'at-prompt': int({ min: 1 }, 'P').describe('fork at prompt token P (1 ≤ P < n_prompt); or --at'),
  alt: text('TEXT', { nonEmpty: true }).required().describe("the text whose first token replaces the token at the fork"),
  'max-new-tokens': MAX_NEW_TOKENS, good: GOOD, bad: BAD, temperature: TEMPERATURE, 'top-k': TOP_K, seed: SEED,
  intervention: INTERVENTION, 'chat-template': CHAT_TEMPLATE,
};
export type BranchFlags = Values<typeof BRANCH_FLAGS>;

export const BRANCH_ABOUT = `generates the trunk (N new tokens), replaces new token K (0-based) by the alternative's first token
(tokenized in context) and continues to N tokens, reusing the KV cache of the shared prefix. Prints
trunk_ids, branch_ids (new tokens, N each), their texts, alt_id, forwarded (positions each run
computed), and trunk_margins / branch_margins per step when --good/--bad are given. --at-prompt P
forks at prompt token P instead (1 ≤ P < n_prompt): prompt[0..P) + alternative, continued to the
trunk's length n_prompt + N; branch_ids then start at the fork (the forced token first).`;

/** One of --at / --at-prompt, --at inside the N new tokens, both futures or neither. @throws Error otherwise. */
export function checkBranch(f: BranchFlags): void {
  if ((f.at === undefined) === (f['at-prompt'] === undefined)) throw new Error('give --at K (new token K, 0-based) or --at-prompt P (prompt token P, 1-based position after <s>), not both');
  const N = f['max-new-tokens'];
  if (f.at !== undefined && f.at >= N) throw new Error(`--at must be a new-token index 0..${N - 1} (got ${f.at})`);
  if ((f.good === undefined) !== (f.bad === undefined)) throw new Error('give both --good and --bad (or neither)');
}

export const FORKS_FLAGS = {
  prompt: PROMPT, good: GOOD.required(), bad: BAD.required(),
  samples: int({ min: 1 }, 'S').required().describe('seeded continuations per forced token'),
  'max-new-tokens': MAX_NEW_TOKENS,
  alternatives: int({ min: 1 }).default(1).describe('alternatives to the chosen token at each position'),
  temperature: num({ min: 0, max: 1e6 }, 'T').default(1).describe('the continuations\' temperature'),
  seed: SEED,
  horizon: int({ min: 1 }, 'H').describe('continuation length (default: to the end of the trunk)'),
  'max-gap': num({ min: 0, max: 1 }).default(1).describe('score only positions with p(top-1) − p(top-2) ≤ this gap'),
  intervention: INTERVENTION, 'chat-template': CHAT_TEMPLATE,
};
export type ForksFlags = Values<typeof FORKS_FLAGS>;

export const FORKS_ABOUT = `greedy trunk, then per generated position: gap = p(top-1) − p(top-2), and for the chosen token and
each alternative, S seeded continuations of up to H tokens with their outcome margin
Δ = log p(good) − log p(bad) after the continuation; score = max |mean Δ(alt) − mean Δ(chosen)|.`;

/** The exploration request and draw settings the flags describe. */
async function setup(engine: Engine, f: { prompt: string; good?: string; bad?: string; 'chat-template': boolean; 'max-new-tokens': number; intervention: string[] }) {
  const { prompt, good, bad } = f;
  const chatTemplate = f['chat-template'];
  const maxNewTokens = f['max-new-tokens'];
  const req: ExploreRequest = { prompt, chatTemplate, good: good ? { text: good } : { ids: [[0]] }, bad: bad ? { text: bad } : { ids: [[0]] }, maxNewTokens };
  const interventions = await interventionsFromArgs(engine, f.intervention, runShapeOf(engine, req, maxNewTokens));
  return { req, interventions, futures: Boolean(good && bad) };
}

/**
 * `branch`: trunk and one fork, at new token K (--at) or at prompt token P (--at-prompt).
 * @throws Error for a bad --at / --at-prompt (or both, or neither), an empty --alt, or the errors of the explorer.
 */
export async function branchCommand(engine: Engine, f: BranchFlags): Promise<unknown> {
  checkBranch(f);
  const { req, interventions, futures } = await setup(engine, f);
  const onPrompt = f['at-prompt'] !== undefined;
  const at = onPrompt ? f['at-prompt']! : f.at!;
  const T0 = engine.encodePrompt(req).length;
  if (onPrompt && at >= T0) throw new Error(`--at-prompt must be a prompt position 1..${T0 - 1} (position 0 starts the sequence; got ${at})`);
  const altText = f.alt;
  const draw: DrawSettings = { temperature: f.temperature, topK: f['top-k'], seed: f.seed, steered: interventions.length > 0 };
  const x = await BranchExplorer.start(engine, { ...req, stopAtEos: false }, draw, interventions);
  const T = x.tree.promptIds.length;
  const trunk = pathOf(x.tree, 0);
  const position = onPrompt ? at : T + at;
  const alt = firstTokenInContext(engine, trunk.ids.slice(0, position), altText);
  const node = await x.fork(0, position, alt, draw, interventions);
  const branch = pathOf(x.tree, node.id);
  // New tokens for a fork after the prompt; from the fork position on (forced token first) for a prompt fork.
  const from = onPrompt ? position : T;
  const trunkIds = trunk.ids.slice(T), branchIds = branch.ids.slice(from);
  return {
    prompt_ids: x.tree.promptIds, ...(onPrompt ? { at_prompt: at, branch_from: position } : { at }), alt_id: alt, alt_token: node.tokens[0], alt_prob: Math.exp(node.logProbs[0]),
    trunk_ids: trunkIds, branch_ids: branchIds,
    trunk_text: engine.continuationText(x.tree.promptIds, trunkIds), branch_text: engine.continuationText(branch.ids.slice(0, from), branchIds),
    forwarded: { trunk: x.tree.nodes[0].forwarded, branch: node.forwarded },
    ...(futures ? { trunk_margins: trunk.margins.slice(T), branch_margins: branch.margins.slice(from) } : {}),
  };
}

/** `forks`: the trunk's fork-point scores. */
export async function forksCommand(engine: Engine, f: ForksFlags): Promise<unknown> {
  const { req, interventions } = await setup(engine, f);
  const x = await BranchExplorer.start(engine, { ...req, stopAtEos: false }, { temperature: 0, topK: 0, seed: 0, steered: interventions.length > 0 }, interventions);
  const r = await forkPoints(x, {
    samples: f.samples, alternatives: f.alternatives, temperature: f.temperature,
    seed: f.seed, horizon: f.horizon, maxGap: f['max-gap'],
    steered: interventions.length > 0,
  }, interventions);
  const T = x.tree.promptIds.length;
  return {
    prompt_ids: x.tree.promptIds, trunk_ids: x.tree.nodes[0].ids, trunk_text: engine.continuationText(x.tree.promptIds, x.tree.nodes[0].ids),
    samples: r.samples, horizon: r.horizon, temperature: r.temperature, seed: r.seed,
    fork_points: r.points.map((p) => ({
      position: p.position, step: p.position - T, id: p.id, token: p.token, gap: p.gap, score: Number.isNaN(p.score) ? null : p.score,
      forced: p.forced.map((f) => ({ id: f.id, token: f.token, prob: f.prob, mean: f.mean, frac_good: f.fracGood, outcomes: f.outcomes })),
    })),
  };
}
