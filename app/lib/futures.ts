import type { FutureInput } from '../../workers/protocol';
import type { FutureDraft } from '../store/experiment';

/**
 * A future as the user typed it → the engine's FutureInput. Text: sent as is ("|" separates
 * alternatives; the worker tokenizes in context). Ids: alternatives separated by "|", each a list
 * of integers separated by spaces or commas ("274 287 | 317").
 * @throws Error saying what is wrong with an id list.
 */
export function futureInput(d: FutureDraft): FutureInput {
  if (d.mode === 'text') return { text: d.value };
  const seqs = d.value.split('|').map((alt) => alt.split(/[\s,]+/).filter(Boolean));
  const ids = seqs.filter((s) => s.length > 0).map((s) => s.map((tok) => {
    if (!/^\d+$/.test(tok)) throw new Error(`"${tok}" is not a token id (write ids as integers, alternatives separated by "|")`);
    return Number(tok);
  }));
  if (ids.length === 0) throw new Error('a future written as ids needs at least one id');
  return { ids };
}

/** Identifies a future as written after a prompt: chips resolved for another key are out of date. */
export function futureKey(p: { prompt: string; chatTemplate: boolean }, d: FutureDraft): string {
  return JSON.stringify([p.prompt, p.chatTemplate, d.mode, d.value]);
}
