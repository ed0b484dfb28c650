import { describe, expect, it } from 'vitest';
import { crossValidate, fitLogistic, stratifiedFolds } from '../../workers/engine/analysis/logistic';
import { auroc } from '../../workers/engine/analysis/auroc';
import { seededRandom } from '../../workers/engine/analysis/sampling';

const logit = (p: number) => Math.log(p / (1 - p));
const sigmoid = (z: number) => 1 / (1 + Math.exp(-z));

/** Standard normal draws (Box–Muller) from a seeded generator. */
function gaussian(seed: number): () => number {
  const r = seededRandom(seed);
  return () => Math.sqrt(-2 * Math.log(1 - r())) * Math.cos(2 * Math.PI * r());
}

/** ∇J at (w, b) for J = Σ softplus(z) − y z + λ/2 ‖w‖², in float64 (the optimality condition). */
function gradient(X: Float64Array, y: number[], n: number, d: number, lambda: number, w: Float64Array, b: number): number[] {
  const g = new Array<number>(d + 1).fill(0);
  for (let i = 0; i < n; i++) {
    let z = b;
    for (let j = 0; j < d; j++) z += X[i * d + j] * w[j];
    const r = sigmoid(z) - y[i];
    for (let j = 0; j < d; j++) g[j] += r * X[i * d + j];
    g[d] += r;
  }
  for (let j = 0; j < d; j++) g[j] += lambda * w[j];
  return g;
}

describe('logistic regression (Newton / IRLS)', () => {
  it('unregularised fit on one binary feature equals the closed form b = logit(p0), w = logit(p1) − logit(p0)', () => {
    // x = 0: 3 of 10 positive; x = 1: 7 of 8 positive. The saturated model's MLE is the group log-odds.
    const X: number[] = [], y: number[] = [];
    for (let i = 0; i < 10; i++) { X.push(0); y.push(i < 3 ? 1 : 0); }
    for (let i = 0; i < 8; i++) { X.push(1); y.push(i < 7 ? 1 : 0); }
    const fit = fitLogistic(X, y, 18, 1, 0);
    expect(fit.b).toBeCloseTo(logit(0.3), 9);
    expect(fit.w[0]).toBeCloseTo(logit(7 / 8) - logit(0.3), 9);
  });

  it('with no features the intercept is the log-odds of the positive rate', () => {
    const y = [1, 1, 1, 0, 0, 0, 0, 0, 1, 0];
    expect(fitLogistic([], y, 10, 0, 1).b).toBeCloseTo(logit(0.4), 10);
  });

  it('the regularised fit makes the gradient of J vanish (n > d and n < d: the row-span path)', () => {
    const g = gaussian(3);
    for (const [n, d] of [[40, 6], [12, 50]]) {
      const X = Float64Array.from({ length: n * d }, () => g());
      const y = Array.from({ length: n }, (_, i) => (X[i * d] + 0.8 * g() > 0 ? 1 : 0));
      const lambda = 0.7;
      const fit = fitLogistic(X, y, n, d, lambda);
      const grad = gradient(X, y, n, d, lambda, fit.w, fit.b);
      expect(Math.max(...grad.map(Math.abs))).toBeLessThan(1e-8);
      expect(fit.w.some((v) => Math.abs(v) > 1e-3)).toBe(true);
    }
  });

  it('rejects labels other than 0/1 and mismatched sizes', () => {
    expect(() => fitLogistic([1, 2], [0, 2], 2, 1, 1)).toThrow(/label 2 at row 1/);
    expect(() => fitLogistic([1, 2, 3], [0, 1], 2, 1, 1)).toThrow(/expected 2×1/);
    expect(() => fitLogistic([1, 2], [0, 1, 1], 2, 1, 1)).toThrow('fitLogistic: X has 2 values and y 3; expected 2×1 and 2');
    for (const l of [-0.1, Number.NaN]) expect(() => fitLogistic([1, 2], [0, 1], 2, 1, l)).toThrow(`fitLogistic: λ must be ≥ 0 (got ${l})`);
    expect(() => fitLogistic([1, 2, 0, 3], [0, 1, 1, 0], 4, 1, 0)).not.toThrow(); // λ = 0: maximum likelihood (overlapping classes)
    expect(() => fitLogistic([1, 2], [-1, 1], 2, 1, 1)).toThrow('fitLogistic: label -1 at row 0 is not 0 or 1');
  });
});

