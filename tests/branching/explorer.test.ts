import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import * as fs from 'node:fs';
import { CpuBackend } from '../../workers/engine/backend/cpu';
import { Engine } from '../../workers/engine/engine';
import { NodeFiles } from '../../workers/engine/io/node_files';
import { logSoftmaxCpu } from '../../workers/engine/ops/logits.cpu';
import { BranchExplorer } from '../../workers/engine/studies/branching/explorer';
import { pathOf, validateTree, type DrawSettings } from '../../workers/engine/studies/branching/tree';
import { toIntervention } from '../../workers/engine/steering/spec';
import { sharedPath } from '../shared';

/**
 * The branch explorer on stories260K (CPU backend): forks continue exactly as a greedy decoder
 * that recomputes the whole sequence for every token (Engine.run, no KV cache reuse), and the
 * shared prefix is read from the KV cache, not recomputed (Transformer.positionsRun).
 */
const ref = JSON.parse(fs.readFileSync(sharedPath('models/stories260K/reference/reference.json'), 'utf8'));
const lily = ref.prompts[1];
const N = 24;
const GREEDY: DrawSettings = { temperature: 0, topK: 0, seed: 0, steered: false };
let e: Engine;
beforeAll(async () => { e = await Engine.load(new NodeFiles(sharedPath('models', 'stories260K')), new CpuBackend()); });
afterAll(() => e.dispose());

/** Greedy continuation of `ids` up to `end` positions by full recomputation: one forward from position 0 per token. */
async function greedyByRecomputation(ids: number[], end: number): Promise<number[]> {
  const seq = [...ids];
  while (seq.length < end) {
    const { logits } = await e.run(seq, { logits: 'last' });
    let best = 0;
    for (let i = 1; i < logits.length; i++) if (logits[i] > logits[best]) best = i;
    seq.push(best);
  }
  return seq;
}

const req = { prompt: lily.prompt, good: { text: ' Tom' }, bad: { text: ' Lily' }, maxNewTokens: N };

