/**
 * Labelled prompt sets for probes (and contrastive sets for CAA), read from the three formats a
 * researcher has at hand:
 * - JSON: {"positive": [texts], "negative": [texts]} (public/steering/*.json, public/probes/*.json),
 *   optionally with "classes": [negative name, positive name], "position" ("last" or an index) and
 *   "suggested": {"good", "bad"} (the futures the set was written for);
 * - JSONL: one {"text": …, "label": …} object per line;
 * - CSV with a header row naming a "text" (or "prompt") column and a "label" column (RFC 4180
 *   quoting, parsed by papaparse).
 * Labels: 1/0, true/false, "positive"/"negative" (also "pos"/"neg") map to the positive/negative
 * class; any other two distinct values are the classes in order of first appearance (the first is
 * the negative class, label 0; the second the positive, label 1), and keep their names.
 */
import Papa from 'papaparse';
import { assertUtf8Text, readStrictJson } from './strict_json';

export interface LabelledSet {
  positive: string[];
  negative: string[];
  /** Names of the classes [negative, positive]. */
  classes: [string, string];
  /** Token position the file asks to read ('last' or an index), when it says. */
  position?: 'last' | number;
  /** The two futures the set was written for (JSON "suggested": {"good", "bad"}), when it says: the behaviour a probe of the set is meant to measure. */
  futures?: { good: string; bad: string };
}

const POSITIVE = new Set(['1', 'true', 'positive', 'pos']);
const NEGATIVE = new Set(['0', 'false', 'negative', 'neg']);

/** Splits (text, label) rows into the two classes. @throws Error unless there are exactly two labels. */
function fromRows(rows: { text: string; label: string }[], file: string): LabelledSet {
  const distinct = [...new Set(rows.map((r) => r.label))];
  if (distinct.length !== 2) throw new Error(`${file}: a probe needs exactly two labels; found ${distinct.length} (${distinct.slice(0, 5).map((l) => JSON.stringify(l)).join(', ')}${distinct.length > 5 ? ', …' : ''})`);
  const low = distinct.map((l) => l.toLowerCase());
  let neg = distinct[0], pos = distinct[1];
  if (POSITIVE.has(low[0]) && NEGATIVE.has(low[1])) [neg, pos] = [distinct[1], distinct[0]];
  else if (!(NEGATIVE.has(low[0]) && POSITIVE.has(low[1]))) [neg, pos] = [distinct[0], distinct[1]];
  return {
    positive: rows.filter((r) => r.label === pos).map((r) => r.text),
    negative: rows.filter((r) => r.label === neg).map((r) => r.text),
    classes: [neg, pos],
  };
}

function checkTexts(x: unknown): x is string[] {
  return Array.isArray(x) && x.every((s) => typeof s === 'string' && s.length > 0);
}

function labelText(v: unknown, where: string): string {
  if (typeof v === 'string' && v.trim() !== '') return v.trim();
  if (typeof v === 'number' || typeof v === 'boolean') return String(v);
  throw new Error(`${where}: "label" must be a string, number or boolean (got ${JSON.stringify(v)})`);
}

/**
 * Reads a labelled set; the format comes from the file name (.json, .jsonl, .csv).
 * @throws Error naming the file and the line or key at fault: unknown extension, malformed JSON or
 *   CSV, missing text/label, empty texts, or not exactly two labels.
 */
export function parseLabelledSet(file: string, text: string): LabelledSet {
  const ext = file.toLowerCase().match(/\.(jsonl|ndjson|json|csv)$/)?.[1];
  if (ext) assertUtf8Text(text, file);
  if (ext === 'json') {
    const o = readStrictJson(text, file) as Record<string, unknown>;
    if (typeof o !== 'object' || o === null || !checkTexts(o.positive) || !checkTexts(o.negative)) throw new Error(`${file}: expected {"positive": [texts], "negative": [texts]} with non-empty strings`);
    const classes = Array.isArray(o.classes) && o.classes.length === 2 && o.classes.every((c) => typeof c === 'string') ? (o.classes as [string, string]) : (['negative', 'positive'] as [string, string]);
    const position = o.position === 'last' || Number.isInteger(o.position) ? (o.position as 'last' | number) : undefined;
    const sg = o.suggested as Record<string, unknown> | undefined;
    const futures = sg && typeof sg === 'object' && typeof sg.good === 'string' && sg.good !== '' && typeof sg.bad === 'string' && sg.bad !== '' ? { good: sg.good, bad: sg.bad } : undefined;
    return { positive: o.positive, negative: o.negative, classes, ...(position !== undefined ? { position } : {}), ...(futures ? { futures } : {}) };
  }
  if (ext === 'jsonl' || ext === 'ndjson') {
    const rows: { text: string; label: string }[] = [];
    text.split(/\r?\n/).forEach((line, i) => {
      if (line.trim() === '') return;
      const o = readStrictJson(line, `${file} line ${i + 1}`) as Record<string, unknown>;
      const t = o?.text ?? o?.prompt;
      if (typeof t !== 'string' || t === '') throw new Error(`${file} line ${i + 1}: needs a non-empty "text"`);
      rows.push({ text: t, label: labelText(o.label, `${file} line ${i + 1}`) });
    });
    return fromRows(rows, file);
  }
  if (ext === 'csv') {
    const parsed = Papa.parse<Record<string, string>>(text, { header: true, skipEmptyLines: true, transformHeader: (h) => h.trim().toLowerCase() });
    const bad = parsed.errors.find((e) => e.type !== 'Delimiter');
    if (bad) throw new Error(`${file} row ${(bad.row ?? 0) + 2}: ${bad.message}`);
    const fields = parsed.meta.fields ?? [];
    // papaparse renames a repeated header ("label" → "label_1"); a repeated name means two columns claim one role
    const header = Papa.parse<string[]>(text, { preview: 1 }).data[0]?.map((h) => h.trim().toLowerCase()) ?? [];
    header.forEach((h, j) => {
      const first = header.indexOf(h);
      if (first !== j) throw new Error(`${file}: the header names the column "${h}" twice (columns ${first + 1} and ${j + 1}); keep one`);
    });
    const textCol = fields.includes('text') ? 'text' : fields.includes('prompt') ? 'prompt' : null;
    if (!textCol || !fields.includes('label')) throw new Error(`${file}: the header needs a "text" (or "prompt") column and a "label" column (found ${fields.map((f) => JSON.stringify(f)).join(', ') || 'none'})`);
    const rows = parsed.data.map((r, i) => {
      if (!r[textCol]) throw new Error(`${file} row ${i + 2}: empty ${textCol}`);
      return { text: r[textCol], label: labelText(r.label, `${file} row ${i + 2}`) };
    });
    return fromRows(rows, file);
  }
  throw new Error(`${file}: unknown set format; use .json ({"positive": […], "negative": […]}), .jsonl ({"text", "label"} per line) or .csv (text,label columns)`);
}
