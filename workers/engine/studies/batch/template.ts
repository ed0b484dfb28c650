/**
 * Prompt templates of a batch study: text with `{variable}` slots filled from one row of the values
 * table (`{{` and `}}` write literal braces). The futures are templates too, so each prompt can name
 * its own (" {answer}" vs " {foil}"), and a plain list of prompts is the template "{prompt}" with
 * futures "{good}" / "{bad}".
 */
import type { ValueRow, ValuesTable } from './values';

export interface StudyTemplate {
  prompt: string;
  good: string;
  bad: string;
  /**
   * The corrupted variant of the prompt (patch_recovery: the clean prompt's value at the chosen
   * cell is patched into it), e.g. the prompt with the names swapped; same token length.
   */
  corrupt?: string;
  /** The variable a plot puts on its x axis by default (e.g. "n"). */
  x?: string;
  /** The metric a plot shows by default (e.g. "sequence_margin"). */
  y?: string;
  /** What the study measures, shown beside it. */
  description?: string;
}

/** A list of prompts with their own futures: columns prompt, good, bad (and corrupt, when the table has it). */
export const PROMPT_LIST_TEMPLATE: StudyTemplate = { prompt: '{prompt}', good: '{good}', bad: '{bad}' };

/** The prompt-list template for a table: with a `corrupt` column, each prompt's corrupted variant. */
export function promptListTemplate(columns: readonly string[]): StudyTemplate {
  return columns.includes('corrupt') ? { ...PROMPT_LIST_TEMPLATE, corrupt: '{corrupt}' } : PROMPT_LIST_TEMPLATE;
}

/** One prompt of the batch: the row's variables and the filled-in texts. */
export interface BatchPrompt {
  /** 0-based row of the values table. */
  index: number;
  vars: ValueRow;
  prompt: string;
  good: string;
  bad: string;
  /** The filled-in corrupted variant (template.corrupt), if the template has one. */
  corrupt?: string;
}

const SLOT = /\{\{|\}\}|\{([^{}]*)\}/g;

/** The variable names a template uses, in order of first use. */
export function templateVariables(text: string): string[] {
  const out: string[] = [];
  for (const m of text.matchAll(SLOT)) if (m[1] !== undefined && !out.includes(m[1])) out.push(m[1]);
  return out;
}

/**
 * Fills one template text from a row.
 * @throws Error naming the variable when the row has no such column, or for an empty `{}`.
 */
export function fill(text: string, row: ValueRow, what = 'template'): string {
  return text.replace(SLOT, (m, name: string | undefined) => {
    if (m === '{{') return '{';
    if (m === '}}') return '}';
    if (!name) throw new Error(`${what}: "{}" names no variable (write {{ for a literal brace)`);
    if (!(name in row)) throw new Error(`${what}: {${name}} has no column in the values table`);
    return row[name];
  });
}

/**
 * Parses a template file: JSON {"prompt", "good", "bad", "corrupt"?, "x"?, "y"?, "description"?}.
 * @throws Error for invalid JSON or a missing or non-text field.
 */
export function parseTemplate(text: string): StudyTemplate {
  let o: unknown;
  try { o = JSON.parse(text); } catch (e) { throw new Error(`template: not valid JSON (${(e as Error).message}); write {"prompt": "…{name}…", "good": " {a}", "bad": " {b}"}`); }
  if (typeof o !== 'object' || o === null || Array.isArray(o)) throw new Error('template: expected an object with "prompt", "good" and "bad"');
  const r = o as Record<string, unknown>;
  for (const k of ['prompt', 'good', 'bad']) {
    if (typeof r[k] !== 'string' || (r[k] as string).length === 0) throw new Error(`template: "${k}" must be non-empty text`);
  }
  for (const k of ['x', 'y', 'description', 'corrupt']) if (r[k] !== undefined && typeof r[k] !== 'string') throw new Error(`template: "${k}" must be text`);
  return { prompt: r.prompt as string, good: r.good as string, bad: r.bad as string, ...(r.x ? { x: r.x as string } : {}), ...(r.y ? { y: r.y as string } : {}), ...(r.description ? { description: r.description as string } : {}), ...(r.corrupt ? { corrupt: r.corrupt as string } : {}) };
}

/**
 * Every prompt of the study, one per row.
 * @throws Error before anything runs when a variable of the template or the futures has no column,
 *   or a filled-in prompt or future is empty (naming the row).
 */
export function expandStudy(t: StudyTemplate, table: ValuesTable): BatchPrompt[] {
  for (const [what, text] of [['template', t.prompt], ['good future', t.good], ['bad future', t.bad], ['corrupt template', t.corrupt ?? '']] as const) {
    const missing = templateVariables(text).filter((v) => v && !table.columns.includes(v));
    if (missing.length) throw new Error(`${what}: ${missing.map((v) => `{${v}}`).join(', ')} ${missing.length === 1 ? 'has' : 'have'} no column in the values table (columns: ${table.columns.join(', ')})`);
  }
  if (t.x !== undefined && !table.columns.includes(t.x)) throw new Error(`template: the plot variable "${t.x}" is not a column of the values table`);
  return table.rows.map((vars, index) => {
    const p: BatchPrompt = { index, vars, prompt: fill(t.prompt, vars), good: fill(t.good, vars, 'good future'), bad: fill(t.bad, vars, 'bad future'), ...(t.corrupt ? { corrupt: fill(t.corrupt, vars, 'corrupt template') } : {}) };
    for (const k of ['prompt', 'good', 'bad'] as const) if (p[k].length === 0) throw new Error(`values row ${index + 1}: the ${k === 'prompt' ? 'prompt' : `${k} future`} is empty`);
    return p;
  });
}
