import { describe, expect, it } from 'vitest';
import { logSoftmaxCpu } from '../../workers/engine/ops/logits.cpu';
import { parseSpec, toIntervention } from '../../workers/engine/steering/spec';
import { routeStudy } from '../../workers/engine/studies/route';
import { sharedPath } from '../shared';
import { runCaptured } from '../model_run';
import { runCli } from '../cli_run';
import { moeFixture } from './moe_fixture';

/**
 * The route margin grid (studies/route.ts) against an independent computation on qwen2_moe-tiny
 * (a dense middle layer): per (sparse layer, expert), the expert banned at every position through
 * the JSON spec path, one full forward, Δ = log p(good) − log p(bad) of the first tokens by hand.
 * And `branchpoint route` prints the same numbers.
 */
const PROMPT = 'Once upon a time', GOOD = ' the', BAD = ' a';

describe('route margin on qwen2_moe-tiny', () => {
  const f = moeFixture('qwen2_moe');

  it('warns when the futures share their first token (Δ and the grid pulled to 0), and not when they differ', async () => {
    const same = await routeStudy(f.engine, { prompt: PROMPT, good: { text: GOOD }, bad: { text: GOOD + ' end' } });
    const shared = same.good!.firstIds.filter((id) => same.bad!.firstIds.includes(id));
    expect(shared.length).toBeGreaterThan(0);
    expect(same.warnings!.some((w) => w.includes(`(id ${shared[0]})`))).toBe(true);
    const apart = await routeStudy(f.engine, { prompt: PROMPT, good: { text: GOOD }, bad: { text: BAD } });
    expect(apart.warnings!.some((w) => /share|both futures start/.test(w))).toBe(false);
  });

  it('equals banning each expert at every position by hand; dense layer 1 has no row; routing matches the hooks', async () => {
    const r = await routeStudy(f.engine, { prompt: PROMPT, good: { text: GOOD }, bad: { text: BAD } });
    const ids = f.engine.encodePrompt({ prompt: PROMPT });
    const g = r.good!.firstIds, bd = r.bad!.firstIds;
    expect(g.length).toBe(1);
    const V = f.engine.spec.dVocab, E = r.nExperts;
    const marginOf = (logits: Float32Array) => {
      const lp = logSoftmaxCpu(logits.subarray(logits.length - V), V);
      return lp[g[0]] - lp[bd[0]];
    };
    const base = await runCaptured(f.b, f.engine.model, ids, ['blocks.0.mlp.hook_expert_indices']);
    expect(r.margin).toBeCloseTo(marginOf(base.logits), 6);
    expect(Array.from(r.layers[0].expertIndices)).toEqual(Array.from(base.captured.get('blocks.0.mlp.hook_expert_indices')!));
    expect(r.layers.map((x) => x.layer)).toEqual([0, 2]);
    for (let l = 0; l < r.nLayers; l++) {
      for (let e = 0; e < E; e++) {
        const cell = r.routeMargin![l * E + e];
        if (l === 1) { expect(cell).toBeNaN(); continue; }
        const iv = toIntervention(parseSpec({ hook: `blocks.${l}.mlp.hook_router_logits`, type: 'ban_experts', experts: [e] }), f.engine.spec, { nPrompt: ids.length });
        const run = await runCaptured(f.b, f.engine.model, ids, [], [iv]);
        expect(cell).toBeCloseTo(marginOf(run.logits) - r.margin!, 5);
      }
    }
    expect(Array.from(r.routeMargin!).some((v) => Math.abs(v) > 1e-3)).toBe(true);
  });

  it('banned at the decision position only: equals the by-hand ban at the last token; an expert it did not choose gives 0 exactly', async () => {
    const r = await routeStudy(f.engine, { prompt: PROMPT, good: { text: GOOD }, bad: { text: BAD }, banAt: 'decision' });
    expect(r.banAt).toBe('decision');
    const ids = f.engine.encodePrompt({ prompt: PROMPT }), T = ids.length;
    const V = f.engine.spec.dVocab, E = r.nExperts, k = r.topK;
    const g = r.good!.firstIds[0], bd = r.bad!.firstIds[0];
    const marginOf = (logits: Float32Array) => { const lp = logSoftmaxCpu(logits.subarray(logits.length - V), V); return lp[g] - lp[bd]; };
    let zeros = 0;
    for (const lr of r.layers) {
      const last = Array.from(lr.expertIndices.subarray((T - 1) * k, T * k));
      for (let e = 0; e < E; e++) {
        const cell = r.routeMargin![lr.layer * E + e];
        if (!last.includes(e)) { expect(cell).toBe(0); zeros++; continue; }
        const iv = toIntervention(parseSpec({ hook: `blocks.${lr.layer}.mlp.hook_router_logits`, type: 'ban_experts', experts: [e], positions: [T - 1] }), f.engine.spec, { nPrompt: T });
        expect(cell).toBeCloseTo(marginOf((await runCaptured(f.b, f.engine.model, ids, [], [iv])).logits) - r.margin!, 5);
        expect(Math.abs(cell)).toBeGreaterThan(0);
      }
    }
    expect(zeros).toBe(r.layers.length * (E - k));
  });

  it('branchpoint route prints the routing and the grid; a dense model and one future alone are refused', async () => {
    const out = await runCli(['route', '--model', f.dir, '--prompt', PROMPT, '--good', GOOD, '--bad', BAD]);
    expect(out.code).toBe(0);
    const j = JSON.parse(out.out) as { layers: number[]; route_margin: (number | null)[][]; router_logits: number[][][]; expert_indices: number[][][] };
    expect(j.layers).toEqual([0, 2]);
    expect(j.route_margin[1]).toEqual([null, null, null, null]);
    expect(j.router_logits[0][0]).toHaveLength(4);
    expect(j.expert_indices[1][0]).toHaveLength(2);
    const one = await runCli(['route', '--model', f.dir, '--prompt', PROMPT, '--good', GOOD]);
    expect(one.code).not.toBe(0);
    expect(one.err).toContain('--bad is missing');
    const dense = await runCli(['route', '--model', sharedPath('fixtures', 'llama-tiny'), '--prompt', PROMPT]);
    expect(dense.err).toContain('not a mixture-of-experts model');
  }, 60_000);
});
