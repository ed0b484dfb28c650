/**
 * The runner's `window` subcommand: the intervention window (workers/engine/studies/window.ts),
 * the outcome of steering from step k for k = 0..K and the point of no return, as one JSON object.
 */
import type { Engine } from '../workers/engine/engine';
import { interventionWindow, type WindowScore } from '../workers/engine/studies/window';
import { custom, type Values } from './flags';
import { BAD, CHAT_TEMPLATE, GOOD, INTERVENTION, K_MAX, MAX_NEW_TOKENS, PROGRESS, PROMPT, SEED, TEMPERATURE, TOP_K } from './shared_flags';
import { interventionsFromArgs } from './steering';
import { atDecisionPoint, runShapeOf } from '../workers/engine/studies/resolve_interventions';

/** --score: how a continuation is scored. */
export const SCORE = custom(parseScore, 'mean:M, margin:S or contains:TEXT', 'mean:M|margin:S|contains:TEXT', 'mean:1', ['median:2', 'mean:', 'mean:x', 'mean:-1', 'margin:1e400', 'contains:']).describe('the outcome (default mean over all N steps)');

export const WINDOW_FLAGS = {
  prompt: PROMPT, good: GOOD.required(), bad: BAD.required(),
  intervention: INTERVENTION.describe('the intervention(s) switched on from step k (at least one; see Interventions)'),
  'max-new-tokens': MAX_NEW_TOKENS.optional().required(), 'k-max': K_MAX, score: SCORE,
  temperature: TEMPERATURE, 'top-k': TOP_K, seed: SEED, progress: PROGRESS, 'chat-template': CHAT_TEMPLATE,
};
export type WindowFlags = Values<typeof WINDOW_FLAGS>;

/** An intervention given, --k-max inside the N steps and --score's step or span inside them. @throws Error otherwise. */
export function checkWindowFlags(f: { intervention: string[]; 'max-new-tokens': number; 'k-max'?: number; score?: WindowScore }): void {
  if (!f.intervention.length) throw new Error('--intervention is required: the intervention switched on from step k (JSON, repeatable)');
  const N = f['max-new-tokens'];
  if (f['k-max'] !== undefined && f['k-max'] > N - 1) throw new Error(`--k-max "${f['k-max']}": expected a start step 0..${N - 1} (a start at step ≥ N = --max-new-tokens steers nothing)`);
  if (f.score) checkScoreSteps(f.score, N);
}

/** --score's step (margin:S) or span (mean:M) inside the N steps (the window study's own check, before the model loads). @throws Error naming the flag. */
export function checkScoreSteps(score: WindowScore, N: number): void {
  const text = score.kind === 'mean' ? `mean:${score.last}` : score.kind === 'margin' ? `margin:${score.step}` : `contains:${score.text}`;
  if (score.kind === 'margin' && !(score.step >= 0 && score.step < N)) throw new Error(`--score "${text}": score step ${score.step} is outside the generation's steps 0..${N - 1}`);
  if (score.kind === 'mean' && !(score.last >= 1 && score.last <= N)) throw new Error(`--score "${text}": score over the last ${score.last} steps: give 1..${N} (the generation has ${N} steps)`);
}

export const WINDOW_ABOUT = `window prints {ks, outcome, point_of_no_return, unsteered_outcome, texts, ...}: the generation of N tokens
regenerated with the intervention(s) on from step k (k = 0..K, default K = N-1; step 0 = the prompt pass),
the unsteered prefix shared. --score: mean:M = mean margin over the last M steps (default: all N),
margin:S = the margin at step S, contains:TEXT = +1 when the continuation contains TEXT, else -1.
point_of_no_return = the last k whose outcome has the opposite sign of the unsteered one (null: none).`;

/** "mean:M" | "margin:S" | "contains:TEXT" → a score. @throws Error for anything else. */
export function parseScore(text: string): WindowScore {
  const i = text.indexOf(':');
  const kind = i < 0 ? text : text.slice(0, i), arg = i < 0 ? '' : text.slice(i + 1);
  const int = () => {
    const n = /^-?\d+$/.test(arg) ? Number(arg) : NaN;
    if (!Number.isSafeInteger(n)) throw new Error(`--score ${text}: ${kind} needs an integer, e.g. ${kind}:4`);
    return n;
  };
  if (kind === 'mean') return { kind: 'mean', last: int() };
  if (kind === 'margin') return { kind: 'margin', step: int() };
  if (kind === 'contains' && arg !== '') return { kind: 'contains', text: arg };
  throw new Error(`--score ${text}: use mean:M (mean margin over the last M steps), margin:S (margin at step S) or contains:TEXT`);
}

/** `branchpoint window`. Progress goes to stderr with --progress true. */
export async function windowCommand(engine: Engine, f: WindowFlags): Promise<unknown> {
  checkWindowFlags(f);
  const { prompt, 'chat-template': chatTemplate, 'max-new-tokens': N } = f;
  const interventions = await interventionsFromArgs(engine, f.intervention, runShapeOf(engine, atDecisionPoint(engine, { prompt, chatTemplate }, { text: f.good }, { text: f.bad }), N));
  const showProgress = f.progress;
  const r = await interventionWindow(engine, {
    prompt, chatTemplate, good: { text: f.good }, bad: { text: f.bad }, interventions, maxNewTokens: N, kMax: f['k-max'],
    score: f.score,
    temperature: f.temperature, topK: f['top-k'], seed: f.seed,
  }, showProgress ? (p) => process.stderr.write(`\r${p.done}/${p.total}`) : undefined);
  if (showProgress) process.stderr.write('\n');
  return {
    prompt_ids: r.promptIds, max_new_tokens: r.maxNewTokens, score: r.score,
    ks: r.ks, outcome: r.outcome, point_of_no_return: r.pointOfNoReturn,
    unsteered_outcome: r.unsteered.outcome, unsteered_text: r.unsteered.text,
    texts: r.variants.map((v) => v.text), margins: r.variants.map((v) => v.margins), unsteered_margins: r.unsteered.margins,
  };
}
