/**
 * A behaviour for the Mechanisms study: a labelled contrastive set (io/prompt_set.ts, any format the
 * Probes view reads) with the two futures whose margin measures it (a JSON set's
 * `"suggested": {"good", "bad"}`, as in public/steering/happy_sad.json and public/probes/he_she.json;
 * JSONL and CSV sets carry none, and the caller gives them) and its name.
 */
import { parseLabelledSet, type LabelledSet } from './prompt_set';
import { readStrictJson } from './strict_json';

export interface BehaviourSet extends LabelledSet {
  /** The file's "name", else the file name. */
  name: string;
}

/**
 * Reads a behaviour's set and, for JSON, its name; a "suggested" that does not name two futures is
 * refused (parseLabelledSet would leave it out silently, and the behaviour would lose its margin).
 * @throws Error as parseLabelledSet does, or for "suggested" without two non-empty texts good and bad.
 */
export function parseBehaviourSet(file: string, text: string): BehaviourSet {
  const set = parseLabelledSet(file, text);
  if (!/\.json$/i.test(file)) return { ...set, name: file };
  const o = readStrictJson(text, file) as Record<string, unknown>;
  if (o.suggested !== undefined && !set.futures) throw new Error(`${file}: "suggested" must be {"good": text, "bad": text} with two non-empty futures`);
  return { ...set, name: typeof o.name === 'string' && o.name.trim() ? o.name : file };
}
