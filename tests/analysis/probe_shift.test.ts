import { describe, expect, it } from 'vitest';
import { classGap, linearScores, probeFlag, shiftMoves } from '../../workers/engine/analysis/probe_shift';
import { crossValidate, fitLogistic, fitProbe, stratifiedFolds } from '../../workers/engine/analysis/logistic';
import { seededRandom } from '../../workers/engine/analysis/sampling';

/** The rule that says whether a probe still measures its behaviour (analysis/probe_shift.ts), and the raw-unit probe it reads. */
describe('probe under intervention: the flag rule', () => {
  it('classGap is mean(label 1) − mean(label 0) and refuses a missing class', () => {
    expect(classGap([1, 2, 3, 10], [0, 0, 1, 1])).toBe(6.5 - 1.5);
    expect(() => classGap([1, 2], [1, 1])).toThrow(/needs both classes \(got 2 positive, 0 negative\)/);
  });

  it('a shift moves at |shift| ≥ τ·|gap| (both signs), never at 0; with gap 0 any change moves', () => {
    expect(shiftMoves(2.5, 10, 0.25)).toBe(true);
    expect(shiftMoves(-2.5, 10, 0.25)).toBe(true);
    expect(shiftMoves(2.4999, -10, 0.25)).toBe(false);
    expect(shiftMoves(0, 0, 0.25)).toBe(false);
    expect(shiftMoves(1e-9, 0, 0.25)).toBe(true);
  });

  it('reads-vector when only the score moves, misses-behaviour when only the behaviour moves, null otherwise; τ checked', () => {
    const moved = { shift: 3, gap: 4 }, still = { shift: 0.5, gap: 4 };
    expect(probeFlag(moved, still)).toBe('reads-vector');
    expect(probeFlag(still, moved)).toBe('misses-behaviour');
    expect(probeFlag(moved, moved)).toBeNull();
    expect(probeFlag(still, still)).toBeNull();
    expect(probeFlag(still, still, 0.1)).toBeNull(); // 0.5 ≥ 0.1·4: both move
    expect(probeFlag(moved, still, 0.8)).toBeNull(); // 3 < 0.8·4: neither moves
    expect(() => probeFlag(moved, still, -1)).toThrow(/τ must be a finite number ≥ 0 \(got -1\)/);
    expect(() => probeFlag(moved, still, Infinity)).toThrow(/got Infinity/);
  });
});

describe('the probe in raw units (fitProbe) and the fold probes on other rows (crossValidate also)', () => {
  const n = 30, d = 5;
  const rand = seededRandom(7);
  const y = Array.from({ length: n }, (_, i) => i % 2);
  const X = Float64Array.from({ length: n * d }, (_, k) => 3 * rand() - 1 + (k % d === 1 ? 2 * y[Math.floor(k / d)] : 0) + (k % d) * 5);

  it('b + w·x equals the decision value of the fit on features standardised by all rows (computed here)', () => {
    const mu = Array.from({ length: d }, (_, j) => y.reduce((s, _y, i) => s + X[i * d + j], 0) / n);
    const sd = mu.map((m, j) => Math.sqrt(y.reduce((s, _y, i) => s + (X[i * d + j] - m) ** 2, 0) / n));
    const Z = Array.from(X, (x, k) => (x - mu[k % d]) / sd[k % d]);
    const fit = fitLogistic(Z, y, n, d, 1);
    const p = fitProbe(X, y, n, d, 1);
    const s = linearScores(X, n, p.w, p.b);
    for (let i = 0; i < n; i++) {
      let want = fit.b;
      for (let j = 0; j < d; j++) want += fit.w[j] * Z[i * d + j];
      expect(Math.abs(s[i] - want)).toBeLessThan(1e-9 * (1 + Math.abs(want)));
    }
  });

  it('also = X scores every row as it is scored held out; also = X + δ·e_1 moves every row of a fold by one amount (one linear probe per fold), toward the class feature 1 carries', () => {
    const fold = stratifiedFolds(y, 3, 0);
    const cv = crossValidate(X, y, n, d, fold, 1, X);
    expect(Array.from(cv.alsoScores!)).toEqual(Array.from(cv.scores));
    const shifted = Float64Array.from(X, (x, k) => x + (k % d === 1 ? 0.5 : 0));
    const moved = crossValidate(X, y, n, d, fold, 1, shifted).alsoScores!;
    // each fold's shift is the same for its rows (one linear probe), and rows of other folds may differ
    for (let f = 0; f < 3; f++) {
      const rows = y.map((_, i) => i).filter((i) => fold[i] === f);
      const deltas = rows.map((i) => moved[i] - cv.scores[i]);
      for (const x of deltas) expect(Math.abs(x - deltas[0])).toBeLessThan(1e-9);
      expect(deltas[0]).toBeGreaterThan(0); // feature 1 carries the positive class
    }
    expect(() => crossValidate(X, y, n, d, fold, 1, X.subarray(1))).toThrow(/also has 149 values; expected 30×5/);
  });
});
