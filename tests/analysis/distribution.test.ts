import { describe, expect, it } from 'vitest';
import { entropy, topIds } from '../../workers/engine/analysis/distribution';
import { seededRandom } from '../../workers/engine/analysis/sampling';

/**
 * The next-token summaries of the branch explorer (analysis/distribution.ts) against closed forms:
 * Shannon entropy H = −Σ p log p of distributions whose H is known, and the top-k ids against a
 * full sort of the vocabulary (decreasing log-prob, ties to the lower id) written out here.
 */
const log = Math.log;

describe('entropy', () => {
  it('uniform over V tokens: log V; two tokens p, 1 − p: −p log p − (1 − p) log(1 − p); one certain token: 0', () => {
    for (const V of [1, 2, 7, 512]) expect(entropy(new Float64Array(V).fill(-log(V)))).toBeCloseTo(log(V), 12);
    const p = 0.2;
    expect(entropy([log(p), log(1 - p)])).toBeCloseTo(-p * log(p) - (1 - p) * log(1 - p), 12);
    expect(entropy([0])).toBe(0);
  });

  it('tokens of probability 0 (log-prob −∞) contribute 0, not NaN', () => {
    expect(entropy([-Infinity, log(0.5), -Infinity, log(0.5)])).toBeCloseTo(log(2), 12);
    expect(entropy([0, -Infinity])).toBe(0);
  });
});

describe('topIds', () => {
  /** The definition: every id sorted by decreasing log-prob, ties to the lower id, the first k. */
  const bySort = (lp: ArrayLike<number>, k: number) => {
    const ids = Array.from({ length: lp.length }, (_, i) => i).sort((a, b) => lp[b] - lp[a] || a - b).slice(0, k);
    return { ids, logProbs: ids.map((i) => lp[i]) };
  };

  it('the k most likely ids and their log-probs in decreasing order, as a full sort gives them (random rows, k = 1 … V + 2)', () => {
    const r = seededRandom(11);
    for (let row = 0; row < 20; row++) {
      const V = 1 + Math.floor(r() * 40);
      // coarse values so that ties occur
      const lp = Float32Array.from({ length: V }, () => -Math.floor(r() * 8));
      for (let k = 1; k <= V + 2; k++) expect(topIds(lp, k)).toEqual(bySort(lp, k));
    }
  });

  it('ties go to the lower id; k = 0 gives nothing; k past V gives all V', () => {
    expect(topIds([-1, -2, -1, -1, -3], 2)).toEqual({ ids: [0, 2], logProbs: [-1, -1] });
    expect(topIds([-3, -1, -2, -1], 3)).toEqual({ ids: [1, 3, 2], logProbs: [-1, -1, -2] });
    expect(topIds([-1, -2], 0)).toEqual({ ids: [], logProbs: [] });
    expect(topIds([-2, -1, -3], 5)).toEqual({ ids: [1, 0, 2], logProbs: [-1, -2, -3] });
    // increasing values: each new id enters at the front and the last one leaves
    expect(topIds([-5, -4, -3, -2, -1], 2)).toEqual({ ids: [4, 3], logProbs: [-1, -2] });
  });
});
