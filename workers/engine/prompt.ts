/**
 * The prompt codec: prompts and futures to token ids and ids back to display text, over the
 * model's tokenizer (transformers.js), with the chat template rendered under chat_template.ts's
 * limits. Engine holds one per loaded model (Engine.prompts) and delegates its prompt methods here.
 */
import type { PreTrainedTokenizer } from '@huggingface/transformers';
import { renderChatTemplate } from './chat_template';
import { toolCallFuture, type ChatMessage, type Conversation, type ToolCall } from './conversation';
import { contextMessage } from './model/transformer';
import { firstTokenWarning } from './analysis/future_overlap';
import { MAX_PROMPT_CHARS, tokenCharBound } from './prompt_bound';

/** A future as the user writes it. `text`: alternatives separated by "|" form a token set; a
 * multi-token alternative is a branch. `ids`: explicit token sequences (each a branch). */
export interface FutureInput {
  text?: string;
  ids?: number[][];
  /** A tool call (one branch): the tokens the chat template writes for an assistant turn calling it (conversation.ts toolCallFuture). Needs the chat template and the prompt's tools. */
  toolCall?: ToolCall;
}

/** A future resolved to token sequences. log p(future) = logsumexp over sequences of Σ log p(tokens). */
export interface ResolvedFuture {
  sequences: number[][];
  /** Display strings of each sequence's tokens. */
  tokens: string[][];
  /** Distinct first tokens (what the logit lens scores at intermediate layers). */
  firstIds: number[];
}

export interface PromptInput {
  prompt: string;
  /** Wrap the prompt as a user turn with the tokenizer's chat template (generation prompt added). */
  chatTemplate?: boolean;
  /** With the chat template: a system prompt before the user turn. */
  system?: string;
  /** With the chat template: the tools offered (apply_chat_template's `tools`, JSON-schema function specs). */
  tools?: Record<string, unknown>[];
  /**
   * With the chat template: the template variable `enable_thinking` (Qwen3's chat template: false
   * writes the empty `<think>\n\n</think>\n\n` block after the generation prompt, true or absent leaves
   * the model to think). Absent: the variable is not passed (the template's default); templates that
   * do not read it ignore it (templateReadsThinking says which do).
   */
  enableThinking?: boolean;
  /**
   * Token ids teacher-forced after the prompt's ids (the two futures' shared prefix, decision_point.ts):
   * encodePrompt appends them, so every run reads the prompt and then these tokens. Futures are then given as ids.
   */
  forcedIds?: readonly number[];
}

/** A request's chat-template fields apart from its prompt text (the chat turn every prompt of a study shares). */
export type ChatTurn = Omit<PromptInput, 'prompt'>;

/**
 * The PromptInput of `prompt` in `turn`'s chat turn (chat template, system prompt, tools): every
 * study builds its prompts through this, so a request's system prompt and tools cannot be dropped.
 */
export function promptWith(prompt: string, turn: ChatTurn): PromptInput {
  return { prompt, ...chatTurn(turn) };
}

/** Only the chat-turn fields of `req` (a request passed on to another study keeps its system prompt, tools and enable_thinking). */
export function chatTurn(req: ChatTurn): ChatTurn {
  return {
    chatTemplate: req.chatTemplate ?? false, ...(req.system !== undefined ? { system: req.system } : {}), ...(req.tools ? { tools: req.tools } : {}),
    ...(req.enableThinking !== undefined ? { enableThinking: req.enableThinking } : {}),
  };
}

/** The conversation a chat-template prompt renders: [system,] user turn, with its tools and enable_thinking. */
export function promptConversation(p: PromptInput): Conversation {
  const messages: ChatMessage[] = p.system ? [{ role: 'system', content: p.system }] : [];
  messages.push({ role: 'user', content: p.prompt });
  return { messages, tools: p.tools, ...(p.enableThinking !== undefined ? { enableThinking: p.enableThinking } : {}) };
}

