import { describe, expect, it } from 'vitest';
import { divergingScale, symmetricRange } from '../../app/lib/color_scale';

describe('symmetricRange', () => {
  it('robust: the 98th percentile of |v| by linear interpolation (R-7), closed form on ±1..±100', () => {
    // |v| = 1..100 (signs alternate): R-7 index 0.98 · 99 = 97.02 → 98 + 0.02 · (99 − 98) = 98.02.
    const v = Array.from({ length: 100 }, (_, i) => (i % 2 ? -(i + 1) : i + 1));
    const r = symmetricRange(v, 'robust');
    expect(r.m).toBeCloseTo(98.02, 10);
    expect(r.clipped).toBe(2); // 99 and 100
    expect(r.finite).toBe(100);
  });

  it('one huge row (the embeddings) does not set the robust range, but sets the max range', () => {
    const v = [...Array.from({ length: 200 }, (_, i) => Math.sin(i)), 500, -400];
    expect(symmetricRange(v, 'robust').m).toBeLessThan(1);
    expect(symmetricRange(v, 'max')).toEqual({ m: 500, clipped: 0, finite: 202 });
  });

  it('ignores NaN and infinities; all zeros give the unit range', () => {
    expect(symmetricRange([NaN, Infinity, -3, 1], 'max')).toEqual({ m: 3, clipped: 0, finite: 2 });
    expect(symmetricRange([0, 0, NaN], 'robust').m).toBe(1);
    expect(symmetricRange([], 'robust').m).toBe(1);
  });
});

describe('divergingScale', () => {
  it('is white at 0, symmetric, and clamps past ±m', () => {
    const c = divergingScale(2);
    expect(c(0)).toBe('rgb(247, 247, 247)'); // RdBu's midpoint
    expect(c(5)).toBe(c(2));
    expect(c(-5)).toBe(c(-2));
    expect(c(2)).not.toBe(c(-2));
  });
});
