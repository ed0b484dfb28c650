/**
 * Prompt templates of a batch study: text with `{variable}` slots filled from one row of the values
 * table (`{{` and `}}` write literal braces). The futures are templates too, so each prompt can name
 * its own (" {answer}" vs " {foil}"), and a plain list of prompts is the template "{prompt}" with
 * futures "{good}" / "{bad}".
 */
import type { ValueRow, ValuesTable } from './values';
import { toolCallInput, toolsInput, type ToolSpec } from '../../experiment';

/** How a future of the study is written (the experiment's modes): text ("|" between alternatives), token ids, or a tool call (JSON {"name", "arguments"}). */
export type FutureMode = 'text' | 'ids' | 'tool';
const FUTURE_MODES: readonly FutureMode[] = ['text', 'ids', 'tool'];

export interface StudyTemplate {
  prompt: string;
  good: string;
  bad: string;
  /**
   * How each future is written, a template too ("tool", or "{safe_mode}" filled from the row);
   * absent: text. Written in the file as "good": {"mode": "tool", "value": "{safe_call}"}.
   */
  goodMode?: string;
  badMode?: string;
  /** The system prompt of every prompt (a template; needs the chat template). */
  system?: string;
  /** The tools offered with every prompt (apply_chat_template's `tools`); tool-call futures name one. */
  tools?: ToolSpec[];
  /** The prompts are user turns of the chat template, whatever the chat-template toggle says (a study of tools or a system prompt is one). */
  chatTemplate?: boolean;
  /** With the chat template: its enable_thinking for every prompt (PromptInput.enableThinking; the file's "enable_thinking"); absent: not passed. */
  enableThinking?: boolean;
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
  /** How the filled-in futures are written ('text' unless the template says otherwise). */
  goodMode: FutureMode;
  badMode: FutureMode;
  /** The filled-in system prompt (template.system), if the template has one. */
  system?: string;
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

/** A future of a template file: text, or {"mode": "text"|"ids"|"tool" (or a {slot}), "value": text}. @throws Error naming the field. */
function futureField(v: unknown, k: 'good' | 'bad'): { value: string; mode?: string } {
  if (typeof v === 'string') {
    if (v.length === 0) throw new Error(`template: "${k}" must be non-empty text`);
    return { value: v };
  }
  if (typeof v !== 'object' || v === null || Array.isArray(v)) throw new Error(`template: "${k}" must be non-empty text, or {"mode": "tool", "value": "{call}"}`);
  const o = v as Record<string, unknown>;
  const extra = Object.keys(o).filter((x) => x !== 'mode' && x !== 'value');
  if (extra.length) throw new Error(`template: "${k}" has ${extra.map((x) => `"${x}"`).join(', ')}; a future is {"mode", "value"}`);
  if (typeof o.value !== 'string' || o.value.length === 0) throw new Error(`template: "${k}".value must be non-empty text`);
  if (typeof o.mode !== 'string' || (!FUTURE_MODES.includes(o.mode as FutureMode) && templateVariables(o.mode).length === 0)) {
    throw new Error(`template: "${k}".mode must be ${FUTURE_MODES.map((m) => `"${m}"`).join(', ')} or a {variable} holding one`);
  }
  return { value: o.value, mode: o.mode };
}

/**
 * Parses a template file: JSON {"prompt", "good", "bad", "corrupt"?, "x"?, "y"?, "description"?,
 * "system"?, "tools"?, "chat_template"?, "enable_thinking"?}; a future is text or {"mode", "value"} (the experiment's form,
 * both filled from the row, so "value": "{safe_call}" with "mode": "{safe_mode}" lets rows differ).
 * @throws Error for invalid JSON, a missing or non-text field, a bad future or tool list.
 */
export function parseTemplate(text: string): StudyTemplate {
  let o: unknown;
  try { o = JSON.parse(text); } catch (e) { throw new Error(`template: not valid JSON (${(e as Error).message}); write {"prompt": "…{name}…", "good": " {a}", "bad": " {b}"}`); }
  if (typeof o !== 'object' || o === null || Array.isArray(o)) throw new Error('template: expected an object with "prompt", "good" and "bad"');
  const r = o as Record<string, unknown>;
  if (typeof r.prompt !== 'string' || r.prompt.length === 0) throw new Error('template: "prompt" must be non-empty text');
  const good = futureField(r.good, 'good'), bad = futureField(r.bad, 'bad');
  for (const k of ['x', 'y', 'description', 'corrupt', 'system']) if (r[k] !== undefined && typeof r[k] !== 'string') throw new Error(`template: "${k}" must be text`);
  for (const k of ['chat_template', 'enable_thinking']) if (r[k] !== undefined && typeof r[k] !== 'boolean') throw new Error(`template: "${k}" must be true or false`);
  const tools = r.tools === undefined ? undefined : toolsInput(r.tools, 'template: "tools"');
  return {
    prompt: r.prompt, good: good.value, bad: bad.value,
    ...(good.mode ? { goodMode: good.mode } : {}), ...(bad.mode ? { badMode: bad.mode } : {}),
    ...(r.x ? { x: r.x as string } : {}), ...(r.y ? { y: r.y as string } : {}), ...(r.description ? { description: r.description as string } : {}), ...(r.corrupt ? { corrupt: r.corrupt as string } : {}),
    ...(r.system ? { system: r.system as string } : {}), ...(tools ? { tools } : {}), ...(r.chat_template !== undefined ? { chatTemplate: r.chat_template as boolean } : {}),
    ...(r.enable_thinking !== undefined ? { enableThinking: r.enable_thinking as boolean } : {}),
  };
}

/** A filled-in mode. @throws Error naming the row when it is not one of the modes. */
function modeOf(text: string | undefined, row: ValueRow, index: number, which: 'good' | 'bad'): FutureMode {
  if (text === undefined) return 'text';
  const m = fill(text, row, `${which} future mode`);
  if (!FUTURE_MODES.includes(m as FutureMode)) throw new Error(`values row ${index + 1}: the ${which} future's mode is "${m}"; expected ${FUTURE_MODES.join(', ')}`);
  return m as FutureMode;
}

/**
 * Every prompt of the study, one per row.
 * @throws Error before anything runs when a variable of the template or the futures has no column,
 *   a filled-in prompt or future is empty, a mode is not text/ids/tool, or a tool-call future is not
 *   JSON {"name", "arguments"} naming one of the template's tools (naming the row).
 */
export function expandStudy(t: StudyTemplate, table: ValuesTable): BatchPrompt[] {
  for (const [what, text] of [['template', t.prompt], ['good future', t.good], ['bad future', t.bad], ['corrupt template', t.corrupt ?? ''], ['system prompt', t.system ?? ''], ['good future mode', t.goodMode ?? ''], ['bad future mode', t.badMode ?? '']] as const) {
    const missing = templateVariables(text).filter((v) => v && !table.columns.includes(v));
    if (missing.length) throw new Error(`${what}: ${missing.map((v) => `{${v}}`).join(', ')} ${missing.length === 1 ? 'has' : 'have'} no column in the values table (columns: ${table.columns.join(', ')})`);
  }
  if (t.x !== undefined && !table.columns.includes(t.x)) throw new Error(`template: the plot variable "${t.x}" is not a column of the values table`);
  const names = (t.tools ?? []).map((x) => x.function.name);
  return table.rows.map((vars, index) => {
    const p: BatchPrompt = {
      index, vars, prompt: fill(t.prompt, vars), good: fill(t.good, vars, 'good future'), bad: fill(t.bad, vars, 'bad future'),
      goodMode: modeOf(t.goodMode, vars, index, 'good'), badMode: modeOf(t.badMode, vars, index, 'bad'),
      ...(t.system ? { system: fill(t.system, vars, 'system prompt') } : {}),
      ...(t.corrupt ? { corrupt: fill(t.corrupt, vars, 'corrupt template') } : {}),
    };
    for (const k of ['prompt', 'good', 'bad'] as const) if (p[k].length === 0) throw new Error(`values row ${index + 1}: the ${k === 'prompt' ? 'prompt' : `${k} future`} is empty`);
    for (const k of ['good', 'bad'] as const) {
      if (p[`${k}Mode`] !== 'tool') continue;
      let call: { name: string };
      try { call = toolCallInput(p[k]); } catch (e) { throw new Error(`values row ${index + 1}: the ${k} future: ${(e as Error).message}`); }
      if (!names.includes(call.name)) throw new Error(`values row ${index + 1}: the ${k} future calls "${call.name}", which is not in the template's tools (${names.length ? names.join(', ') : 'none'})`);
    }
    return p;
  });
}