/**
 * The tokenizer as the codec reads it, typed: transformers.js declares `chat_template` and
 * `config` (tokenizer_config.json) as `any`, and older releases returned the vocabulary as a
 * plain object; the adapter narrows each to what the codec relies on.
 */
export interface TokenizerAdapter {
  /** Token ids of `text`; `addSpecialTokens` adds the model's special tokens (BOS where it uses one). */
  encode(text: string, addSpecialTokens: boolean): number[];
  decode(ids: readonly number[], skipSpecialTokens: boolean): string;
  /** The vocabulary as (piece, id) pairs. */
  vocabulary(): [string, number][];
  /** Whether tokenizer_config.json has a chat_template. */
  readonly hasChatTemplate: boolean;
  /** The chat template's source as transformers.js resolves it (get_chat_template; a string when well formed). */
  chatTemplate(): unknown;
  /** The special tokens' texts in tokenizer_config.json (bos_token, eos_token, …), as the template variables of apply_chat_template. */
  specialTokens(): Record<string, string>;
  /** The most characters one token covers (prompt_bound.ts tokenCharBound), or null when the tokenizer gives no bound. */
  readonly maxTokenChars?: number | null;
}

/** The special-token keys transformers.js's apply_chat_template passes to the template. */
const SPECIAL_TOKEN_KEYS = ['bos_token', 'eos_token', 'unk_token', 'sep_token', 'pad_token', 'cls_token', 'mask_token'];

/** (piece, id) pairs of a vocabulary: a Map in transformers.js 3+, a plain object in older releases. */
function vocabularyEntries(v: Map<string, number> | Record<string, number>): [string, number][] {
  return v instanceof Map ? [...v.entries()] : Object.entries(v);
}

/** The typed adapter over a transformers.js tokenizer. */
export function adaptTokenizer(tokenizer: PreTrainedTokenizer): TokenizerAdapter {
  // transformers.js keeps the parsed tokenizer.json on the instance (not in its types).
  const tokenizerJson: unknown = (tokenizer as unknown as { _tokenizerJSON?: unknown })._tokenizerJSON;
  const maxTokenChars = tokenCharBound(tokenizerJson);
  return {
    maxTokenChars,
    encode: (text, addSpecialTokens) => tokenizer.encode(text, { add_special_tokens: addSpecialTokens }),
    decode: (ids, skipSpecialTokens) => tokenizer.decode([...ids], { skip_special_tokens: skipSpecialTokens }),
    vocabulary: () => vocabularyEntries(tokenizer.get_vocab()),
    get hasChatTemplate() {
      const template: unknown = tokenizer.chat_template;
      return Boolean(template);
    },
    chatTemplate: () => tokenizer.get_chat_template({}),
    specialTokens() {
      const config: Record<string, unknown> | undefined = tokenizer.config;
      const out: Record<string, string> = {};
      for (const key of SPECIAL_TOKEN_KEYS) {
        const v = config?.[key];
        const text = typeof v === 'string' ? v : v && typeof v === 'object' && 'content' in v ? v.content : undefined;
        if (typeof text === 'string' && text) out[key] = text;
      }
      return out;
    },
  };
}

/** What the codec needs to know of the model: its name in errors, vocabulary size, BOS id and context. */
export interface CodecModel {
  label: string;
  /** Rows of the embedding matrix (config.json vocab_size): token ids must lie below it. */
  dVocab: number;
  bosTokenId: number | null;
  /** max_position_embeddings. */
  nCtx: number;
  /** Positions the KV cache holds (Transformer.contextLength). */
  contextLength: number;
}

export class PromptCodec {
  private byteTokenMap: Record<number, number> | null = null;

  /** @param loadWarnings warnings found at load, repeated by promptWarnings (read when it is called). */
  constructor(readonly tokenizer: TokenizerAdapter, private readonly model: CodecModel, private readonly loadWarnings: readonly string[] = []) {}

