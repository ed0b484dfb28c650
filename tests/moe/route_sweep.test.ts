import { describe, expect, it } from 'vitest';
import { parseSpec, toIntervention } from '../../workers/engine/steering/spec';
import { drawRouterMasks } from '../../workers/engine/analysis/router_masks';
import { routeSweep } from '../../workers/engine/studies/route_sweep';
import { sharedPath } from '../shared';
import { runCaptured } from '../model_run';
import { runCli } from '../cli_run';
import { moeFixture } from './moe_fixture';

/**
 * The router-mask sweep (studies/route_sweep.ts, RoSais) on mixtral-tiny against an independent
 * computation: each reported mask applied as ban_experts specs (the JSON path) in one plain
 * forward, log p of the target's first tokens by a float64 log-softmax and log-sum-exp written
 * here, rise and margin change by subtraction, the worst mask and the R-7 quantiles by hand. The
 * masks are checked against their definition (m distinct sparse layers, 1..E−k experts banned,
 * seeded); `branchpoint route-sweep` prints the same numbers; bad flags are refused first.
 */
const PROMPT = 'The quick brown fox', GOOD = ' jumps', BAD = ' runs| walks';

/** log Σ_{i ∈ ids} softmax(row)_i in float64. */
function logProbOf(row: ArrayLike<number>, ids: readonly number[]): number {
  let m = -Infinity;
  for (let i = 0; i < row.length; i++) m = Math.max(m, row[i]);
  let z = 0;
  for (let i = 0; i < row.length; i++) z += Math.exp(row[i] - m);
  const s = ids.reduce((acc, i) => acc + Math.exp(row[i] - m), 0);
  return Math.log(s) - Math.log(z);
}

/** The R-7 quantile (linear interpolation between order statistics). */
function quantile(xs: readonly number[], q: number): number {
  const s = [...xs].sort((a, b) => a - b), h = (s.length - 1) * q, lo = Math.floor(h);
  return lo + 1 < s.length ? s[lo] + (h - lo) * (s[lo + 1] - s[lo]) : s[lo];
}

