/**
 * Whole conversations through the model's chat template (system prompt, tools, several turns),
 * and tool-call futures: the exact tokens the template writes for an assistant turn that calls a
 * tool, tokenised in the context of the rendered conversation (issue #27, Δ^act).
 */
import { renderChatTemplate } from './chat_template';

/** What these functions read of the tokenizer (prompt.ts TokenizerAdapter has it; declared here so prompt.ts can import this file). */
export interface TemplateTokenizer {
  encode(text: string, addSpecialTokens: boolean): number[];
  readonly hasChatTemplate: boolean;
  chatTemplate(): unknown;
  specialTokens(): Record<string, string>;
}

/** One message as chat templates read it (the Hugging Face chat format). */
export interface ChatMessage {
  role: 'system' | 'user' | 'assistant' | 'tool';
  content: string;
  tool_calls?: { type: 'function'; function: ToolCall }[];
}

/** A tool call: the tool's name and its arguments (a JSON object). */
export interface ToolCall {
  name: string;
  arguments: Record<string, unknown>;
}

/** A conversation to render: messages, the tools offered (JSON-schema function specs), template switches. */
export interface Conversation {
  messages: ChatMessage[];
  /** Tool specs as apply_chat_template's `tools` ({type: 'function', function: {name, description, parameters}}). */
  tools?: Record<string, unknown>[];
  /** Qwen3's enable_thinking (templates without it ignore it). Undefined leaves the template's default. */
  enableThinking?: boolean;
}

/**
 * Renders a conversation with the tokenizer's chat template, with the variables transformers.js's
 * apply_chat_template passes (messages, tools, add_generation_prompt, the special tokens' texts),
 * under chat_template.ts's limits.
 * @throws Error when the tokenizer has no chat template, it is not a string, or it raises / is stopped.
 */
export function renderConversation(tokenizer: TemplateTokenizer, conv: Conversation, addGenerationPrompt: boolean): string {
  if (!tokenizer.hasChatTemplate) throw new Error('the tokenizer has no chat template (tokenizer_config.json chat_template)');
  const template = tokenizer.chatTemplate();
  if (typeof template !== 'string') throw new Error('tokenizer_config.json chat_template is not a string');
  const items: Record<string, unknown> = {
    messages: conv.messages, add_generation_prompt: addGenerationPrompt, tools: conv.tools?.length ? conv.tools : null, documents: null,
    ...tokenizer.specialTokens(),
  };
  if (conv.enableThinking !== undefined) items.enable_thinking = conv.enableThinking;
  return renderChatTemplate(template, items);
}

/**
 * Whether the tokenizer's chat template reads the variable `enable_thinking` (Qwen3's does: false
 * renders the empty `<think>\n\n</think>\n\n` block; Llama 3.1's and Gemma 3's do not): the
 * template's source names it. False without a chat template.
 */
export function templateReadsThinking(tokenizer: TemplateTokenizer): boolean {
  if (!tokenizer.hasChatTemplate) return false;
  const template = tokenizer.chatTemplate();
  return typeof template === 'string' && /\benable_thinking\b/.test(template);
}

/**
 * Token ids of a rendered conversation. The template writes its own special tokens (BOS where the
 * model uses one), so the tokenizer adds none: BOS is never doubled.
 * @returns ids, shape [n_tokens].
 */
export function encodeConversation(tokenizer: TemplateTokenizer, conv: Conversation, addGenerationPrompt = true): number[] {
  return tokenizer.encode(renderConversation(tokenizer, conv, addGenerationPrompt), false);
}

/**
 * The future "the assistant calls `call`": the text the template writes after the generation
 * prompt when the conversation ends with an assistant message whose only content is that tool call
 * (up to and including the template's last closing of the call, e.g. Qwen3's `</tool_call>`, so
 * the turn's end token is not part of the future), tokenised in context: the ids the full rendered
 * text has after the prompt's ids, not the ids of the future's text alone.
 * @param conv the conversation up to the decision point (its rendering with the generation prompt is the prompt).
 * @param call a tool of `conv.tools` by name, with its arguments.
 * @returns text (the future's characters), ids (shape [n_future_tokens]) and promptIds (the prompt's, shape [n_prompt_tokens]).
 * @throws Error when `call.name` is not among conv.tools, or the template does not render tool calls
 *   (the name does not appear in the assistant turn, or the turn does not extend the generation prompt).
 */
export function toolCallFuture(tokenizer: TemplateTokenizer, conv: Conversation, call: ToolCall): { text: string; ids: number[]; promptIds: number[] } {
  const names = (conv.tools ?? []).map(toolName);
  if (!names.includes(call.name)) throw new Error(`the tool call names "${call.name}", which is not in the experiment's tools (${names.length ? names.join(', ') : 'none'})`);
  const prompt = renderConversation(tokenizer, conv, true);
  const called: Conversation = { ...conv, messages: [...conv.messages, { role: 'assistant', content: '', tool_calls: [{ type: 'function', function: call }] }] };
  const full = renderConversation(tokenizer, called, false);
  const nameAt = full.lastIndexOf(JSON.stringify(call.name).slice(1, -1));
  if (!full.startsWith(prompt) || nameAt < prompt.length) {
    throw new Error('this chat template does not write tool calls (an assistant turn with tool_calls renders no call after the generation prompt); use a text future instead');
  }
  const closeAt = full.indexOf('</tool_call>', nameAt);
  const end = closeAt >= 0 ? closeAt + '</tool_call>'.length : full.length;
  const text = full.slice(prompt.length, end);
  const promptIds = tokenizer.encode(prompt, false);
  const fullIds = tokenizer.encode(full.slice(0, end), false);
  if (fullIds.length <= promptIds.length || !promptIds.every((id, i) => fullIds[i] === id)) {
    throw new Error('the tool call merges with the end of the prompt into other tokens, so its ids cannot be separated from the prompt\'s');
  }
  return { text, ids: fullIds.slice(promptIds.length), promptIds };
}

/** A tool spec's name: {type: 'function', function: {name}} or a bare {name}. */
export function toolName(spec: Record<string, unknown>): string {
  const fn = spec.function as { name?: unknown } | undefined;
  const name = fn && typeof fn === 'object' ? fn.name : spec.name;
  return typeof name === 'string' ? name : '';
}
