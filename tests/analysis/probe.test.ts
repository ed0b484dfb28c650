import { describe, expect, it } from 'vitest';
import { probeActivations } from '../../workers/engine/studies/probe';
import { crossValidate, stratifiedFolds } from '../../workers/engine/analysis/logistic';
import { seededRandom } from '../../workers/engine/analysis/sampling';

function gaussian(seed: number): () => number {
  const r = seededRandom(seed);
  return () => Math.sqrt(-2 * Math.log(1 - r())) * Math.cos(2 * Math.PI * r());
}

/**
 * Synthetic residual streams: rows × n examples × d, isotropic noise, and from row `planted` on
 * the label moves each example by ±(s/2)·u along a fixed unit direction u.
 */
function synthetic(rows: number, n: number, d: number, planted: number, s: number, seed: number) {
  const g = gaussian(seed);
  const labels = Uint8Array.from({ length: n }, (_, i) => i % 2);
  const u = Float64Array.from({ length: d }, () => g());
  const norm = Math.hypot(...u);
  for (let j = 0; j < d; j++) u[j] /= norm;
  const acts = Array.from({ length: rows }, (_, r) => {
    const X = new Float32Array(n * d);
    for (let i = 0; i < n; i++) for (let j = 0; j < d; j++) X[i * d + j] = g() + (r >= planted ? s * (labels[i] - 0.5) * u[j] : 0);
    return X;
  });
  return { acts, labels, u };
}

const cosine = (a: ArrayLike<number>, b: ArrayLike<number>) => {
  let ab = 0, aa = 0, bb = 0;
  for (let j = 0; j < a.length; j++) { ab += a[j] * b[j]; aa += a[j] * a[j]; bb += b[j] * b[j]; }
  return ab / Math.sqrt(aa * bb);
};

describe('probes per layer (Alain & Bengio; Hewitt & Liang control)', () => {
  it('a direction planted from layer 3 on is found there: first_layer_95 = 3, chance before, difference of means along it', () => {
    const { acts, labels, u } = synthetic(6, 80, 24, 3, 5, 1);
    const r = probeActivations(acts, labels, 24, { folds: 5, seed: 2 });
    expect(r.firstLayer95).toBe(3);
    for (let l = 0; l < 3; l++) expect(r.accuracy[l]).toBeLessThan(0.72);
    for (let l = 3; l < 6; l++) {
      expect(r.accuracy[l]).toBeGreaterThan(0.9);
      expect(r.auroc[l]).toBeGreaterThan(0.95);
      expect(cosine(r.directions[l], u)).toBeGreaterThan(0.9);
    }
  });

  it('on shuffled labels (the control) the same probe stays at chance, also where the real labels are separable', () => {
    const { acts, labels } = synthetic(6, 120, 24, 2, 5, 4);
    const r = probeActivations(acts, labels, 24, { seed: 3 });
    for (let l = 0; l < 6; l++) {
      expect(r.controlAccuracy[l]).toBeGreaterThan(0.35);
      expect(r.controlAccuracy[l]).toBeLessThan(0.65);
    }
    expect(Math.min(...r.accuracy.slice(2))).toBeGreaterThan(0.9);
  });

  it('the difference-of-means direction is mean(positive) − mean(negative), exactly', () => {
    const acts = [Float32Array.from([1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12])]; // 4 examples × d = 3
    const r = probeActivations(acts, [1, 0, 1, 0], 3, { folds: 2 });
    // positives rows 0, 2: mean (4, 5, 6); negatives rows 1, 3: mean (7, 8, 9).
    expect(Array.from(r.directions[0])).toEqual([-3, -3, -3]);
  });

  it('says what is missing when a set is too small', () => {
    expect(() => probeActivations([new Float32Array(6)], [1, 0, 0], 2)).toThrow(/at least 2 examples in each set.*1 positive, 2 negative/);
    expect(() => probeActivations([new Float32Array(6)], [1, 1, 0], 2)).toThrow('a probe needs at least 2 examples in each set for cross-validation (got 2 positive, 1 negative)');
    expect(() => probeActivations([new Float32Array(8), new Float32Array(7)], [1, 1, 0, 0], 2)).toThrow('probe: a row holds 7 values; expected 4 examples × 2');
    expect(() => probeActivations([new Float32Array(8)], [1, 0, 2, 0], 2)).toThrow('probe: label 2 of example 2 is not 0 or 1');
    expect(() => probeActivations([new Float32Array(8)], [1, -1, 1, 0], 2)).toThrow('probe: label -1 of example 1 is not 0 or 1');
  });

  it('folds: 5 by default, lowered to the smaller class, at least 2; the best accuracy; onRow once per row in order; one held-out score per example', () => {
    const { acts, labels } = synthetic(3, 24, 6, 1, 4, 9); // 12 per class
    const rows: number[] = [];
    const r = probeActivations(acts, labels, 6, {}, (row) => rows.push(row));
    expect(r.folds).toBe(5);
    expect(rows).toEqual([0, 1, 2]);
    expect(r.bestAccuracy).toBe(Math.max(...r.accuracy));
    expect(r.heldOut.map((h) => h.length)).toEqual([24, 24, 24]);
    expect(probeActivations(acts, labels, 6, { folds: 8 }).folds).toBe(8);
    expect(probeActivations(acts, labels, 6, { folds: 1 }).folds).toBe(2);
    const three = Uint8Array.from({ length: 24 }, (_, i) => (i < 3 ? 1 : 0)); // 3 positives, 21 negatives
    expect(probeActivations(acts, three, 6).folds).toBe(3);
    expect(probeActivations(acts, three, 6, { folds: 12 }).folds).toBe(3);
  });

  it('the direction weighs each class by its own size (3 positives, 2 negatives)', () => {
    // positives rows 0, 1, 4: mean (7/3, 8/3); negatives rows 2, 3: mean (6, 7) — written out by hand
    const acts = [Float32Array.from([1, 2, 3, 4, 5, 6, 7, 8, 3, 2])];
    const r = probeActivations(acts, [1, 1, 0, 0, 1], 2, { folds: 2 });
    expect(r.directions[0][0]).toBeCloseTo(7 / 3 - 6, 6);
    expect(r.directions[0][1]).toBeCloseTo(8 / 3 - 7, 6);
  });

  it('the seed picks the folds (stratifiedFolds(labels, folds, seed)), λ defaults to 1; first row at 95 % of a best row below 1', () => {
    const { acts, labels } = synthetic(4, 30, 5, 1, 1.2, 13); // a weak signal: no row separates the classes
    for (const seed of [0, 3]) {
      const r = probeActivations(acts, labels, 5, { seed });
      acts.forEach((X, row) => expect(r.heldOut[row]).toEqual(crossValidate(X, labels, 30, 5, stratifiedFolds(labels, 5, seed), 1).scores));
      expect(r.bestAccuracy).toBeLessThan(0.95);
      expect(r.firstLayer95).toBe(r.accuracy.findIndex((a) => a >= 0.95 * r.bestAccuracy));
      expect(r.firstLayer95).toBeGreaterThanOrEqual(0);
      for (const per of [r.accuracy, r.auroc, r.controlAccuracy, r.controlAuroc]) { // one number in [0, 1] per row
        expect(per).toHaveLength(acts.length);
        per.forEach((x) => expect(x >= 0 && x <= 1).toBe(true));
      }
    }
  });
});