describe('BranchExplorer', () => {
  it('the greedy trunk is the reference greedy continuation, with the margin of the futures at each step', async () => {
    const x = await BranchExplorer.start(e, req, GREEDY);
    const root = x.tree.nodes[0];
    expect(x.tree.promptIds).toEqual(lily.input_ids);
    expect(root.ids).toEqual(lily.greedy_ids.slice(0, N));
    expect(root.forwarded).toBe(lily.n_prompt + N - 1);
    const a = await e.analyse(req);
    expect(root.margins[0]).toBeCloseTo(a.finalMargin[lily.n_prompt - 1], 5);
  });

  it('a fork to the second alternative equals greedy decoding of prompt + prefix + alternative by full recomputation, and computes only its own positions', async () => {
    const x = await BranchExplorer.start(e, req, GREEDY);
    const T = lily.n_prompt, K = 5;
    const root = x.tree.nodes[0];
    const alt = root.top[K].ids[1];
    expect(root.top[K].ids[0]).toBe(root.ids[K]);
    const before = e.model.positionsRun;
    const node = await x.fork(0, T + K, alt, GREEDY);
    expect(e.model.positionsRun - before).toBe(N - K - 1);
    expect(node.forwarded).toBe(N - K - 1);
    const branchIds = pathOf(x.tree, node.id).ids.slice(T);
    expect(branchIds).toHaveLength(N);
    const want = await greedyByRecomputation([...lily.input_ids, ...root.ids.slice(0, K), alt], T + N);
    expect(branchIds).toEqual(want.slice(T));
    expect(branchIds[K]).toBe(alt);
    expect(node.logProbs[0]).toBeCloseTo(root.top[K].logProbs[1], 6);
  });

  it('forks of forks and forks from a prompt token are exact too, also after another job overwrote the KV cache', async () => {
    const x = await BranchExplorer.start(e, req, GREEDY);
    const T = lily.n_prompt;
    const a = await x.fork(0, T + 3, x.tree.nodes[0].top[3].ids[2], GREEDY);
    const b = await x.fork(a.id, T + 10, a.top[10 - 3].ids[1], GREEDY);
    expect(b.parent).toBe(a.id);
    await e.analyse(req); // another run overwrites the cache: the next fork must recompute its prefix
    const c = await x.fork(a.id, T + 8, a.top[5].ids[1], GREEDY);
    expect(c.forwarded).toBe(T + N - 1);
    const p = await x.fork(0, 4, x.tree.promptStats.top[4].ids.find((id) => id !== lily.input_ids[4])!, GREEDY);
    expect(p.parent).toBe(0);
    for (const n of [a, b, c, p]) {
      const path = pathOf(x.tree, n.id).ids;
      expect(path).toHaveLength(T + N);
      expect(path).toEqual(await greedyByRecomputation(path.slice(0, n.start + 1), T + N));
    }
    expect(validateTree(JSON.parse(JSON.stringify(x.tree))).nodes).toHaveLength(5);
  });

  it('lens margins at the final layer equal log p(chosen) − log p(alternative) of the full forward', async () => {
    const x = await BranchExplorer.start(e, req, GREEDY);
    const T = lily.n_prompt, K = 7;
    const root = x.tree.nodes[0];
    const alts = root.top[K].ids.slice(1, 4);
    const lens = await x.lensMargins(0, T + K, alts);
    expect(lens.margins).toHaveLength(3);
    expect(lens.margins[0]).toHaveLength(e.spec.nLayers + 1);
    const seq = pathOf(x.tree, 0).ids.slice(0, T + K);
    const { logits } = await e.run(seq, { logits: 'last' });
    const lp = logSoftmaxCpu(logits, logits.length);
    alts.forEach((alt, i) => expect(lens.margins[i][e.spec.nLayers]).toBeCloseTo(lp[root.ids[K]] - lp[alt], 4));
  });

  it('seeded sampling is reproducible, and a restored tree forks as the original did', async () => {
    const draw = { temperature: 1, topK: 0, seed: 7, steered: false };
    const x1 = await BranchExplorer.start(e, req, draw);
    const x2 = await BranchExplorer.start(e, req, draw);
    expect(x2.tree.nodes[0].ids).toEqual(x1.tree.nodes[0].ids);
    const T = lily.n_prompt;
    const f1 = await x1.fork(0, T + 2, x1.tree.nodes[0].top[2].ids[1], draw);
    const restored = BranchExplorer.restore(e, validateTree(JSON.parse(JSON.stringify(x2.tree))));
    const f2 = await restored.fork(0, T + 2, x1.tree.nodes[0].top[2].ids[1], draw);
    expect(f2.ids).toEqual(f1.ids);
  });

  it('a fork "with the interventions" is steered on its own positions only, as full recomputation with the intervention from the fork on gives it', async () => {
    const x = await BranchExplorer.start(e, req, GREEDY);
    const T = lily.n_prompt, K = 6;
    const v = Array.from({ length: 64 }, (_, i) => Math.sin(5 * i));
    const iv = toIntervention({ hook: 'blocks.2.hook_resid_post', type: 'add', vector: v, alpha: 6 }, e.spec, { nPrompt: T });
    const alt = x.tree.nodes[0].top[K].ids[1];
    const plain = await x.fork(0, T + K, alt, GREEDY);
    const steered = await x.fork(0, T + K, alt, { ...GREEDY, steered: true }, [iv]);
    expect(steered.forwarded).toBe(N - K - 1);
    const path = pathOf(x.tree, steered.id).ids;
    expect(path).not.toEqual(pathOf(x.tree, plain.id).ids);
    const from = { ...iv, positions: { start: T + K, end: T + N } };
    const seq = path.slice(0, T + K + 1);
    while (seq.length < T + N) {
      const { logits } = await e.run(seq, { logits: 'last', interventions: [from] });
      seq.push(logits.indexOf(Math.max(...logits)));
    }
    expect(path).toEqual(seq);
  });

  it('refuses a fork outside the path or onto the token already there, with a readable message', async () => {
    const x = await BranchExplorer.start(e, { ...req, maxNewTokens: 4 }, GREEDY);
    const T = lily.n_prompt;
    await expect(x.fork(0, T + 4, 5, GREEDY)).rejects.toThrow(/between 1 and/);
    await expect(x.fork(0, T + 1, x.tree.nodes[0].ids[1], GREEDY)).rejects.toThrow(/already the token/);
    await expect(x.fork(0, T + 1, 99999, GREEDY)).rejects.toThrow(/outside the vocabulary/);
  });
});
