import { describe, expect, it } from 'vitest';
import { sampleToken, seededRandom } from '../../workers/engine/analysis/sampling';
import { logSoftmax } from '../reference_math';
import { mulberry32, referenceSample } from '../sampling_reference';

/**
 * The documented sampler (analysis/sampling.ts, api.ts GenerateRequest): temperature ≤ 0 is greedy
 * (first maximum); otherwise a draw from softmax(log p / temperature) over the top-k most likely
 * tokens (k = 0: all). Checked against an independent implementation of that definition fed the
 * same uniform stream (exact ids), and by a chi-square goodness-of-fit test over many draws.
 * Through Engine.generate on a real model: integration/sampling_generate.test.ts.
 */

/** Probabilities the definition gives each id. */
function probabilities(lp: ArrayLike<number>, temperature: number, k: number): number[] {
  const ids = Array.from({ length: lp.length }, (_, i) => i);
  const cand = new Set(k > 0 && k < lp.length ? [...ids].sort((a, b) => lp[b] - lp[a] || a - b).slice(0, k) : ids);
  const w = ids.map((i) => (cand.has(i) ? Math.exp(lp[i] / temperature) : 0));
  const z = w.reduce((s, x) => s + x, 0);
  return w.map((x) => x / z);
}

/**
 * Upper 0.1 % points of the chi-square distribution (NIST/SEMATECH e-Handbook of Statistical
 * Methods, table 1.3.6.7.4), by degrees of freedom.
 */
const CHI2_999: Record<number, number> = { 2: 13.816, 3: 16.266, 7: 24.322 };

const LP = logSoftmax([2.0, 1.2, 0.9, 0.3, -0.4, -1.0, 0.95, -2.5]);

describe('sampleToken against the definition', () => {
  it('seededRandom is mulberry32: the same stream as an independent implementation', () => {
    for (const seed of [0, 1, 42, 2 ** 31 + 7]) {
      const a = seededRandom(seed), b = mulberry32(seed);
      for (let i = 0; i < 1000; i++) expect(a()).toBe(b());
    }
  });

  it.each([[0.7, 0], [1, 0], [1.5, 3], [0.5, 2], [2, 8]])('temperature %s, top-k %s: exact ids for 2000 draws from seed 7', (temp, k) => {
    const r1 = seededRandom(7), r2 = mulberry32(7);
    for (let i = 0; i < 2000; i++) expect(sampleToken(Float32Array.from(LP), temp, k, r1)).toBe(referenceSample(LP, temp, k, r2()));
  });

  it('edge cases of the definition: cumulative weight reaching u·Σw exactly, ties at the top-k boundary, a cold temperature', () => {
    // Two equal weights and u = 1/2: the first candidate's cumulative weight reaches u·Σw exactly.
    expect(sampleToken(Float32Array.from([0, 0]), 1, 0, () => 0.5)).toBe(0);
    // Six tied tokens, top-k 2: the candidates are the two lowest ids.
    const tied = new Float32Array(6).fill(Math.log(1 / 6));
    const rand = seededRandom(3);
    const drawn = new Set(Array.from({ length: 500 }, () => sampleToken(tied, 1, 2, rand)));
    expect([...drawn].sort()).toEqual([0, 1]);
    // Temperature 0.01 on log-probs spanning 10 nats: weights shifted by the maximum stay finite and the argmax (id 3) wins.
    const lp = Float32Array.from([-9, -4, -6, -0.1, -10]);
    for (let i = 0; i < 50; i++) expect(sampleToken(lp, 0.01, 0, rand)).toBe(3);
    for (let i = 0; i < 50; i++) expect(sampleToken(lp, 0.01, 3, rand)).toBe(3);
    // Flat log-probs (max −6.2, as over ~500 tokens) at temperature 0.01: unshifted weights would underflow to 0.
    const flat = Float32Array.from([-7, -6.5, -6.2, -8]);
    for (let i = 0; i < 50; i++) expect(sampleToken(flat, 0.01, 0, rand)).toBe(2);
    // Ties across the top-k boundary: among ids 1, 2, 3 (equal) the two lowest are kept.
    const boundary = Float32Array.from([-3, -1, -1, -1, -2, -1]);
    const kept = new Set(Array.from({ length: 500 }, () => sampleToken(boundary, 1, 2, rand)));
    expect([...kept].sort()).toEqual([1, 2]);
  });

  it('temperature 0 is greedy (first maximum), whatever the generator', () => {
    const tie = Float32Array.from([0.1, 0.5, 0.5, 0.2]);
    expect(sampleToken(tie, 0, 0, () => 0.99)).toBe(1);
    expect(sampleToken(Float32Array.from(LP), 0, 3, () => 0.5)).toBe(0);
  });

  it.each([[0.7, 0], [1.6, 0], [0.8, 3], [1.3, 4]])('temperature %s, top-k %s: chi-square over 20000 draws (seed 11) below the chi-square 0.999 quantile', (temp, k) => {
    const n = 20000;
    const rand = seededRandom(11);
    const counts = new Array(LP.length).fill(0);
    for (let i = 0; i < n; i++) counts[sampleToken(Float32Array.from(LP), temp, k, rand)]++;
    const p = probabilities(LP, temp, k);
    let chi2 = 0, df = -1;
    p.forEach((pi, i) => {
      if (pi === 0) { expect(counts[i]).toBe(0); return; } // outside the top k: never drawn
      chi2 += (counts[i] - n * pi) ** 2 / (n * pi);
      df++;
    });
    expect(chi2).toBeLessThan(CHI2_999[df]);
  });
});
