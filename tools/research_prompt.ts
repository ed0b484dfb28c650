/**
 * The prompt of a given token count for the research-size checkpoints' tests and benchmarks (the
 * issue's "64-token prompt"): the shortest prefix of one fixed English text that a model's prompt
 * codec (workers/engine/prompt.ts, BOS included where the tokenizer adds one) encodes to exactly n
 * ids — whole words when some word prefix has n tokens, else cut inside the word that crosses n.
 */
import type { PromptCodec } from '../workers/engine/prompt';

const TEXT = 'Once upon a time Lily and Tom went to the park to play with a big red ball. The sun was warm and the birds sang in the tall green trees. ' +
  'Tom ran fast and Lily laughed when the ball rolled down the hill into the little pond near the old bench where their mother sat reading a book about the sea. ' +
  'Later they walked home along the river, counting boats and ducks, and ate warm bread with honey before the stars came out over the quiet town.';

/** The futures the tests and benchmarks analyse after that prompt. */
export const RESEARCH_FUTURES = { good: ' Tom', bad: ' Lily' } as const;

/**
 * @returns the prompt text and its n ids.
 * @throws Error when no prefix of the text has exactly n tokens (n beyond the text, or a tokenizer
 *   whose token boundaries skip n at every cut).
 */
export function promptOfLength(codec: PromptCodec, n: number): { text: string; ids: number[] } {
  const words = TEXT.split(' ');
  const wordEnds = words.map((_, k) => words.slice(0, k + 1).join(' ').length);
  for (const end of [...wordEnds, ...Array.from({ length: TEXT.length }, (_, i) => i + 1)]) {
    const text = TEXT.slice(0, end);
    const ids = codec.encodePrompt({ prompt: text }, { anyLength: true });
    if (ids.length === n) return { text, ids };
  }
  throw new Error(`no prefix of the research prompt text is ${n} tokens long for this tokenizer`);
}
