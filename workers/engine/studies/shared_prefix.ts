/**
 * The decision point after the futures' shared prefix: when two single-branch futures open with the
 * same tokens (Qwen3's empty think block and `<tool_call>` opening), the first-token margin (DESIGN.md
 * §3) at the last prompt position compares the same token with itself and is 0 by construction. The
 * decision point researchers mean is where the futures first differ: the shared prefix is teacher-forced
 * as part of the prompt (PromptInput.forcedIds) and the futures continue from there as ids, so the
 * first-token margin, the logit lens, patching and steering are measured at that position.
 */
import type { Engine } from '../engine';
import type { FutureInput, PromptInput } from '../prompt';
import { sharedPrefixLength } from '../analysis/future_overlap';

/** The shared prefix that was teacher-forced: its ids, its text and the one line the result and the UI show. */
export interface SharedPrefix {
  ids: number[];
  text: string;
  /** "decision point after the shared prefix `<think>…`, k tokens". */
  note: string;
}

/** A prompt and its two futures, moved to the decision point (or as given when the futures share no prefix). */
export interface Forked {
  input: PromptInput;
  good: FutureInput;
  bad: FutureInput;
  shared: SharedPrefix | null;
}

/** The note quotes the prefix up to its first line break, at most this many characters. */
const NOTE_CHARS = 12;

/**
 * Resolves both futures after the prompt; when they are single branches whose first k ≥ 1 tokens
 * agree (analysis/future_overlap.ts sharedPrefixLength), returns the prompt with those k ids
 * teacher-forced and the futures' remaining ids. Token sets and single-token futures come back unchanged.
 * @throws Error for a bad prompt or future (PromptCodec.encodePrompt, resolveFuture).
 */
export function forkAtSharedPrefix(engine: Engine, input: PromptInput, good: FutureInput, bad: FutureInput): Forked {
  const ids = engine.encodePrompt(input);
  const g = engine.resolveFuture(ids, good, input, 'good'), b = engine.resolveFuture(ids, bad, input, 'bad');
  const k = sharedPrefixLength(g.sequences, b.sequences);
  if (k === 0) return { input, good, bad, shared: null };
  const prefix = g.sequences[0].slice(0, k);
  const text = g.tokens[0].slice(0, k).join('');
  const cut = Math.min(NOTE_CHARS, ...[text.indexOf('\n')].filter((i) => i > 0));
  const shown = text.length > cut ? `${text.slice(0, cut)}…` : text;
  return {
    input: { ...input, forcedIds: [...(input.forcedIds ?? []), ...prefix] },
    good: { ids: [g.sequences[0].slice(k)] },
    bad: { ids: [b.sequences[0].slice(k)] },
    shared: { ids: prefix, text, note: `decision point after the shared prefix \`${shown}\`, ${k} token${k === 1 ? '' : 's'}` },
  };
}
