/**
 * Prompt sets for span attribution (studies/span_faithfulness.ts; `branchpoint attribute --set`, the
 * Attribution view's set file): a JSON array, or JSONL with one object per line, of
 *   {"prompt": TEXT, "good"?: TEXT, "bad"?: TEXT, "spans": [{"label": L, "start": S, "end": E} | {"label": L, "text": TEXT}]}
 * Spans are token ranges [start, end) or a text that a run of whole tokens spells (resolved against
 * the tokenizer by the study). Keys outside these are refused, so a misspelt key is not silently
 * ignored.
 */
import { assertUtf8Text, readStrictJson } from './strict_json';

/** A span as the file gives it. */
export type SpanSetSpan = { label: string; start: number; end: number } | { label: string; text: string };

/** One prompt of the file. */
export interface SpanSetFileRow { prompt: string; good?: string; bad?: string; spans: SpanSetSpan[] }

const ROW_KEYS = new Set(['prompt', 'good', 'bad', 'spans']);

function readSpan(v: unknown, where: string): SpanSetSpan {
  if (typeof v !== 'object' || v === null || Array.isArray(v)) throw new Error(`${where}: a span is an object {"label", "start", "end"} or {"label", "text"}`);
  const o = v as Record<string, unknown>;
  for (const k of Object.keys(o)) if (!['label', 'start', 'end', 'text'].includes(k)) throw new Error(`${where}: unknown key "${k}" (a span has label and start/end, or label and text)`);
  if (typeof o.label !== 'string' || o.label.trim() === '') throw new Error(`${where}: "label" must be a non-empty string`);
  if ('text' in o) {
    if ('start' in o || 'end' in o) throw new Error(`${where}: give "text" or "start"/"end", not both`);
    if (typeof o.text !== 'string' || o.text === '') throw new Error(`${where}: "text" must be a non-empty string`);
    return { label: o.label, text: o.text };
  }
  if (!Number.isInteger(o.start) || !Number.isInteger(o.end)) throw new Error(`${where}: "start" and "end" must be whole token positions`);
  return { label: o.label, start: o.start as number, end: o.end as number };
}

function readRow(v: unknown, where: string): SpanSetFileRow {
  if (typeof v !== 'object' || v === null || Array.isArray(v)) throw new Error(`${where}: each prompt is an object {"prompt", "spans", "good"?, "bad"?}`);
  const o = v as Record<string, unknown>;
  for (const k of Object.keys(o)) if (!ROW_KEYS.has(k)) throw new Error(`${where}: unknown key "${k}" (use ${[...ROW_KEYS].join(', ')})`);
  if (typeof o.prompt !== 'string' || o.prompt === '') throw new Error(`${where}: "prompt" must be a non-empty string`);
  for (const k of ['good', 'bad'] as const) if (k in o && (typeof o[k] !== 'string' || o[k] === '')) throw new Error(`${where}: "${k}" must be a non-empty string`);
  if (!Array.isArray(o.spans) || o.spans.length === 0) throw new Error(`${where}: "spans" must be a non-empty array`);
  return { prompt: o.prompt, ...(o.good !== undefined ? { good: o.good as string } : {}), ...(o.bad !== undefined ? { bad: o.bad as string } : {}), spans: o.spans.map((s, j) => readSpan(s, `${where}, span ${j + 1}`)) };
}

/**
 * Reads a span prompt set (.json: an array; .jsonl / .ndjson: one object per line, blank lines skipped).
 * @throws Error naming the file and the line or entry at fault: another extension, not UTF-8, bad
 *   JSON, an unknown key, a missing or empty prompt or spans, a span without a label or range.
 */
export function parseSpanSet(file: string, text: string): SpanSetFileRow[] {
  const ext = file.toLowerCase().match(/\.(jsonl|ndjson|json)$/)?.[1];
  if (!ext) throw new Error(`${file}: a span prompt set is .json (an array) or .jsonl (one object per line)`);
  assertUtf8Text(text, file);
  let rows: SpanSetFileRow[];
  if (ext === 'json') {
    const v = readStrictJson(text, file);
    if (!Array.isArray(v)) throw new Error(`${file}: the top level must be an array of prompts`);
    rows = v.map((r, i) => readRow(r, `${file}, entry ${i + 1}`));
  } else {
    rows = text.split(/\r?\n/).map((line, i) => ({ line, i })).filter((x) => x.line.trim() !== '').map(({ line, i }) => readRow(readStrictJson(line, `${file}, line ${i + 1}`), `${file}, line ${i + 1}`));
  }
  if (rows.length === 0) throw new Error(`${file}: no prompts`);
  return rows;
}