describe('AUROC (Mann–Whitney)', () => {
  it('matches hand-counted pairs, with ties counted one half', () => {
    // positives {0.35, 0.8} vs negatives {0.1, 0.4}: pairs won 1 + 2 = 3 of 4.
    expect(auroc([0.1, 0.4, 0.35, 0.8], [0, 0, 1, 1])).toBe(0.75);
    expect(auroc([1, 1, 1, 1], [0, 1, 0, 1])).toBe(0.5);
    // positive 2 vs negatives {2, 1}: one tie (½) and one win.
    expect(auroc([2, 2, 1], [1, 0, 0])).toBe(0.75);
    expect(auroc([3, 2, 1], [0, 1, 1])).toBe(0);
    expect(() => auroc([1, 2], [1, 1])).toThrow(/both classes/);
    expect(() => auroc([1, 2], [0, 0])).toThrow('auroc needs both classes (got 0 positive, 2 negative)');
    expect(() => auroc([1, 2, 3], [0, 1])).toThrow('auroc: 3 scores but 2 labels');
  });
});

describe('cross-validation', () => {
  it('folds are stratified: every fold holds ⌊n_c/k⌋ or ⌈n_c/k⌉ of each class', () => {
    const y = Array.from({ length: 23 }, (_, i) => (i < 13 ? 1 : 0));
    const fold = stratifiedFolds(y, 5, 7);
    for (let f = 0; f < 5; f++) {
      const pos = y.filter((c, i) => c === 1 && fold[i] === f).length;
      const neg = y.filter((c, i) => c === 0 && fold[i] === f).length;
      expect(pos === 2 || pos === 3).toBe(true);
      expect(neg === 2).toBe(true);
    }
    expect(() => stratifiedFolds([1, 1, 0], 2, 0)).toThrow(/class 0 has 1/);
    for (const k of [1, 2.5]) expect(() => stratifiedFolds([1, 1, 0, 0], k, 0)).toThrow(`cross-validation needs at least 2 folds (got ${k})`);
    expect(Array.from(stratifiedFolds([1, 1, 0, 0], 2, 0)).sort()).toEqual([0, 0, 1, 1]);
    expect(() => stratifiedFolds([1, 0, 0, 0], 2, 0)).toThrow('2-fold cross-validation needs at least 2 examples of each class (class 1 has 1)');
  });

  it('held-out accuracy on pure noise with more features than examples stays near chance (nothing leaks from the test fold)', () => {
    const g = gaussian(11);
    const n = 60, d = 200;
    const X = Float64Array.from({ length: n * d }, () => g());
    const y = Array.from({ length: n }, (_, i) => i % 2);
    const cv = crossValidate(X, y, n, d, stratifiedFolds(y, 5, 1), 1);
    // A fit scored on its own training rows would reach 1.0 here (d > n separates anything).
    expect(cv.accuracy).toBeGreaterThan(0.3);
    expect(cv.accuracy).toBeLessThan(0.7);
  });

  it('a separable signal in one feature is found on held-out rows', () => {
    const g = gaussian(5);
    const n = 40, d = 10;
    const y = Array.from({ length: n }, (_, i) => i % 2);
    const X = Float64Array.from({ length: n * d }, (_, k) => g() + (k % d === 4 ? 6 * (y[Math.floor(k / d)] - 0.5) : 0));
    const cv = crossValidate(X, y, n, d, stratifiedFolds(y, 4, 2), 1);
    expect(cv.accuracy).toBeGreaterThanOrEqual(0.95);
    expect(cv.auroc).toBeGreaterThanOrEqual(0.98);
  });
});