  /** Byte-fallback tokens of the vocabulary ("<0x00>" … "<0xFF>", SentencePiece byte_fallback): id → byte. */
  byteTokens(): Record<number, number> {
    if (!this.byteTokenMap) {
      this.byteTokenMap = {};
      for (const [piece, id] of this.tokenizer.vocabulary()) {
        const m = /^<0x([0-9A-Fa-f]{2})>$/.exec(piece);
        if (m) this.byteTokenMap[id] = parseInt(m[1], 16);
      }
    }
    return this.byteTokenMap;
  }

  /**
   * Prompt → ids, with the tokenizer's special tokens (BOS where the model uses one), or through
   * the chat template as one user turn with the generation prompt; then `forcedIds`, if any.
   * @param opts.anyLength tokenize a prompt longer than the context too (for display: the token
   *   strip and the futures' tokens while the user shortens it; promptTooLong says why runs refuse it).
   * @throws Error when the chat template is asked for but the tokenizer has none, or the prompt is
   *   empty or (unless anyLength) longer than the context (max_position_embeddings).
   */
  encodePrompt(p: PromptInput, opts: { anyLength?: boolean } = {}): number[] {
    if (typeof p.prompt !== 'string' || p.prompt.length === 0) throw new Error('the prompt is empty: type some text');
    this.assertTextFits(p.prompt, 'the prompt');
    const { text, special } = this.promptText(p);
    if (p.chatTemplate) this.assertTextFits(text, 'the prompt in its chat template');
    const ids = [...this.tokenizer.encode(text, special), ...(p.forcedIds ?? [])];
    for (const id of p.forcedIds ?? []) {
      if (!Number.isInteger(id) || id < 0 || id >= this.model.dVocab) throw new Error(`the forced prefix: token id ${id} is outside the vocabulary [0, ${this.model.dVocab})`);
    }
    if (ids.length === 0) throw new Error('the prompt is empty: type some text');
    const tooLong = this.promptTooLong(ids.length);
    if (tooLong && !opts.anyLength) throw new Error(tooLong);
    return ids;
  }

  /**
   * Refuses, before any tokenising, a text that cannot fit the context by its length alone: more
   * characters than context × the most characters one token covers (prompt_bound.ts, where the rule
   * is argued), or than MAX_PROMPT_CHARS whatever the tokenizer. Applies with anyLength too: the
   * display would tokenise megabytes for a prompt no run can take.
   * @throws Error "the prompt: N characters are longer than the model's context of C tokens can hold (…); shorten it".
   */
  assertTextFits(text: string, what: string): void {
    const per = this.tokenizer.maxTokenChars ?? null;
    const ctx = this.model.contextLength;
    const limit = per === null ? MAX_PROMPT_CHARS : Math.min(MAX_PROMPT_CHARS, ctx * per);
    if (text.length <= limit) return;
    const why = per !== null && ctx * per <= MAX_PROMPT_CHARS
      ? `no token of this tokenizer covers more than ${per} characters, so the context of ${ctx} tokens holds at most ${limit} characters`
      : `at most ${MAX_PROMPT_CHARS} characters are read`;
    throw new Error(`${what}: ${text.length} characters are longer than the model's context of ${ctx} tokens can hold (${why}); shorten it`);
  }

  /** Why a prompt of `n` tokens cannot run ("the prompt: n tokens are longer than the model's context …; shorten it"), or null when it fits. */
  promptTooLong(n: number): string | null {
    return n > this.model.contextLength ? `the prompt: ${contextMessage(n, this.model.nCtx, this.model.contextLength)}; shorten it` : null;
  }

