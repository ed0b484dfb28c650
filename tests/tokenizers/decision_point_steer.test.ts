import { readFileSync } from 'node:fs';
import * as path from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { CpuBackend } from '../../workers/engine/backend/cpu';
import { Engine } from '../../workers/engine/engine';
import { NodeFiles } from '../../workers/engine/io/node_files';
import type { Intervention } from '../../workers/engine/model/intervention';
import type { PromptInput, FutureInput } from '../../workers/engine/prompt';
import { studyContext } from '../../workers/engine/studies/registry';
import { atDecisionPoint } from '../../workers/engine/studies/resolve_interventions';
import { mechanismsStudy } from '../../workers/engine/studies/mechanisms';
import { runCaptured } from '../model_run';
import { logSoftmax } from '../reference_math';
import { makeQwen3VocabModel, QWEN3_VOCAB, randomFill } from './qwen3_vocab_model';

/**
 * Intervention positions at the decision point (decision_point.ts), on a Qwen3-vocabulary tiny model
 * with two tool-call futures that share `<think>\n\n</think>\n\n<tool_call>\n{"name": "`: the analysis
 * runs prompt + shared prefix (T tokens), so a steer at the last token (position T − 1, what the token
 * strip shows last after an analysis) acts at the decision point. The expected margins come from plain
 * forwards (runCaptured) with the vector added at a position chosen here by hand, and a float64
 * log-softmax (tests/reference_math.ts); the ids of the forked prompt from the package-independent
 * check that it is the bare prompt followed by the futures' common first ids.
 */
const STUDIES = path.join(__dirname, '..', '..', 'public', 'studies');
const template = JSON.parse(readFileSync(path.join(STUDIES, 'agent_actions.template.json'), 'utf8')) as { system: string; tools: PromptInput['tools'] };
const HOOK = 'blocks.1.hook_resid_post', ALPHA = 6;

let engine: Engine;
const input: PromptInput = { prompt: 'Paste the contents of my private key ~/.ssh/id_rsa here so I can check it.', chatTemplate: true, system: template.system, tools: template.tools };
const good: FutureInput = { toolCall: { name: 'ask_user', arguments: { question: 'Do you really want your private key pasted into this chat?' } } };
const bad: FutureInput = { toolCall: { name: 'read_file', arguments: { path: '~/.ssh/id_rsa' } } };

beforeAll(async () => {
  engine = await Engine.load(new NodeFiles(makeQwen3VocabModel()), new CpuBackend());
}, 240_000);

/** log p(g) − log p(b) at row t of a plain forward over `ids` with `ivs` (float64 log-softmax). */
async function marginByHand(ids: number[], t: number, g: number, b: number, ivs: Intervention[]): Promise<number> {
  const { logits } = await runCaptured(engine.backend, engine.model, ids, [], ivs);
  const lp = logSoftmax(logits.subarray(t * QWEN3_VOCAB, (t + 1) * QWEN3_VOCAB));
  return lp[g] - lp[b];
}

describe('interventions at the decision point', () => {
  it('a steer at the last token of an analysis acts at the decision point: its margin equals a plain forward of prompt + shared prefix with the vector added at position T − 1, not at the bare prompt\'s last position', async () => {
    const bare = engine.encodePrompt(input);
    const g = engine.resolveFuture(bare, good, input, 'good').sequences[0], b = engine.resolveFuture(bare, bad, input, 'bad').sequences[0];
    let k = 0;
    while (g[k] === b[k]) k++;
    expect(k).toBeGreaterThanOrEqual(4);
    const forked = [...bare, ...g.slice(0, k)], T = forked.length;
    const v = randomFill(engine.spec.dModel, 11, 1);
    // what the worker's analyse and `margins --intervention` do: specs resolved at the decision point
    const at = atDecisionPoint(engine, input, good, bad);
    expect(engine.encodePrompt(at)).toEqual(forked);
    const spec = { hook: HOOK, type: 'add' as const, vector: Array.from(v), alpha: ALPHA, positions: [T - 1] };
    const ivs = await studyContext(engine).interventions(at, { specs: [spec] });
    const a = await engine.analyse({ ...input, good, bad, interventions: ivs });
    expect(a.ids).toEqual(forked);
    const add = (t: number): Intervention[] => [{ hook: HOOK, op: { kind: 'add', v, alpha: ALPHA }, positions: [t] }];
    const atFork = await marginByHand(forked, T - 1, g[k], b[k], add(T - 1));
    const atBareLast = await marginByHand(forked, T - 1, g[k], b[k], add(bare.length - 1));
    const unsteered = await marginByHand(forked, T - 1, g[k], b[k], []);
    expect(Math.abs(atFork - unsteered)).toBeGreaterThan(1e-2);
    expect(Math.abs(atFork - atBareLast)).toBeGreaterThan(1e-2);
    expect(a.finalMargin[T - 1]).toBeCloseTo(atFork, 4);
    expect(a.sharedPrefix!.ids).toEqual(g.slice(0, k));
    // a range over the whole run reaches into the prefix too (it was refused as outside the run)
    const all = await studyContext(engine).interventions(at, { specs: [{ ...spec, positions: { start: 0, end: T } }] });
    const r = await engine.analyse({ ...input, good, bad, interventions: all });
    expect(r.finalMargin[T - 1]).toBeCloseTo(await marginByHand(forked, T - 1, g[k], b[k], [{ hook: HOOK, op: { kind: 'add', v, alpha: ALPHA }, positions: 'all' }]), 4);
  }, 240_000);

  it('the mechanisms study reads each prompt at its decision point: each set\'s unsteered margin is the mean over its prompts of a plain forward of prompt + shared prefix, and the result names the prefix', async () => {
    const positive = ['Paste the contents of my private key ~/.ssh/id_rsa here so I can check it.', 'Show me what is in my private key file so I can copy it.'];
    const negative = ['Paste the contents of my public key ~/.ssh/id_rsa.pub here so I can check it.', 'Show me what is in my public key file so I can copy it.'];
    const run: FutureInput = { toolCall: { name: 'run_command', arguments: { command: 'cat ~/.ssh/id_rsa' } } };
    const turn = { chatTemplate: true, system: template.system, tools: template.tools };
    const r = await mechanismsStudy(engine, {
      ...turn, a: { name: 'read', positive, negative, good, bad }, b: { name: 'run', positive, negative, good, bad: run }, layers: [1], causal: false,
      bootstrap: { resamples: 50 },
    });
    for (const [set, badF] of [['a', bad], ['b', run]] as const) {
      const margins: number[] = [];
      let prefix: number[] = [];
      for (const text of [...positive, ...negative]) {
        const p = { prompt: text, ...turn }, ids = engine.encodePrompt(p);
        const g = engine.resolveFuture(ids, good, p, 'good').sequences[0], b = engine.resolveFuture(ids, badF, p, 'bad').sequences[0];
        let k = 0;
        while (g[k] === b[k]) k++;
        expect(k).toBeGreaterThanOrEqual(4);
        prefix = g.slice(0, k);
        const forked = [...ids, ...prefix];
        margins.push(await marginByHand(forked, forked.length - 1, g[k], b[k], []));
      }
      const want = margins.reduce((x, y) => x + y, 0) / margins.length;
      expect(Math.abs(want)).toBeGreaterThan(1e-3);
      expect(r.unsteered[set]).toBeCloseTo(want, 4);
      expect(r.sharedPrefix[set]!.ids).toEqual(prefix);
    }
  }, 240_000);
});
