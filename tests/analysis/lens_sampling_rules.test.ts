import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CpuBackend } from '../../workers/engine/backend/cpu';
import { NodeFiles } from '../../workers/engine/io/node_files';
import { LensStacks, lensTopK } from '../../workers/engine/model/lens';
import { checkSamplingRule, drawToken, sampleToken } from '../../workers/engine/analysis/sampling';
import { loadTransformer } from '../../workers/engine/model/load';
import type { Transformer } from '../../workers/engine/model/transformer';
import { F32_TOL, realModel, topK } from '../reference_math';

/**
 * The rules around the lens and the sampler that the definition tests do not reach: the on-demand
 * lens's kept stacks (LensStacks: handles, the last `keep` kept, the cell bounds), lensTopK's input
 * checks and its per-row slices (two rows at once against the float64 lens of the stories260K
 * reference residual streams, tests/reference_math.ts), and the sampling rule's checks.
 */
const m = realModel('stories260K');
const P = m.ref.prompts[0];
const arr = m.arrays(P);
let model: Transformer;
beforeAll(async () => { ({ model } = await loadTransformer(new NodeFiles(m.dir), new CpuBackend(), undefined, { contextLength: 16 })); });
afterAll(() => model.dispose());

describe('LensStacks', () => {
  it('hands out handles 1, 2, 3…, keeps the last two, and reads h^l_t at row l·T + t', () => {
    const s = new LensStacks();
    const stack = (base: number) => Float32Array.from({ length: 3 * 4 * 2 }, (_, i) => base + i); // L1 = 3, T = 4, d = 2
    expect([s.remember(stack(0), 3, 4), s.remember(stack(100), 3, 4), s.remember(stack(200), 3, 4)]).toEqual([1, 2, 3]);
    expect(() => s.row(1, 0, 0, 2)).toThrow('this analysis is no longer held by the worker (a newer one replaced it): press Analyse again');
    expect(Array.from(s.row(2, 0, 0, 2))).toEqual([100, 101]);
    expect(Array.from(s.row(3, 2, 1, 2))).toEqual([200 + 2 * (2 * 4 + 1), 201 + 2 * (2 * 4 + 1)]);
    expect(Array.from(s.row(3, 2, 3, 2))).toEqual([222, 223]);
    for (const [l, t] of [[-1, 0], [3, 0], [1.5, 0], [0, -1], [0, 4], [0, 0.5]]) {
      expect(() => s.row(3, l, t, 2)).toThrow(`lens cell (layer ${l}, position ${t}) is outside the grid of 3 layers × 4 positions`);
    }
    s.clear();
    expect(() => s.row(3, 0, 0, 2)).toThrow('no longer held');
    const one = new LensStacks(1);
    one.remember(stack(0), 3, 4);
    one.remember(stack(0), 3, 4);
    expect(() => one.row(1, 0, 0, 2)).toThrow('no longer held');
  });
});

describe('lensTopK', () => {
  it('two rows at once: each row\'s top-5 ids and log-probs are the float64 lens of its reference residual (h^2_1 and h^5_4); nothing left allocated', async () => {
    const rows = [m.resid(arr, P, 2, 1), m.resid(arr, P, 5, 4)];
    const both = new Float32Array(2 * m.D);
    both.set(rows[0], 0);
    both.set(rows[1], m.D);
    const live = (model.backend as CpuBackend).liveTensors();
    const got = await lensTopK(model, both, 5);
    expect((model.backend as CpuBackend).liveTensors(), 'every intermediate released').toBe(live);
    expect(got).toHaveLength(2);
    rows.forEach((h, r) => {
      const want = topK(m.lens(h), 5);
      expect(Array.from(got[r].ids)).toEqual(want.ids);
      got[r].logProbs.forEach((x, i) => expect(Math.abs(x - want.values[i])).toBeLessThanOrEqual(F32_TOL));
    });
  });

  it('refuses rows that are not whole d_model rows and k outside [1, d_vocab]; k = 1 and k = d_vocab are taken', async () => {
    const h = Float32Array.from(m.resid(arr, P, 1, 0));
    await expect(lensTopK(model, new Float32Array(0), 3)).rejects.toThrow('lens rows: 0 values are not whole rows of d_model = 64');
    await expect(lensTopK(model, new Float32Array(65), 3)).rejects.toThrow('lens rows: 65 values are not whole rows of d_model = 64');
    for (const k of [0, 513, 1.5]) await expect(lensTopK(model, h, k)).rejects.toThrow(`lens top-k: k = ${k} is outside [1, 512]`);
    expect((await lensTopK(model, h, 1))[0].ids).toHaveLength(1);
    expect((await lensTopK(model, h, 512))[0].ids).toHaveLength(512);
  });
});

describe('the sampling rule', () => {
  it('temperature must be finite and ≥ 0, top-k a whole number ≥ 0', () => {
    expect(() => checkSamplingRule(0, 0)).not.toThrow();
    expect(() => checkSamplingRule(0.7, 40)).not.toThrow();
    for (const t of [Number.NaN, -0.5, Number.POSITIVE_INFINITY]) {
      expect(() => checkSamplingRule(t, 0)).toThrow(`temperature must be a finite number ≥ 0 (0 = greedy), not ${t}`);
    }
    for (const k of [-1, 2.5]) expect(() => checkSamplingRule(1, k)).toThrow(`top-k must be a whole number ≥ 0 (0 = all tokens), not ${k}`);
  });

  it('a NaN log-prob is refused, also at token 0', () => {
    const lp = Float32Array.from([Number.NaN, -1, -2]);
    expect(() => sampleToken(lp, 0, 0, () => 0.5)).toThrow('cannot sample: the log-prob of token 0 is NaN');
    expect(() => sampleToken(Float32Array.from([-1, -2, Number.NaN]), 1, 0, () => 0.5)).toThrow('cannot sample: the log-prob of token 2 is NaN');
  });

  it('u at the top of [0, 1) draws the last candidate even when rounding leaves a hair of u after every weight', () => {
    // Inverse CDF: u·Σw lies in the last candidate's interval when u → 1. With the weights
    // exp(lp − max) of these log-probs and u = 1 − 2⁻⁵³ (the largest double below 1, which
    // Math.random may return), float64 subtraction of the four weights leaves ≈ 2.8e-17 > 0 of u·Σw:
    // the walk ends without a pick and the last candidate is returned by the fall-through.
    const top = 1 - 2 ** -53;
    expect(drawToken([7, 3, 9, 4], [0, -1.5, -2, -1.41], 1, () => top)).toBe(4);
    expect(drawToken([7, 3, 9, 4], [0, -1.5, -2, -1.41], 1, () => 0)).toBe(7);
  });
});
