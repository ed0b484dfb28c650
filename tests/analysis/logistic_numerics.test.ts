import { describe, expect, it } from 'vitest';
import { crossValidate, fitLogistic, shuffle } from '../../workers/engine/analysis/logistic';
import { seededRandom } from '../../workers/engine/analysis/sampling';

/**
 * The numerics of analysis/logistic.ts against closed forms and against Newton's method written out
 * here in float64 from its definition (θ ← θ − t·H⁻¹∇J with t halved until J does not increase;
 * Boyd & Vandenberghe §9.5), for J(w, b) = Σ softplus(z_i) − y_i z_i + (λ/2)‖w‖², z = Xw + b.
 */

function gaussian(seed: number): () => number {
  const r = seededRandom(seed);
  return () => Math.sqrt(-2 * Math.log(1 - r())) * Math.cos(2 * Math.PI * r());
}

/** log(1 + e^z), the plain formula (|z| stays far below 700 in these tests). */
const softplusRef = (z: number) => Math.log(1 + Math.exp(z));
const sigmoidRef = (z: number) => 1 / (1 + Math.exp(-z));

/** Solves A x = g (A [m, m] row-major, symmetric positive definite) by Gaussian elimination with partial pivoting. */
function solve(A: number[][], g: number[]): number[] {
  const m = g.length;
  const M = A.map((row, i) => [...row, g[i]]);
  for (let c = 0; c < m; c++) {
    let p = c;
    for (let r = c + 1; r < m; r++) if (Math.abs(M[r][c]) > Math.abs(M[p][c])) p = r;
    [M[c], M[p]] = [M[p], M[c]];
    for (let r = c + 1; r < m; r++) {
      const f = M[r][c] / M[c][c];
      for (let k = c; k <= m; k++) M[r][k] -= f * M[c][k];
    }
  }
  const x = new Array<number>(m).fill(0);
  for (let r = m - 1; r >= 0; r--) {
    let s = M[r][m];
    for (let k = r + 1; k < m; k++) s -= M[r][k] * x[k];
    x[r] = s / M[r][r];
  }
  return x;
}

/** `steps` damped Newton steps from θ = 0; returns θ = [w; b] and the step sizes t taken. (From θ = 0 the full step never raises J:
 * softplus'' ≤ ¼ = its value at 0, so the quadratic model there majorises J; the halving is a safeguard for later steps.) */
function newtonRef(X: ArrayLike<number>, y: number[], n: number, d: number, lambda: number, steps: number): { theta: number[]; ts: number[] } {
  const J = (th: number[]) => {
    let s = 0, r = 0;
    for (let i = 0; i < n; i++) {
      let z = th[d];
      for (let j = 0; j < d; j++) z += X[i * d + j] * th[j];
      s += softplusRef(z) - y[i] * z;
    }
    for (let j = 0; j < d; j++) r += th[j] * th[j];
    return s + (lambda / 2) * r;
  };
  let theta = new Array<number>(d + 1).fill(0);
  const ts: number[] = [];
  for (let it = 0; it < steps; it++) {
    const g = new Array<number>(d + 1).fill(0);
    const H = Array.from({ length: d + 1 }, () => new Array<number>(d + 1).fill(0));
    for (let i = 0; i < n; i++) {
      const x = [...Array.from({ length: d }, (_, j) => X[i * d + j]), 1]; // the intercept's feature is 1
      const z = x.reduce((s, v, j) => s + v * theta[j], 0);
      const p = sigmoidRef(z);
      for (let a = 0; a <= d; a++) {
        g[a] += (p - y[i]) * x[a];
        for (let c = 0; c <= d; c++) H[a][c] += p * (1 - p) * x[a] * x[c];
      }
    }
    for (let j = 0; j < d; j++) { g[j] += lambda * theta[j]; H[j][j] += lambda; }
    const step = solve(H, g);
    const J0 = J(theta);
    let t = 1;
    while (J(theta.map((v, a) => v - t * step[a])) > J0) t /= 2;
    theta = theta.map((v, a) => v - t * step[a]);
    ts.push(t);
  }
  return { theta, ts };
}

const close = (got: ArrayLike<number>, want: ArrayLike<number>, tol: number) => {
  expect(got.length).toBe(want.length);
  for (let i = 0; i < want.length; i++) expect(Math.abs(got[i] - want[i])).toBeLessThan(tol * (1 + Math.abs(want[i])));
};