  /**
   * The text the tokenizer reads for a prompt and whether it adds special tokens (BOS): the prompt
   * as typed with special tokens, or the chat template's rendering of one user turn (which holds
   * its own special tokens) with the variables transformers.js's apply_chat_template passes (and
   * `enable_thinking` when the prompt sets it, as apply_chat_template passes its extra kwargs), under
   * the step, time and size limits of chat_template.ts (a template with a huge loop is stopped).
   * @throws Error when the chat template is asked for but the tokenizer has none, is refused or
   *   stopped (ChatTemplateLimitError), or raises.
   */
  private promptText(p: PromptInput): { text: string; special: boolean } {
    if (!p.chatTemplate) return { text: p.prompt, special: true };
    if (!this.tokenizer.hasChatTemplate) throw new Error(`${this.model.label} has no chat template; switch the chat-template toggle off`);
    const template = this.tokenizer.chatTemplate();
    if (typeof template !== 'string') throw new Error(`${this.model.label}: tokenizer_config.json chat_template is not a string`);
    const special = this.tokenizer.specialTokens();
    const conv = promptConversation(p);
    const thinking = conv.enableThinking !== undefined ? { enable_thinking: conv.enableThinking } : {};
    const text = renderChatTemplate(template, { messages: conv.messages, add_generation_prompt: true, tools: conv.tools?.length ? conv.tools : null, documents: null, ...special, ...thinking });
    return { text, special: false };
  }

  /**
   * Things about a prompt the user should know that do not stop a run: the load's warnings, and a
   * prompt that already starts with the BOS text gets a second BOS from the tokenizer.
   */
  promptWarnings(p: PromptInput): string[] {
    const out: string[] = [...this.loadWarnings];
    const bos = this.model.bosTokenId;
    if (bos !== null && !p.chatTemplate && this.fits(p.prompt)) {
      const bosText = this.tokenizer.decode([bos], false);
      const ids = this.tokenizer.encode(p.prompt, true);
      if (bosText && p.prompt.trimStart().startsWith(bosText) && ids[0] === bos && ids[1] === bos) {
        out.push(`the prompt starts with the BOS text "${bosText}" and the tokenizer adds BOS too, so the model reads two BOS tokens; delete "${bosText}" from the prompt`);
      }
    }
    return out;
  }

  private fits(text: string): boolean {
    try {
      this.assertTextFits(text, '');
      return true;
    } catch {
      return false;
    }
  }

  /** promptWarnings, then a warning when the futures' first tokens overlap (analysis/future_overlap.ts). */
  futureWarnings(p: PromptInput, good: ResolvedFuture, bad: ResolvedFuture): string[] {
    const overlap = firstTokenWarning(good.firstIds, bad.firstIds, (id) => this.tokenizer.decode([id], false));
    return overlap ? [...this.promptWarnings(p), overlap] : this.promptWarnings(p);
  }

  /** Display string of each token, leading spaces kept (decode of the prefix difference). */
  tokenStrings(ids: readonly number[], prefix: readonly number[] = []): string[] {
    return ids.map(this.tokenStream(prefix));
  }

  /**
   * An incremental detokenizer after `prefix`: each call appends one id and returns the text it
   * added (the difference of two decodes, so leading spaces and multi-token characters come out
   * right). Bytes of an unfinished UTF-8 character give '' until the token that completes it, which
   * carries the whole character ("❤" over three byte tokens: '', '', '❤').
   */
  tokenStream(prefix: readonly number[]): (id: number) => string {
    const decode = (ids: number[]) => this.tokenizer.decode(ids, false);
    const seq = [...prefix];
    let prev = seq.length ? decode(seq) : '';
    return (id) => {
      seq.push(id);
      const cur = decode(seq);
      // A byte-fallback token that ends inside a multi-byte character decodes to U+FFFD: hold it
      // (piece '') until the character is complete, so the pieces join back to the text.
      if (cur.endsWith('\uFFFD') && !prev.endsWith('\uFFFD')) return '';
      const piece = cur.startsWith(prev) ? cur.slice(prev.length) : decode([id]);
      prev = cur;
      return piece;
    };
  }

