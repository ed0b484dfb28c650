import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CpuBackend } from '../../workers/engine/backend/cpu';
import { Engine } from '../../workers/engine/engine';
import { NodeFiles } from '../../workers/engine/io/node_files';
import { logSoftmaxCpu } from '../../workers/engine/ops/logits.cpu';
import { BranchExplorer } from '../../workers/engine/studies/branching/explorer';
import { continuationSeed, forkPoints, type ForkProgress } from '../../workers/engine/studies/branching/forks';
import { pathOf } from '../../workers/engine/studies/branching/tree';
import { runCli } from '../cli_run';
import { sharedPath } from '../shared';

/** Fork points (Bigelow et al. arXiv 2412.07961) on stories260K: gaps, outcome margins, seeds, the runner. */
const MODEL = sharedPath('models', 'stories260K');
const PROMPT = 'Lily and Tom went to the park. Lily gave the ball to';
const N = 6, S = 3;
const req = { prompt: PROMPT, good: { text: ' Tom' }, bad: { text: ' Lily' }, maxNewTokens: N, stopAtEos: false };
const GREEDY = { temperature: 0, topK: 0, seed: 0, steered: false };
let e: Engine;
beforeAll(async () => { e = await Engine.load(new NodeFiles(MODEL), new CpuBackend()); });
afterAll(() => e.dispose());

describe('fork points', () => {
  it('with horizon 0 each outcome is the margin right after the forced token, as a full forward gives it; the gap is p1 − p2 there', async () => {
    const x = await BranchExplorer.start(e, req, GREEDY);
    const r = await forkPoints(x, { samples: 1, alternatives: 2, horizon: 0 });
    const path = pathOf(x.tree, 0).ids;
    const T = x.tree.promptIds.length;
    const good = e.resolveFuture(x.tree.promptIds, req.good, req).firstIds[0], bad = e.resolveFuture(x.tree.promptIds, req.bad, req).firstIds[0];
    for (const p of r.points.slice(0, 3)) {
      const before = logSoftmaxCpu((await e.run(path.slice(0, p.position), { logits: 'last' })).logits, 512);
      const sorted = Array.from(before).sort((a, b) => b - a);
      expect(p.gap).toBeCloseTo(Math.exp(sorted[0]) - Math.exp(sorted[1]), 5);
      expect(p.forced).toHaveLength(3);
      for (const f of p.forced) {
        const lp = logSoftmaxCpu((await e.run([...path.slice(0, p.position), f.id], { logits: 'last' })).logits, 512);
        expect(f.outcomes[0]).toBeCloseTo(lp[good] - lp[bad], 4);
      }
      expect(p.score).toBeCloseTo(Math.max(Math.abs(p.forced[1].mean - p.forced[0].mean), Math.abs(p.forced[2].mean - p.forced[0].mean)), 10);
      expect(p.step).toBe(p.position - T);
    }
  });

  it('are reproducible on a fixed seed, change with the seed, and equal the runner\'s `forks` output', async () => {
    const run = async (seed: number) => forkPoints(await BranchExplorer.start(e, req, GREEDY), { samples: S, seed });
    const progress: ForkProgress[] = [];
    const a = await run(5);
    const x = await BranchExplorer.start(e, req, GREEDY);
    const b = await forkPoints(x, { samples: S, seed: 5 }, [], (p) => progress.push(p));
    expect(b.points.map((p) => p.score)).toEqual(a.points.map((p) => p.score));
    // every position scored; each continuation from new token k runs the N − k positions to the end: 2·S·Σ(N − k) = S·N·(N + 1)
    expect(progress.at(-1)).toEqual({ done: N * 2 * S, total: N * 2 * S, scored: N, positions: N, tokens: S * N * (N + 1), tokensTotal: S * N * (N + 1) });
    const c = await run(6);
    expect(c.points.map((p) => p.forced.map((f) => f.outcomes))).not.toEqual(a.points.map((p) => p.forced.map((f) => f.outcomes)));
    const cli = await runCli(['forks', '--model', MODEL, '--prompt', PROMPT, '--good', ' Tom', '--bad', ' Lily', '--max-new-tokens', String(N), '--samples', String(S), '--seed', '5']);
    expect(cli.code).toBe(0);
    const out = JSON.parse(cli.out);
    expect(out.trunk_ids).toEqual(x.tree.nodes[0].ids);
    expect(out.fork_points).toHaveLength(N);
    out.fork_points.forEach((p: { score: number; gap: number; forced: { outcomes: number[] }[] }, i: number) => {
      expect(Math.abs(p.score - a.points[i].score)).toBeLessThan(1e-9);
      expect(Math.abs(p.gap - a.points[i].gap)).toBeLessThan(1e-9);
      expect(p.forced.map((f) => f.outcomes)).toEqual(a.points[i].forced.map((f) => f.outcomes));
    });
  });

  it('cancel keeps the points scored so far; seeds do not depend on the order of the work', async () => {
    const ctrl = new AbortController();
    const x = await BranchExplorer.start(e, req, GREEDY);
    const full = await forkPoints(x, { samples: 2, seed: 1 });
    const r = await forkPoints(x, { samples: 2, seed: 1 }, [], (p) => { if (p.done === 8) ctrl.abort(); }, ctrl.signal);
    expect(r.cancelled).toBe(true);
    expect(r.points.filter((p) => !Number.isNaN(p.score))).toHaveLength(2);
    expect(r.points[1].score).toBe(full.points[1].score);
    expect(new Set([0, 1, 2].flatMap((i) => [0, 1].map((j) => continuationSeed(1, 30, i, j)))).size).toBe(6);
  });

  it('bad requests fail with a readable message', async () => {
    const x = await BranchExplorer.start(e, { ...req, maxNewTokens: 2 }, GREEDY);
    await expect(forkPoints(x, { samples: 0 })).rejects.toThrow(/samples must be a positive integer/);
    await expect(forkPoints(x, { samples: 1, node: 9 })).rejects.toThrow(/no node 9/);
  });
});