describe('fitLogistic step by step: damped Newton on J', () => {
  it('after 1, 2 and 3 iterations w and b equal Newton written out from its definition (gradient, Hessian with λ on w only)', () => {
    const g = gaussian(21);
    const n = 30, d = 3;
    const X = Float64Array.from({ length: n * d }, () => g());
    const y = Array.from({ length: n }, (_, i) => (X[i * d] - 0.5 * X[i * d + 2] + g() > 0.3 ? 1 : 0));
    for (const lambda of [0.5, 3]) {
      for (const k of [1, 2, 3]) {
        const fit = fitLogistic(X, y, n, d, lambda, k);
        const ref = newtonRef(X, y, n, d, lambda, k);
        expect(fit.iterations).toBe(k);
        close([...fit.w, fit.b], ref.theta, 1e-11);
      }
    }
  });

  it('λ = 0 on a rank-deficient design (a feature twice): a tiny ridge keeps the step defined; w₁ + w₂ and b are the group log-odds', () => {
    // x ∈ {0, 1} in two identical columns: the MLE of the saturated model is b = logit(p0), w₁ + w₂ = logit(p1) − logit(p0).
    const logit = (p: number) => Math.log(p / (1 - p));
    const X: number[] = [], y: number[] = [];
    for (let i = 0; i < 10; i++) { X.push(0, 0); y.push(i < 3 ? 1 : 0); }
    for (let i = 0; i < 8; i++) { X.push(1, 1); y.push(i < 7 ? 1 : 0); }
    const fit = fitLogistic(X, y, 18, 2, 0);
    expect(fit.b).toBeCloseTo(logit(0.3), 6);
    expect(fit.w[0] + fit.w[1]).toBeCloseTo(logit(7 / 8) - logit(0.3), 6);
  });

  it('fewer rows than features with two identical rows (a zero eigenvalue of X Xᵀ): the optimality conditions hold, w finite', () => {
    const g = gaussian(8);
    const n = 7, d = 20, lambda = 0.4;
    const X = Float64Array.from({ length: n * d }, () => g());
    X.copyWithin(d, 0, d); // row 1 = row 0
    const y = [1, 1, 0, 1, 0, 0, 1];
    const fit = fitLogistic(X, y, n, d, lambda);
    expect(fit.w.every(Number.isFinite)).toBe(true);
    // ∇J = Xᵀ(σ(z) − y) + λw = 0 and Σ(σ(z) − y) = 0
    const r = Array.from({ length: n }, (_, i) => {
      let z = fit.b;
      for (let j = 0; j < d; j++) z += X[i * d + j] * fit.w[j];
      return sigmoidRef(z) - y[i];
    });
    expect(Math.abs(r.reduce((s, v) => s + v, 0))).toBeLessThan(1e-7);
    for (let j = 0; j < d; j++) expect(Math.abs(r.reduce((s, v, i) => s + v * X[i * d + j], 0) + lambda * fit.w[j])).toBeLessThan(1e-7);
    // The same design scaled by 1e-4 with λ·1e-8 has the fit w·1e4 and the same b (z and λ‖w‖² unchanged):
    // the span's eigenvalues (~1e-7) are kept relative to the largest, whatever the features' scale.
    const s = 1e-4, small = fitLogistic(X.map((v) => v * s), y, n, d, lambda * s * s);
    expect(Math.abs(small.b - fit.b)).toBeLessThan(1e-6);
    for (let j = 0; j < d; j++) expect(Math.abs(small.w[j] * s - fit.w[j])).toBeLessThan(1e-6 * (1 + Math.abs(fit.w[j])));
  });
});

