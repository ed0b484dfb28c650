/**
 * The values table of a batch study: one row per prompt, one column per template variable. Read
 * from CSV/TSV (RFC 4180, d3-dsv's parser), JSON Lines, or a JSON array of objects; every cell is
 * kept as text (the template substitutes text).
 */
import { csvParseRows, tsvParseRows } from 'd3';
import { assertUtf8Text, readStrictJson } from '../../io/strict_json';

export type ValueRow = Record<string, string>;

export interface ValuesTable {
  /** Column names in the order they first appear. */
  columns: string[];
  rows: ValueRow[];
}

export type ValuesFormat = 'csv' | 'tsv' | 'jsonl' | 'json';

/** The format a file name says (.csv, .tsv, .jsonl/.ndjson, .json), or null when it says none. */
export function formatOfName(name: string): ValuesFormat | null {
  const ext = /\.([a-z]+)$/i.exec(name)?.[1]?.toLowerCase();
  if (ext === 'csv' || ext === 'tsv' || ext === 'json') return ext;
  if (ext === 'jsonl' || ext === 'ndjson') return 'jsonl';
  return null;
}

/** Guesses the format of pasted text: JSON array, JSON Lines, tab- or comma-separated. */
export function sniffFormat(text: string): ValuesFormat {
  const t = text.trimStart();
  if (t.startsWith('[')) return 'json';
  if (t.startsWith('{')) return 'jsonl';
  const head = t.split(/\r?\n/, 1)[0] ?? '';
  return head.includes('\t') && !head.includes(',') ? 'tsv' : 'csv';
}

/** A JSON value as a cell: strings as they are, numbers and booleans as JSON writes them. */
function cellText(v: unknown, where: string, key: string): string {
  if (typeof v === 'string') return v;
  if (typeof v === 'number' || typeof v === 'boolean') return String(v);
  throw new Error(`${where}: "${key}" is ${v === null ? 'null' : typeof v}; a value must be text or a number`);
}

function objectRow(o: unknown, where: string): ValueRow {
  if (typeof o !== 'object' || o === null || Array.isArray(o)) throw new Error(`${where}: expected an object like {"name": "Tom"}`);
  return Object.fromEntries(Object.entries(o).map(([k, v]) => [k, cellText(v, where, k)]));
}

/**
 * Parses a values table.
 * @param format how to read it (default: sniffed from the text).
 * @throws Error naming the line/row for malformed JSON, a row that is not an object, a nested
 *   value, a CSV row with more cells than the header, an empty or repeated column name, a key named
 *   twice in a JSON row, UTF-16 text, or a table with no rows.
 */
export function parseValues(text: string, format: ValuesFormat = sniffFormat(text)): ValuesTable {
  assertUtf8Text(text, 'values: the table');
  let rows: ValueRow[];
  if (format === 'json') {
    const data = readStrictJson(text, 'values');
    if (!Array.isArray(data)) throw new Error('values: a JSON file must hold an array of objects, one per prompt');
    rows = data.map((o, i) => objectRow(o, `values row ${i + 1}`));
  } else if (format === 'jsonl') {
    rows = [];
    text.split(/\r?\n/).forEach((line, i) => {
      if (!line.trim()) return;
      const o = readStrictJson(line, `values line ${i + 1}`);
      rows.push(objectRow(o, `values line ${i + 1}`));
    });
  } else {
    const all = (format === 'tsv' ? tsvParseRows : csvParseRows)(text.replace(/^\uFEFF/, '')).filter((r) => r.some((c) => c.trim() !== ''));
    const [cols = [], ...body] = all;
    if (cols.some((c) => c.trim() === '')) throw new Error('values: every column needs a name in the header row');
    cols.forEach((c, j) => {
      const first = cols.indexOf(c);
      if (first !== j) throw new Error(`values: the header names the column "${c}" twice (columns ${first + 1} and ${j + 1}); a row would keep only one of its values — rename or drop one`);
    });
    body.forEach((r, i) => {
      if (r.length > cols.length) throw new Error(`values row ${i + 1}: ${r.length} cells but the header names ${cols.length} columns (a comma inside a value needs "quotes")`);
    });
    rows = body.map((r) => Object.fromEntries(cols.map((c, j) => [c, r[j] ?? ''])));
  }
  if (rows.length === 0) throw new Error('values: the table has no rows (one row per prompt)');
  const columns: string[] = [];
  for (const r of rows) for (const k of Object.keys(r)) if (!columns.includes(k)) columns.push(k);
  return { columns, rows };
}
