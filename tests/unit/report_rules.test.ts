import { describe, expect, it } from 'vitest';
import { bootstrapStatistic } from '../../workers/engine/analysis/bootstrap';
import { differingPositions, firstAt95, firstCausalBlock, firstStable, labelledPairs } from '../../workers/engine/studies/report';

describe('percentile bootstrap of a statistic of the mean curve', () => {
  it('the mean of a 0/1 sample has the normal-approximation interval p ± 1.96·sqrt(p(1−p)/n)', () => {
    const n = 400;
    const curves = Array.from({ length: n }, (_, i) => [i % 4 === 0 ? 1 : 0]); // p = 0.25
    const { interval, defined } = bootstrapStatistic(curves, (c) => c[0], { resamples: 2000, seed: 3 });
    const half = 1.96 * Math.sqrt((0.25 * 0.75) / n);
    expect(defined).toBe(1);
    expect(interval![0]).toBeCloseTo(0.25 - half, 2);
    expect(interval![1]).toBeCloseTo(0.25 + half, 2);
  });

  it('identical prompts give a zero-width interval; an undefined statistic gives none', () => {
    const curves = Array.from({ length: 7 }, () => [0.5, -1, 2]);
    expect(bootstrapStatistic(curves, (c) => c[2], { resamples: 50 }).interval).toEqual([2, 2]);
    expect(bootstrapStatistic(curves, () => null, { resamples: 50 })).toEqual({ interval: null, defined: 0 });
  });
});

describe('visible = earliest row from which the margin keeps its final sign, at the threshold', () => {
  it('skips an early crossing that flips back, and a row below the threshold', () => {
    expect(firstStable([4.55, 2.47, 0.03, 0.02, 0.55, 0.11], 0.1)).toBe(0);
    expect(firstStable([-4.55, -2.47, 0.03, 0.02, 0.55, 0.11], 0.1)).toBe(4);
    expect(firstStable([0.5, -0.2, 0.05, 0.3, 0.2], 0.1)).toBe(3);
    expect(firstStable([0.5, -0.2], 0.1)).toBeNull();
    expect(firstStable([0.05, 0.05], 0.1)).toBeNull();
  });
});

describe('the rules at their edges', () => {
  it('firstStable: a value equal to the threshold counts; a 0 ends the trailing positive run; the first index can be it', () => {
    expect(firstStable([0.1], 0.1)).toBe(0);
    expect(firstStable([0.5, 0, 0.3], 0.1)).toBe(2);
    expect(firstStable([0.5, 0.3], 0)).toBe(0);
    expect(firstStable([], 0.1)).toBeNull();
  });

  it('firstAt95: the first row at or above 95 % of the best row (equal counts), and row 0 when every row is 0', () => {
    expect(firstAt95([0.5, 0.95, 1])).toBe(1);
    expect(firstAt95([0.5, 0.94, 1])).toBe(2);
    expect(firstAt95([0, 0])).toBe(0);
  });

  it('labelledPairs: positive i ↔ negative i, and a prompt without a partner is lens only', () => {
    expect(labelledPairs({ positive: ['p0', 'p1', 'p2'], negative: ['n0', 'n1'] })).toEqual([
      { clean: 'p0', corrupt: 'n0' }, { clean: 'p1', corrupt: 'n1' }, { clean: 'p2', corrupt: null },
      { clean: 'n0', corrupt: 'p0' }, { clean: 'n1', corrupt: 'p1' },
    ]);
  });

  it('firstCausalBlock: the first block from 1 on at r ≥ 0.5 (equal counts; block 0, the embeddings, never); differingPositions', () => {
    expect(firstCausalBlock([1, 0.2, 0.5, 0.9])).toBe(2);
    expect(firstCausalBlock([0.9, 0.1, 0.49])).toBeNull();
    expect(firstCausalBlock([0, 0.3, 0.7], 0.3)).toBe(1);
    expect(firstCausalBlock([])).toBeNull();
    expect(differingPositions([1, 2, 3, 4], [1, 5, 3, 6])).toEqual([1, 3]);
    expect(differingPositions([7, 8], [7, 8])).toEqual([]);
  });
});
