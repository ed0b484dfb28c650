/**
 * Control sets: unrelated texts on which an intervention's side effects are read (the operating
 * window, studies/side_effects.ts). Two formats:
 * - JSON: {"texts": [non-empty strings], "name"?: string, …} (public/control/*.json), or a bare array of strings;
 * - plain text (.txt): one text per line, blank lines skipped.
 */
import { assertUtf8Text, readStrictJson } from './strict_json';

export interface ControlSet {
  /** The set's name (the file's "name", else the file name). */
  name: string;
  texts: string[];
}

/**
 * Reads a control set; the format comes from the file name (.json or .txt).
 * @throws Error naming the file and what is wrong: an unknown extension, malformed JSON, no "texts"
 *   array, a text that is not a non-empty string (its index), or no texts at all.
 */
export function parseControlSet(file: string, text: string): ControlSet {
  const ext = file.toLowerCase().match(/\.(json|txt)$/)?.[1];
  if (!ext) throw new Error(`${file}: unknown control-set format; use .json ({"texts": ["…", …]}) or .txt (one text per line)`);
  assertUtf8Text(text, file);
  let name = file.replace(/^.*[\\/]/, '');
  let texts: unknown;
  if (ext === 'txt') texts = text.split(/\r?\n/).filter((l) => l.trim() !== '');
  else {
    const o = readStrictJson(text, file) as unknown;
    if (Array.isArray(o)) texts = o;
    else if (typeof o === 'object' && o !== null && 'texts' in o) {
      texts = (o as Record<string, unknown>).texts;
      const n = (o as Record<string, unknown>).name;
      if (typeof n === 'string' && n.trim() !== '') name = n;
    } else throw new Error(`${file}: expected {"texts": ["…", …]} (or an array of texts)`);
  }
  if (!Array.isArray(texts)) throw new Error(`${file}: "texts" must be an array of texts`);
  const bad = texts.findIndex((t) => typeof t !== 'string' || t.trim() === '');
  if (bad >= 0) throw new Error(`${file}: text ${bad + 1} is ${typeof texts[bad] === 'string' ? 'empty' : `not a string (${JSON.stringify(texts[bad])})`}`);
  if (texts.length === 0) throw new Error(`${file}: the control set is empty; side effects are read on unrelated text, so give at least one text`);
  return { name, texts: texts as string[] };
}
