/**
 * Where an error about the experiment's prompt is shown — once (trials saw a too-long prompt's
 * message four times: the banner, under the prompt and under each future). The engine words such
 * errors "the prompt: …" (workers/engine/engine.ts, e.g. "the prompt: 842 tokens are longer than the
 * model's context of 512 tokens (max_position_embeddings); shorten it").
 */

/** True for an engine error about the prompt itself (not about a future, a vector or a model). */
export function isPromptError(message: string): boolean {
  return message.startsWith('the prompt:');
}

/**
 * The one place a prompt error shows: the banner once Analyse or Generate failed with it (the
 * sticky banner is in view wherever the button was pressed), else the note under the prompt as it
 * is typed. A future's tokens never repeat it (the futures are not at fault): see `futureError`.
 * @param note the prompt editor's tokenization error, or null;
 * @param bannerWhy the reason the banner shows, or null when it is closed.
 */
export function promptErrorPlace(note: string | null, bannerWhy: string | null): 'banner' | 'note' | null {
  if (!note) return null;
  return bannerWhy === note ? 'banner' : 'note';
}

/** What a future shows in place of its tokens when it did not resolve: nothing when the prompt is at fault. */
export function futureError(message: string): string | null {
  return isPromptError(message) ? null : message;
}
