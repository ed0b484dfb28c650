/**
 * The runner's branch-explorer commands (workers/engine/branching/): `branch` generates a trunk and
 * one fork of it; `forks` scores the trunk's fork points (Bigelow et al. arXiv 2412.07961).
 */
import type { Engine } from '../workers/engine/engine';
import { BranchExplorer, firstTokenInContext, type ExploreRequest } from '../workers/engine/studies/branching/explorer';
import { forkPoints } from '../workers/engine/studies/branching/forks';
import { pathOf, type DrawSettings } from '../workers/engine/studies/branching/tree';
import type { Args } from './args';
import { interventionsFromArgs } from './steering';

export const BRANCH_USAGE = `  branchpoint branch   --model DIR --prompt TEXT (--at K | --at-prompt P) --alt TEXT [--max-new-tokens N]
                       [--good TEXT --bad TEXT] [--temperature T --top-k K --seed S] [--intervention JSON]
    generates the trunk (N new tokens), replaces new token K (0-based) by the alternative's first token
    (tokenized in context) and continues to N tokens, reusing the KV cache of the shared prefix. Prints
    trunk_ids, branch_ids (new tokens, N each), their texts, alt_id, forwarded (positions each run
    computed), and trunk_margins / branch_margins per step when --good/--bad are given. --at-prompt P
    forks at prompt token P instead (1 ≤ P < n_prompt): prompt[0..P) + alternative, continued to the
    trunk's length n_prompt + N; branch_ids then start at the fork (the forced token first).`;

export const FORKS_USAGE = `  branchpoint forks    --model DIR --prompt TEXT --good TEXT --bad TEXT --samples S [--max-new-tokens N]
                       [--alternatives 1 --temperature 1 --seed 0 --horizon H --max-gap 1] [--intervention JSON]
    greedy trunk, then per generated position: gap = p(top-1) − p(top-2), and for the chosen token and
    each alternative, S seeded continuations of up to H tokens with their outcome margin
    Δ = log p(good) − log p(bad) after the continuation; score = max |mean Δ(alt) − mean Δ(chosen)|.`;

function num(a: Args, key: string, dflt: number): number {
  const raw = a.flags.get(key);
  const v = Number(raw ?? dflt);
  if (!Number.isFinite(v)) throw new Error(`--${key} "${raw}" is not a number`);
  return v;
}

/** The exploration request and draw settings the flags describe. */
async function setup(engine: Engine, a: Args, prompt: string, futuresRequired: boolean) {
  const good = a.flags.get('good'), bad = a.flags.get('bad');
  if (futuresRequired && (!good || !bad)) throw new Error('--good and --bad are required: the outcome margin is log p(good) − log p(bad)');
  const chatTemplate = a.flags.get('chat-template') === 'true';
  const maxNewTokens = num(a, 'max-new-tokens', 32);
  const req: ExploreRequest = { prompt, chatTemplate, good: good ? { text: good } : { ids: [[0]] }, bad: bad ? { text: bad } : { ids: [[0]] }, maxNewTokens };
  const interventions = await interventionsFromArgs(engine, a, { nPrompt: engine.encodePrompt(req).length, maxNewTokens });
  return { req, interventions, futures: Boolean(good && bad) };
}

/**
 * `branch`: trunk and one fork, at new token K (--at) or at prompt token P (--at-prompt).
 * @throws Error for a bad --at / --at-prompt (or both, or neither), an empty --alt, or the errors of the explorer.
 */
export async function branchCommand(engine: Engine, a: Args, prompt: string): Promise<unknown> {
  const { req, interventions, futures } = await setup(engine, a, prompt, false);
  const N = req.maxNewTokens;
  const onPrompt = a.flags.has('at-prompt');
  if (onPrompt === a.flags.has('at')) throw new Error('give --at K (new token K, 0-based) or --at-prompt P (prompt token P, 1-based position after <s>), not both');
  const at = onPrompt ? num(a, 'at-prompt', NaN) : num(a, 'at', NaN);
  const T0 = engine.encodePrompt(req).length;
  if (onPrompt && !(Number.isInteger(at) && at >= 1 && at < T0)) throw new Error(`--at-prompt must be a prompt position 1..${T0 - 1} (position 0 starts the sequence; got ${a.flags.get('at-prompt')})`);
  if (!onPrompt && !(Number.isInteger(at) && at >= 0 && at < N)) throw new Error(`--at must be a new-token index 0..${N - 1} (got ${a.flags.get('at')})`);
  const altText = a.flags.get('alt');
  if (!altText) throw new Error(`--alt is required: the text whose first token replaces ${onPrompt ? 'prompt token P' : 'new token K'}`);
  const draw: DrawSettings = { temperature: num(a, 'temperature', 0), topK: num(a, 'top-k', 0), seed: num(a, 'seed', 0), steered: interventions.length > 0 };
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
export async function forksCommand(engine: Engine, a: Args, prompt: string): Promise<unknown> {
  const { req, interventions } = await setup(engine, a, prompt, true);
  const x = await BranchExplorer.start(engine, { ...req, stopAtEos: false }, { temperature: 0, topK: 0, seed: 0, steered: interventions.length > 0 }, interventions);
  const r = await forkPoints(x, {
    samples: num(a, 'samples', NaN), alternatives: num(a, 'alternatives', 1), temperature: num(a, 'temperature', 1),
    seed: num(a, 'seed', 0), horizon: a.flags.has('horizon') ? num(a, 'horizon', 0) : undefined, maxGap: num(a, 'max-gap', 1),
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