  /**
   * Resolves a future to token sequences. A text alternative is tokenized in context (the tokens
   * that follow the prompt's tokens in encode(prompt + text), the chat template's rendering of the
   * prompt when it is on), so " Tom" gets the same id it has in running text; explicit ids are
   * taken as given.
   * @param name which future it is ('good', 'bad': the request's field), named in the errors.
   * @throws Error for an empty future ("the bad future is empty: …", "the good future “|” gives no
   *   token: …") or an id outside the vocabulary.
   */
  resolveFuture(promptIds: readonly number[], f: FutureInput, prompt: PromptInput, name?: 'good' | 'bad'): ResolvedFuture {
    if (prompt.forcedIds?.length && (f.text || f.toolCall)) throw new Error(`${name ? `the ${name} future` : 'a future'} follows a forced prefix, so it must be given as token ids (decision_point.ts)`);
    const seqs: number[][] = [];
    for (const s of f.ids ?? []) seqs.push([...s]);
    if (f.toolCall) {
      const which = name ? `the ${name} future` : 'a future';
      if (!this.tokenizer.hasChatTemplate) throw new Error(`${which} is a tool call, which only a chat template writes, and ${this.model.label} has none (its tokenizer_config.json has no chat_template): load a chat model whose template takes tools (e.g. Qwen2.5 0.5B Instruct), or write the future as text`);
      if (!prompt.chatTemplate) throw new Error(`${which} is a tool call, which needs the chat template: switch the chat-template toggle on`);
      const call = toolCallFuture(this.tokenizer, promptConversation(prompt), f.toolCall);
      const prefixOk = call.promptIds.length === promptIds.length && promptIds.every((id, i) => call.promptIds[i] === id);
      if (!prefixOk) throw new Error('the tool call was rendered after a different prompt than the one given; re-tokenise the prompt');
      seqs.push(call.ids);
    }
    if (f.text) {
      for (const alt of f.text.split('|')) {
        if (alt.length === 0) continue;
        const { text, special } = this.promptText(prompt);
        this.assertTextFits(alt, name ? `the ${name} future` : 'a future');
        this.assertTextFits(text + alt, name ? `the prompt plus the ${name} future` : 'the prompt plus a future');
        const full = this.tokenizer.encode(text + alt, special);
        const prefixOk = full && full.length > promptIds.length && promptIds.every((id, i) => full[i] === id);
        seqs.push(prefixOk ? full.slice(promptIds.length) : this.tokenizer.encode(alt, false));
      }
    }
    const which = name ? `the ${name} future` : 'a future';
    if (seqs.length === 0 || seqs.some((s) => s.length === 0)) {
      const written = f.text ? `“${f.text}”` : f.ids?.length ? `[${f.ids.map((s) => s.join(' ')).join(' | ')}]` : '';
      throw new Error(`${written ? `${which} ${written} gives no token` : `${which} is empty`}: each future needs at least one token (text, or token ids)`);
    }
    const dVocab = this.model.dVocab;
    for (const s of seqs) for (const id of s) {
      if (!Number.isInteger(id) || id < 0 || id >= dVocab) throw new Error(`${name ? `${which}: ` : ''}token id ${id} is outside the vocabulary [0, ${dVocab})`);
    }
    return {
      sequences: seqs,
      tokens: seqs.map((s) => this.tokenStrings(s, promptIds)),
      firstIds: [...new Set(seqs.map((s) => s[0]))],
    };
  }

  /** The text that follows the prompt's text in decode(prompt + new), leading space kept. */
  continuationText(promptIds: readonly number[], ids: readonly number[]): string {
    if (ids.length === 0) return '';
    const head = this.tokenizer.decode(promptIds, true);
    const full = this.tokenizer.decode([...promptIds, ...ids], true);
    return full.startsWith(head) ? full.slice(head.length) : this.tokenizer.decode(ids, true);
  }
}
