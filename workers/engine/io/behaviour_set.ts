/**
 * A behaviour for the Mechanisms study: a labelled contrastive set (io/prompt_set.ts, any format the
 * Probes view reads) and the two futures whose margin measures it. A JSON set names its futures as
 * `"suggested": {"good", "bad"}` (public/steering/happy_sad.json, public/probes/he_she.json) or
 * `"futures": {"good", "bad"}`; JSONL and CSV sets carry none (the caller gives them).
 * Also the neutral control prompts that join the natural-correlation pool: a .txt file (one prompt
 * per non-empty line), a JSON array of strings or {"texts": [...]}, or a labelled set (both classes).
 */
import { parseLabelledSet, type LabelledSet } from './prompt_set';
import { assertUtf8Text, readStrictJson } from './strict_json';

export interface BehaviourSet extends LabelledSet {
  /** The file's "name", else the file name. */
  name: string;
  /** The futures the file names (null: none). */
  futures: { good: string; bad: string } | null;
}

/**
 * Reads a behaviour's set and, for JSON, its name and futures.
 * @throws Error as parseLabelledSet does, or for "suggested"/"futures" without two non-empty strings good and bad.
 */
export function parseBehaviourSet(file: string, text: string): BehaviourSet {
  const set = parseLabelledSet(file, text);
  if (!/\.json$/i.test(file)) return { ...set, name: file, futures: null };
  const o = readStrictJson(text, file) as Record<string, unknown>;
  const key = o.futures !== undefined ? 'futures' : o.suggested !== undefined ? 'suggested' : null;
  let futures: BehaviourSet['futures'] = null;
  if (key) {
    const f = o[key] as Record<string, unknown> | null;
    if (typeof f !== 'object' || f === null || typeof f.good !== 'string' || typeof f.bad !== 'string' || f.good === '' || f.bad === '') {
      throw new Error(`${file}: "${key}" must be {"good": text, "bad": text} with two non-empty futures`);
    }
    futures = { good: f.good, bad: f.bad };
  }
  return { ...set, name: typeof o.name === 'string' && o.name.trim() ? o.name : file, futures };
}

/**
 * Reads a control set's prompts.
 * @throws Error naming the file for an unknown format, malformed JSON, a non-string or empty prompt, or no prompt at all.
 */
export function parseControlSet(file: string, text: string): string[] {
  let texts: unknown;
  if (/\.txt$/i.test(file)) {
    assertUtf8Text(text, file);
    texts = text.split(/\r?\n/).map((t) => t.trim()).filter(Boolean);
  } else if (/\.json$/i.test(file)) {
    const o = readStrictJson(text, file) as Record<string, unknown> | unknown[];
    if (Array.isArray(o)) texts = o;
    else if (o && typeof o === 'object' && Array.isArray((o as Record<string, unknown>).texts)) texts = (o as Record<string, unknown>).texts;
    else if (o && typeof o === 'object' && 'positive' in o) { const s = parseLabelledSet(file, text); texts = [...s.positive, ...s.negative]; }
    else throw new Error(`${file}: a control set is a JSON array of prompts, {"texts": [...]}, or a labelled set`);
  } else if (/\.(jsonl|ndjson|csv)$/i.test(file)) {
    const s = parseLabelledSet(file, text);
    texts = [...s.positive, ...s.negative];
  } else {
    throw new Error(`${file}: unknown control-set format; use .txt (one prompt per line), .json (an array of prompts) or a labelled set`);
  }
  const list = texts as unknown[];
  const bad = list.findIndex((t) => typeof t !== 'string' || t.trim() === '');
  if (bad >= 0) throw new Error(`${file}: prompt ${bad + 1} of the control set is not a non-empty text`);
  if (list.length === 0) throw new Error(`${file}: the control set holds no prompt`);
  return list as string[];
}
