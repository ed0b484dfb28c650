/**
 * The runner's chat turn (issue #27): --system and --tools render the prompt as the user turn of the
 * chat template with a system prompt and the tools offered, and --good / --bad may each be a tool
 * call, written as JSON {"tool_call": {"name": …, "arguments": {…}}}: the tokens the template writes
 * for an assistant turn calling that tool (workers/engine/conversation.ts toolCallFuture);
 * --enable-thinking true|false sets the template's enable_thinking. All of it is checked before any
 * model work (and, once the model is read, --enable-thinking against its template: cli/main.ts).
 */
import * as fs from 'node:fs';
import { toolCallInput, toolsInput, type ToolSpec } from '../workers/engine/experiment';
import type { ChatTurn, FutureInput, PromptInput } from '../workers/engine/prompt';

/** The flags a chat turn reads. */
export interface ChatTurnFlags {
  prompt: string;
  'chat-template': boolean;
  system?: string;
  tools?: string;
  'enable-thinking'?: boolean;
}

/**
 * --tools: a JSON file (or, as --experiment writes it, the JSON array itself) of tools
 * [{"type": "function", "function": {"name", "description"?, "parameters"?}}].
 * @throws Error naming the flag: no such file, not JSON, or a tool the list refuses (experiment.ts toolsInput).
 */
export function readToolsFlag(v: string): ToolSpec[] {
  const inline = v.trimStart().startsWith('[');
  if (!inline && !fs.existsSync(v)) throw new Error(`--tools ${v}: no such file (a JSON list of tools, e.g. [{"type": "function", "function": {"name": "read_file"}}])`);
  const text = inline ? v : fs.readFileSync(v, 'utf8');
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch (e) {
    throw new Error(`--tools ${inline ? '(inline JSON)' : v}: not valid JSON (${(e as Error).message})`);
  }
  return toolsInput(json, `--tools ${inline ? '(inline JSON)' : v}`);
}

/**
 * --good / --bad as the engine reads them: text ("|" between alternatives), or a tool call when
 * the value is a JSON object whose one key is "tool_call".
 * @throws Error naming the flag for a value that starts like a tool call but is not one.
 */
export function futureOfFlag(v: string, which: 'good' | 'bad'): FutureInput {
  if (!/^\s*\{\s*"tool_call"/.test(v)) return { text: v };
  let o: unknown;
  try {
    o = JSON.parse(v);
  } catch {
    throw new Error(`--${which}: a tool call is JSON {"tool_call": {"name": …, "arguments": {…}}}; this is not JSON`);
  }
  const keys = o && typeof o === 'object' && !Array.isArray(o) ? Object.keys(o) : [];
  if (keys.length !== 1) throw new Error(`--${which}: a tool call is {"tool_call": {…}} with no other key (got ${keys.map((k) => `"${k}"`).join(', ')})`);
  try {
    return { toolCall: toolCallInput(JSON.stringify((o as { tool_call: unknown }).tool_call)) };
  } catch (e) {
    throw new Error(`--${which}: ${(e as Error).message}`);
  }
}

/** The prompt as the engine reads it: with the chat template, the system prompt and tools given. */
export function chatTurn(f: ChatTurnFlags): PromptInput {
  return { prompt: f.prompt, ...turnOfFlags(f) };
}

/** The chat turn alone (commands whose study renders several prompts, each in this turn): chat template, system prompt, tools, enable_thinking. */
export function turnOfFlags(f: Omit<ChatTurnFlags, 'prompt'>): ChatTurn {
  return {
    chatTemplate: f['chat-template'],
    ...(f.system !== undefined ? { system: f.system } : {}),
    ...(f.tools !== undefined ? { tools: readToolsFlag(f.tools) } : {}),
    ...(f['enable-thinking'] !== undefined ? { enableThinking: f['enable-thinking'] } : {}),
  };
}

/** The chat turn's own flags of a command's flags (for commands whose futures are text only, so checkChatTurn reads no tool call in them). */
export function turnFlags(f: Omit<ChatTurnFlags, 'prompt'>): Omit<ChatTurnFlags, 'prompt'> {
  return { 'chat-template': f['chat-template'], system: f.system, tools: f.tools, 'enable-thinking': f['enable-thinking'] };
}

/**
 * Checks the chat turn's flags together, before the model is read: --system, --tools and
 * --enable-thinking need --chat-template true; a tool-call future needs them and must name a tool of --tools.
 * @throws Error saying which flag and why.
 */
export function checkChatTurn(f: Omit<ChatTurnFlags, 'prompt'> & { good?: string; bad?: string }): void {
  const chat = f['chat-template'];
  const what = { system: 'renders a system prompt', tools: 'renders a tool list', 'enable-thinking': 'reads enable_thinking' } as const;
  for (const k of ['system', 'tools', 'enable-thinking'] as const) {
    if (f[k] !== undefined && !chat) throw new Error(`--${k} needs --chat-template true: only the chat template ${what[k]}`);
  }
  const names = f.tools !== undefined ? readToolsFlag(f.tools).map((t) => t.function.name) : [];
  for (const which of ['good', 'bad'] as const) {
    const v = f[which];
    if (v === undefined) continue;
    const fut = futureOfFlag(v, which);
    if (!fut.toolCall) continue;
    if (!chat) throw new Error(`--${which} is a tool call, which needs --chat-template true (and --tools naming "${fut.toolCall.name}")`);
    if (!names.includes(fut.toolCall.name)) throw new Error(`--${which} calls "${fut.toolCall.name}", which is not in --tools (${names.length ? names.join(', ') : 'none given'})`);
  }
}