describe('route-sweep on mixtral-tiny', () => {
  const f = moeFixture('mixtral');

  it('each mask\'s rise, margin change, the worst mask and the quantiles equal an independent computation', async () => {
    const r = await routeSweep(f.engine, { prompt: PROMPT, good: { text: GOOD }, bad: { text: BAD }, masks: 12, maskSize: 2, seed: 7 });
    const ids = f.engine.encodePrompt({ prompt: PROMPT });
    const V = f.engine.spec.dVocab, T = ids.length;
    const g = r.good.firstIds, bd = r.bad.firstIds;
    expect(bd.length).toBe(2); // a token set: log p sums the alternatives
    const score = (logits: Float32Array) => {
      const row = logits.subarray((T - 1) * V, T * V);
      return { good: logProbOf(row, g), bad: logProbOf(row, bd) };
    };
    const s0 = score((await runCaptured(f.b, f.engine.model, ids, [])).logits);
    expect(r.target).toBe('bad');
    expect(r.logProb).toBeCloseTo(s0.bad, 5);
    expect(r.margin).toBeCloseTo(s0.good - s0.bad, 5);
    const rises: number[] = [];
    for (const [i, mask] of r.masks.entries()) {
      const ivs = mask.map((x) => toIntervention(parseSpec({ hook: `blocks.${x.layer}.mlp.hook_router_logits`, type: 'ban_experts', experts: x.experts }), f.engine.spec, { nPrompt: T }));
      const si = score((await runCaptured(f.b, f.engine.model, ids, [], ivs)).logits);
      rises.push(si.bad - s0.bad);
      expect(r.rise[i], `mask ${i}`).toBeCloseTo(si.bad - s0.bad, 5);
      expect(r.marginChange[i], `mask ${i}`).toBeCloseTo((si.good - si.bad) - (s0.good - s0.bad), 5);
    }
    expect(rises.some((x) => Math.abs(x) > 1e-3)).toBe(true); // the masks do move the target
    expect(r.worst).toBe(rises.indexOf(Math.max(...rises)));
    [0, 0.1, 0.25, 0.5, 0.75, 0.9, 1].forEach((q, i) => expect(r.quantiles[i]).toBeCloseTo(quantile(rises, q), 5));
  });

  it('masks follow their definition and the seed; target good measures the good future', async () => {
    const routers = [0, 1, 2], E = 4, k = 2;
    const a = drawRouterMasks(routers, E, k, 200, 2, 3);
    for (const mask of a) {
      expect(mask).toHaveLength(2);
      expect(new Set(mask.map((x) => x.layer)).size).toBe(2);
      expect(mask.map((x) => x.layer)).toEqual([...mask.map((x) => x.layer)].sort((p, q) => p - q));
      for (const x of mask) {
        expect(routers).toContain(x.layer);
        expect(x.experts.length).toBeGreaterThanOrEqual(1);
        expect(x.experts.length).toBeLessThanOrEqual(E - k);
        expect(new Set(x.experts).size).toBe(x.experts.length);
        expect(x.experts.every((e) => e >= 0 && e < E)).toBe(true);
      }
    }
    // every layer pair and both ban sizes turn up over 200 draws
    expect(new Set(a.map((m) => m.map((x) => x.layer).join(','))).size).toBe(3);
    expect(new Set(a.flatMap((m) => m.map((x) => x.experts.length)))).toEqual(new Set([1, 2]));
    expect(drawRouterMasks(routers, E, k, 200, 2, 3)).toEqual(a);
    expect(drawRouterMasks(routers, E, k, 200, 2, 4)).not.toEqual(a);
    const req = { prompt: PROMPT, good: { text: GOOD }, bad: { text: BAD }, masks: 4, maskSize: 1, seed: 1 };
    const good = await routeSweep(f.engine, { ...req, target: 'good' }), bad = await routeSweep(f.engine, req);
    expect(good.masks).toEqual(bad.masks);
    // Δ change = rise(good) − rise(bad); log p(good) − Δ = log p(bad)
    good.masks.forEach((_, i) => expect(good.rise[i] - good.marginChange[i]).toBeCloseTo(bad.rise[i], 9));
    expect(good.logProb - good.margin).toBeCloseTo(bad.logProb, 9);
  });

  it('refuses a mask size outside the routers, no masks, a dense model', async () => {
    await expect(routeSweep(f.engine, { prompt: PROMPT, good: { text: GOOD }, bad: { text: BAD }, masks: 3, maskSize: 4 })).rejects.toThrow(/1\.\.3 routers/);
    await expect(routeSweep(f.engine, { prompt: PROMPT, good: { text: GOOD }, bad: { text: BAD }, masks: 0, maskSize: 1 })).rejects.toThrow(/number of masks/);
    expect(() => drawRouterMasks([0], 2, 2, 1, 1, 0)).toThrow(/no router mask leaves k experts/);
  });

  it('branchpoint route-sweep prints the study\'s numbers; bad flags and a dense model are refused before any forward', async () => {
    const r = await routeSweep(f.engine, { prompt: PROMPT, good: { text: GOOD }, bad: { text: BAD }, masks: 5, maskSize: 3, seed: 11 });
    const out = await runCli(['route-sweep', '--model', f.dir, '--prompt', PROMPT, '--good', GOOD, '--bad', BAD, '--masks', '5', '--mask-size', '3', '--seed', '11']);
    expect(out.code).toBe(0);
    const j = JSON.parse(out.out) as { rise: number[]; worst_mask: { index: number; routers: unknown; rise: number }; quantiles: { q: number; rise: number }[]; masks: unknown };
    expect(j.masks).toEqual(r.masks);
    j.rise.forEach((x, i) => expect(x).toBeCloseTo(r.rise[i], 6));
    expect(j.worst_mask).toEqual({ index: r.worst, routers: r.masks[r.worst], rise: j.rise[r.worst] });
    expect(j.quantiles.map((x) => x.q)).toEqual([0, 0.1, 0.25, 0.5, 0.75, 0.9, 1]);
    j.quantiles.forEach((x, i) => expect(x.rise).toBeCloseTo(r.quantiles[i], 6));
    const big = await runCli(['route-sweep', '--model', f.dir, '--prompt', PROMPT, '--good', GOOD, '--bad', BAD, '--masks', '5', '--mask-size', '4']);
    expect(big.code).not.toBe(0);
    expect(big.err).toContain('--mask-size "4": this model has 3 routers');
    const none = await runCli(['route-sweep', '--model', f.dir, '--prompt', PROMPT, '--good', GOOD, '--bad', BAD, '--mask-size', '1']);
    expect(none.err).toMatch(/--masks/);
    const dense = await runCli(['route-sweep', '--model', sharedPath('fixtures', 'llama-tiny'), '--prompt', PROMPT, '--good', GOOD, '--bad', BAD, '--masks', '2', '--mask-size', '1']);
    expect(dense.err).toContain('not a mixture-of-experts model');
  }, 60_000);
});
