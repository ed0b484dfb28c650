/**
 * The runner's `window` subcommand: the intervention window (workers/engine/studies/window.ts),
 * the outcome of steering from step k for k = 0..K and the point of no return, as one JSON object.
 */
import type { Engine } from '../workers/engine/engine';
import { interventionWindow, type WindowScore } from '../workers/engine/studies/window';
import type { Args } from './args';
import { interventionsFromArgs } from './steering';

export const WINDOW_USAGE = `  branchpoint window   --model DIR --prompt TEXT --good TEXT --bad TEXT --intervention JSON
                       --max-new-tokens N [--k-max K] [--score mean:M|margin:S|contains:TEXT]
                       [--temperature T --top-k K --seed S]
window prints {ks, outcome, point_of_no_return, unsteered_outcome, texts, ...}: the generation of N tokens
regenerated with the intervention(s) on from step k (k = 0..K, default K = N-1; step 0 = the prompt pass),
the unsteered prefix shared. --score: mean:M = mean margin over the last M steps (default: all N),
margin:S = the margin at step S, contains:TEXT = +1 when the continuation contains TEXT, else -1.
point_of_no_return = the last k whose outcome has the opposite sign of the unsteered one (null: none).`;

/** "mean:M" | "margin:S" | "contains:TEXT" → a score. @throws Error for anything else. */
export function parseScore(text: string): WindowScore {
  const i = text.indexOf(':');
  const kind = i < 0 ? text : text.slice(0, i), arg = i < 0 ? '' : text.slice(i + 1);
  const int = () => {
    const n = Number(arg);
    if (arg === '' || !Number.isInteger(n)) throw new Error(`--score ${text}: ${kind} needs an integer, e.g. ${kind}:4`);
    return n;
  };
  if (kind === 'mean') return { kind: 'mean', last: int() };
  if (kind === 'margin') return { kind: 'margin', step: int() };
  if (kind === 'contains' && arg !== '') return { kind: 'contains', text: arg };
  throw new Error(`--score ${text}: use mean:M (mean margin over the last M steps), margin:S (margin at step S) or contains:TEXT`);
}

/** `branchpoint window`. Progress goes to stderr with --progress true. */
export async function windowCommand(engine: Engine, a: Args, required: (key: string) => string): Promise<unknown> {
  const prompt = required('prompt');
  const chatTemplate = a.flags.get('chat-template') === 'true';
  const N = Number(required('max-new-tokens'));
  if (!Number.isInteger(N) || N < 1) throw new Error(`--max-new-tokens ${a.flags.get('max-new-tokens')}: give a positive integer`);
  if (!a.repeated.get('intervention')?.length) throw new Error('--intervention is required: the intervention switched on from step k (JSON, repeatable)');
  const interventions = await interventionsFromArgs(engine, a, { nPrompt: engine.encodePrompt({ prompt, chatTemplate }).length, maxNewTokens: N, chatTemplate });
  const kMax = a.flags.has('k-max') ? Number(a.flags.get('k-max')) : undefined;
  const showProgress = a.flags.get('progress') === 'true';
  const r = await interventionWindow(engine, {
    prompt, chatTemplate, good: { text: required('good') }, bad: { text: required('bad') }, interventions, maxNewTokens: N, kMax,
    score: a.flags.has('score') ? parseScore(a.flags.get('score')!) : undefined,
    temperature: Number(a.flags.get('temperature') ?? 0), topK: Number(a.flags.get('top-k') ?? 0), seed: Number(a.flags.get('seed') ?? 0),
  }, showProgress ? (p) => process.stderr.write(`\r${p.done}/${p.total}`) : undefined);
  if (showProgress) process.stderr.write('\n');
  return {
    prompt_ids: r.promptIds, max_new_tokens: r.maxNewTokens, score: r.score,
    ks: r.ks, outcome: r.outcome, point_of_no_return: r.pointOfNoReturn,
    unsteered_outcome: r.unsteered.outcome, unsteered_text: r.unsteered.text,
    texts: r.variants.map((v) => v.text), margins: r.variants.map((v) => v.margins), unsteered_margins: r.unsteered.margins,
  };
}
