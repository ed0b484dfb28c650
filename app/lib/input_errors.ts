/**
 * Where an error about the experiment's inputs is shown — once (trials saw a too-long prompt's
 * message four times: the banner, under the prompt and under each future; an empty future's twice). The engine words such
 * errors "the prompt: …" (workers/engine/engine.ts, e.g. "the prompt: 842 tokens are longer than the
 * model's context of 512 tokens (max_position_embeddings); shorten it").
 */

/** True for an engine error about the prompt itself (not about a future, a vector or a model). */
export function isPromptError(message: string): boolean {
  return message.startsWith('the prompt:');
}

/**
 * The one place an input error shows (the prompt's, or a future's): the banner once Analyse or
 * Generate failed with it (the sticky banner is in view wherever the button was pressed), else the
 * note under its field as it is typed (trials saw an empty future's message in both). A future's
 * tokens never repeat a prompt error (the futures are not at fault): see `futureError`.
 * @param note the field's own error (the prompt's tokenization, a future's resolution), or null;
 * @param bannerWhy the reason the banner shows, or null when it is closed.
 */
export function errorPlace(note: string | null, bannerWhy: string | null): 'banner' | 'note' | null {
  if (!note) return null;
  return bannerWhy === note ? 'banner' : 'note';
}

/** What a future shows in place of its tokens when it did not resolve: nothing when the prompt is at fault. */
export function futureError(message: string): string | null {
  return isPromptError(message) ? null : message;
}
