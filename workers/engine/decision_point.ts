/**
 * The decision point: where a prompt's two futures are resolved against it, and the one place that
 * moves the measuring position after the futures' shared prefix. When two single-branch futures open
 * with the same tokens (Qwen3's empty `<think>\n\n</think>\n\n` block and `<tool_call>` opening), the
 * first-token margin (DESIGN.md §3) at the last prompt position compares the same token with itself
 * and is 0 by construction. The decision point researchers mean is where the futures first differ:
 * the shared prefix is teacher-forced as part of the prompt (PromptInput.forcedIds) and the futures
 * continue from there as ids, so every study that measures at the last prompt position (the logit
 * lens, the final margin, patching, steering, attribution, routes, …) reads that position. Token sets
 * and single-token futures come back as they were resolved (analysis/future_overlap.ts sharedPrefixLength).
 */
import type { FutureInput, PromptCodec, PromptInput, ResolvedFuture } from './prompt';
import { sharedPrefixLength } from './analysis/future_overlap';

/** The shared prefix that was teacher-forced: its ids, its text and the one line a result, the UI and the runner show. */
export interface SharedPrefix {
  ids: number[];
  text: string;
  /** "decision point after the shared prefix `<think>…`, k tokens". */
  note: string;
  /** The display strings of the good and the bad future's first token after the prefix: where they differ. */
  differ: [string, string];
}

/**
 * A prompt and its two futures at the decision point: `input` carries the shared prefix as forcedIds
 * (as given when the futures share none), `promptIds` = encodePrompt(input) [T tokens, the prefix
 * included], `good` / `bad` the futures resolved after them.
 */
export interface DecisionPoint {
  input: PromptInput;
  promptIds: number[];
  good: ResolvedFuture;
  bad: ResolvedFuture;
  sharedPrefix: SharedPrefix | null;
}

/** The note quotes the prefix up to its first line break, at most this many characters. */
const NOTE_CHARS = 12;

/**
 * Encodes the prompt and resolves both futures after it (`codec`: the PromptCodec, or the Engine
 * that delegates to it: encodePrompt, resolveFuture);
 * when they are single branches whose first k ≥ 1 tokens agree, returns the prompt with those k ids
 * teacher-forced and the futures' remaining ids. Σ log p over the prefix is the same on both sides,
 * so the teacher-forced sequence margin is unchanged.
 * @throws Error for a bad prompt or future (PromptCodec.encodePrompt, resolveFuture).
 */
export function decisionPoint(codec: Pick<PromptCodec, 'encodePrompt' | 'resolveFuture'>, input: PromptInput, good: FutureInput, bad: FutureInput): DecisionPoint {
  const ids = codec.encodePrompt(input);
  const g = codec.resolveFuture(ids, good, input, 'good'), b = codec.resolveFuture(ids, bad, input, 'bad');
  const k = sharedPrefixLength(g.sequences, b.sequences);
  if (k === 0) return { input, promptIds: ids, good: g, bad: b, sharedPrefix: null };
  const prefix = g.sequences[0].slice(0, k);
  const text = g.tokens[0].slice(0, k).join('');
  const cut = Math.min(NOTE_CHARS, ...[text.indexOf('\n')].filter((i) => i > 0));
  const shown = text.length > cut ? `${text.slice(0, cut)}…` : text;
  const forced: PromptInput = { ...input, forcedIds: [...(input.forcedIds ?? []), ...prefix] };
  const promptIds = [...ids, ...prefix];
  const rest = (f: ResolvedFuture) => codec.resolveFuture(promptIds, { ids: [f.sequences[0].slice(k)] }, forced);
  return {
    input: forced, promptIds, good: rest(g), bad: rest(b),
    sharedPrefix: { ids: prefix, text, note: `decision point after the shared prefix \`${shown}\`, ${k} token${k === 1 ? '' : 's'}`, differ: [g.tokens[0][k], b.tokens[0][k]] },
  };
}
