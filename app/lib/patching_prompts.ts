/**
 * Which clean/corrupted pair goes with the experiment's prompt. The Patching view and the report
 * measure their own clean and corrupted prompts with the experiment's futures; when the experiment's
 * prompt has moved on (typed, or "Use its prompt and futures" from the vector library, or the
 * Window view's setup) those prompts no longer belong to the futures, and a report would mix two
 * experiments. This module names that mismatch and gives the pair that follows the experiment.
 */

/**
 * Corruptions for shipped prompts, checked on the bundled stories260K with its futures (" Tom" vs
 * " Lily"): Δ_clean = −0.108, Δ_corrupt = −1.414 nats, so |Δ_clean − Δ_corrupt| = 1.31 (above
 * analysis/recovery_denominator.ts's 0.5; the names swapped give 0.14 and r of 3–4). Replacing
 * " Tom" by " dad" keeps the 21 tokens and removes the answer from the context (the standard
 * "replace the name" corruption, Heimersheim & Nanda arXiv 2404.15255 §3).
 */
export const KNOWN_CORRUPTIONS: Readonly<Record<string, string>> = {
  'Lily and Tom went to the park. Lily gave the ball to': 'Lily and dad went to the park. Lily gave the ball to',
};

/** The patching prompts in use and the experiment's prompt they disagree with. */
export interface PromptMismatch {
  experiment: string;
  clean: string;
  corrupt: string;
}

/**
 * Whether the experiment's prompt is not one of the patching pair. The corrupted prompt counts as
 * agreeing: opening a patch cell makes the experiment's prompt the patched (corrupted) run's.
 * @returns the mismatch, or null when the prompts agree (or the experiment's prompt is empty).
 */
export function promptMismatch(experiment: string, clean: string, corrupt: string): PromptMismatch | null {
  if (experiment.trim() === '' || experiment === clean || experiment === corrupt) return null;
  return { experiment, clean, corrupt };
}

/**
 * The pair that follows the experiment's prompt: it becomes the clean prompt, with its known
 * corruption when there is one. @returns the new pair, and whether the corrupted prompt still has
 * to be written by the user (no known corruption: the old one is kept for editing).
 */
export function pairFor(experiment: string, current: { corrupt: string }): { clean: string; corrupt: string; corruptNeeded: boolean } {
  const known = KNOWN_CORRUPTIONS[experiment];
  return known !== undefined ? { clean: experiment, corrupt: known, corruptNeeded: false } : { clean: experiment, corrupt: current.corrupt, corruptNeeded: true };
}

/** README's example pair (the Patching view's "Example" button): the default prompt and its known corruption. */
export const EXAMPLE_PAIR: Readonly<{ clean: string; corrupt: string }> = {
  clean: 'Lily and Tom went to the park. Lily gave the ball to',
  corrupt: KNOWN_CORRUPTIONS['Lily and Tom went to the park. Lily gave the ball to'],
};

/** The futures EXAMPLE_PAIR is measured with (the README's 1.31 = |Δ_clean − Δ_corrupt| holds for these only): the example sets them too. */
export const EXAMPLE_FUTURES: Readonly<{ good: { mode: 'text'; value: string }; bad: { mode: 'text'; value: string } }> = {
  good: { mode: 'text', value: ' Tom' },
  bad: { mode: 'text', value: ' Lily' },
};

/**
 * The pair a Patching view that follows the experiment starts from: its prompt as the clean one,
 * and its known corruption, else a copy of it for the user to edit (the corrupted prompt is the
 * clean one with the words that carry the answer changed, at the same token length — only the user
 * knows which; an identical pair measures nothing and is refused by the view until edited).
 */
export function followingPair(experiment: string): { clean: string; corrupt: string; corruptNeeded: boolean } {
  return pairFor(experiment, { corrupt: experiment });
}