describe('crossValidate: standardisation on the training rows, held-out scores', () => {
  /**
   * Two folds of 6 rows; in each, feature 0 is c ± s (c = 10, s = 3): +s with labels 1, 1, 0 and −s
   * with 0, 0, 1; feature 1 is 5 everywhere. Each fold's training rows standardise to z = ±1 (mean c,
   * population sd s) and to 0 (a constant feature is only centred), so by symmetry b = 0 and w solves
   * ∂J/∂w = 3σ(w)·2 − 4 + λw = 0 (6σ(w) − 4 + λw = 0), found here by bisection; every held-out score is ±w.
   */
  const rows: [number, number][] = [], y: number[] = [], fold: number[] = [];
  for (const f of [0, 1]) {
    for (const [u, label] of [[1, 1], [1, 1], [1, 0], [-1, 0], [-1, 0], [-1, 1]]) { rows.push([10 + 3 * u, 5]); y.push(label); fold.push(f); }
  }
  const X = rows.flat();
  const wStar = (lambda: number) => {
    let lo = 0, hi = 10;
    for (let i = 0; i < 200; i++) { const m = (lo + hi) / 2; if (6 * sigmoidRef(m) - 4 + lambda * m > 0) hi = m; else lo = m; }
    return (lo + hi) / 2;
  };

  it('held-out scores are ±w* with w* from the one-dimensional optimality condition (λ = 1 and 0.2); accuracy 2/3, AUROC 2/3', () => {
    for (const lambda of [1, 0.2]) {
      const cv = crossValidate(X, y, 12, 2, Int32Array.from(fold), lambda);
      const w = wStar(lambda);
      close(cv.scores, rows.map(([x]) => (x > 10 ? w : -w)), 1e-8);
      expect(cv.accuracy).toBeCloseTo(8 / 12, 12);
      // positives: 4 at +w, 2 at −w; negatives: 4 at −w, 2 at +w → (16 wins + ½·16 ties) / 36
      expect(cv.auroc).toBeCloseTo(24 / 36, 12);
    }
  });

  it('three features of different scales and offsets, three folds: each fold standardises with its training rows’ mean and population sd, then fits; the scores equal Newton written out on those rows', () => {
    const g = gaussian(33);
    const n = 24, d = 3, lambda = 1, scale = [1, 5, 0.2], offset = [0, -3, 7];
    const Xs = Float64Array.from({ length: n * d }, (_, k) => offset[k % d] + scale[k % d] * g());
    const ys = Array.from({ length: n }, (_, i) => (Xs[i * d] + 0.3 * Xs[i * d + 1] / 5 + g() > 0 ? 1 : 0));
    const folds = Int32Array.from({ length: n }, (_, i) => i % 3);
    const cv = crossValidate(Xs, ys, n, d, folds, lambda);
    const want = new Float64Array(n);
    for (let f = 0; f < 3; f++) {
      const train = [...Array(n).keys()].filter((i) => folds[i] !== f), test = [...Array(n).keys()].filter((i) => folds[i] === f);
      const mu = [0, 1, 2].map((j) => train.reduce((a, i) => a + Xs[i * d + j], 0) / train.length);
      const sd = [0, 1, 2].map((j) => Math.sqrt(train.reduce((a, i) => a + (Xs[i * d + j] - mu[j]) ** 2, 0) / train.length));
      const z = (i: number) => [0, 1, 2].map((j) => (Xs[i * d + j] - mu[j]) / sd[j]);
      const { theta } = newtonRef(train.flatMap(z), train.map((i) => ys[i]), train.length, d, lambda, 30);
      for (const i of test) want[i] = theta[d] + z(i).reduce((a, v, j) => a + v * theta[j], 0);
    }
    close(cv.scores, want, 1e-8);
  });

  it('an empty fold number is skipped; a fold whose training rows hold one class is refused', () => {
    const gapped = Int32Array.from(fold, (f) => f * 2); // folds 0 and 2, none in 1
    close(crossValidate(X, y, 12, 2, gapped, 1).scores, rows.map(([x]) => (x > 10 ? wStar(1) : -wStar(1))), 1e-8);
    const byClass = Int32Array.from(y); // fold 1 = every positive: fold 1's training rows are all negative
    expect(() => crossValidate(X, y, 12, 2, byClass, 1)).toThrow('fold 0: the training rows hold one class only');
  });

  it('with no features each score is the training rows’ log-odds; a score of exactly 0 predicts the negative class', () => {
    // Folds 0 and 1 train on 2 positives + 2 negatives: b = logit(1/2) = 0 (∇J = 0 at the start). Folds 2 and 3 train on
    // 4 positives + 1 negative: b = log 4. So every positive scores 0 (predicted negative) and every negative log 4.
    const yy = [1, 1, 1, 1, 0, 0];
    const cv = crossValidate([], yy, 6, 0, Int32Array.from([0, 0, 1, 1, 2, 3]), 1);
    close(cv.scores, [0, 0, 0, 0, Math.log(4), Math.log(4)], 1e-10);
    expect(cv.scores.slice(0, 4).every((v) => v === 0)).toBe(true);
    expect([cv.accuracy, cv.auroc]).toEqual([0, 0]);
  });
});

describe('shuffle (Fisher–Yates)', () => {
  it('each of the 3! orders of three items is equally likely (chi-square over 6000 seeded shuffles)', () => {
    const rand = seededRandom(17);
    const counts = new Map<string, number>();
    for (let i = 0; i < 6000; i++) {
      const k = shuffle(['a', 'b', 'c'], rand).join('');
      counts.set(k, (counts.get(k) ?? 0) + 1);
    }
    expect(counts.size).toBe(6);
    const chi2 = [...counts.values()].reduce((s, c) => s + (c - 1000) ** 2 / 1000, 0);
    expect(chi2).toBeLessThan(20.5); // χ²(5) at p = 0.001
  });
});
