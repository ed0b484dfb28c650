import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CpuBackend } from '../../workers/engine/backend/cpu';
import { Engine } from '../../workers/engine/engine';
import { NodeFiles } from '../../workers/engine/io/node_files';
import { sampleToken, seededRandom } from '../../workers/engine/analysis/sampling';
import { logSoftmax, realModel } from '../reference_math';

/**
 * The documented sampler (analysis/sampling.ts, api.ts GenerateRequest): temperature ≤ 0 is greedy
 * (first maximum); otherwise a draw from softmax(log p / temperature) over the top-k most likely
 * tokens (k = 0: all). Checked against an independent implementation of that definition fed the
 * same uniform stream (exact ids), and by a chi-square goodness-of-fit test over many draws.
 */

/** mulberry32 (Tommy Ettinger's public-domain generator), written out here independently. */
function mulberry32(seed: number): () => number {
  let s = seed >>> 0;
  return () => {
    s = (s + 0x6d2b79f5) | 0;
    let t = Math.imul(s ^ (s >>> 15), 1 | s);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/**
 * The sampling definition: candidates in vocabulary order (k = 0) or the k highest log-probs in
 * descending order (ties: lower id first); weights exp((log p − max) / temperature); the first
 * candidate whose cumulative weight reaches u · Σ weights, u uniform in [0, 1).
 */
function referenceSample(lp: ArrayLike<number>, temperature: number, k: number, u: number): number {
  const ids = Array.from({ length: lp.length }, (_, i) => i);
  if (temperature <= 0) return ids.reduce((best, i) => (lp[i] > lp[best] ? i : best), 0);
  const cand = k > 0 && k < lp.length ? [...ids].sort((a, b) => lp[b] - lp[a] || a - b).slice(0, k) : ids;
  const max = Math.max(...cand.map((i) => lp[i]));
  const w = cand.map((i) => Math.exp((lp[i] - max) / temperature));
  const target = u * w.reduce((s, x) => s + x, 0);
  let cum = 0;
  for (let j = 0; j < cand.length; j++) {
    cum += w[j];
    if (target <= cum) return cand[j];
  }
  return cand[cand.length - 1];
}

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

  it('temperature 0 is greedy (first maximum), whatever the generator', () => {
    const tie = Float32Array.from([0.1, 0.5, 0.5, 0.2]);
    expect(sampleToken(tie, 0, 0, () => 0.99)).toBe(1);
    expect(sampleToken(Float32Array.from(LP), 0, 3, () => 0.5)).toBe(0);
  });

  it.each([[0.7, 0], [1.6, 0], [0.8, 3], [1.3, 4]])('temperature %s, top-k %s: chi-square over 20000 draws (seed 11) within the 0.1 %% critical value', (temp, k) => {
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

describe('Engine.generate samples its first token from the reference distribution', () => {
  const m = realModel('stories260K');
  const p = m.ref.prompts[2]; // "The cat was very": a flat top 5
  let e: Engine;
  beforeAll(async () => { e = await Engine.load(new NodeFiles(m.dir), new CpuBackend()); });
  afterAll(() => e.dispose());

  it('for 40 seeds at temperature 0.8, top-k 5, the first id equals the definition applied to the reference logits', async () => {
    const lp = logSoftmax((p as unknown as { last_prompt_position_logits: number[] }).last_prompt_position_logits);
    const got: number[] = [], want: number[] = [];
    for (let seed = 0; seed < 40; seed++) {
      const g = await e.generate({ prompt: p.prompt, good: { ids: [[3]] }, bad: { ids: [[4]] }, maxNewTokens: 1, temperature: 0.8, topK: 5, seed });
      got.push(g.ids[0]);
      want.push(referenceSample(lp, 0.8, 5, mulberry32(seed)()));
    }
    expect(got).toEqual(want);
    expect(new Set(got).size).toBeGreaterThan(2); // the draws really vary with the seed
  });
});
