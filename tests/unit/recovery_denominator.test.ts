import { describe, expect, it } from 'vitest';
import { checkRecoveryDenominator, MIN_RECOVERY_DENOMINATOR } from '../../workers/engine/analysis/recovery_denominator';

describe('recovery denominator Δ_clean − Δ_corrupt (Heimersheim & Nanda arXiv 2404.15255)', () => {
  it('flags |Δ_clean − Δ_corrupt| below the threshold and names the denominator and threshold', () => {
    // The trial's default pair on stories260K: Δ_clean − Δ_corrupt ≈ 0.14 nats, r of 3–4.
    const c = checkRecoveryDenominator(1.04, 0.9);
    expect(c.denominator).toBeCloseTo(0.14, 12);
    expect(c.small).toBe(true);
    expect(c.threshold).toBe(MIN_RECOVERY_DENOMINATOR);
    expect(c.message).toContain('0.140 nats');
    expect(c.message).toContain(`${MIN_RECOVERY_DENOMINATOR} nats`);
  });

  it('trusts a corruption that flips the answer, in either order of signs', () => {
    for (const [a, b] of [[1.2, -0.8], [-0.8, 1.2]]) {
      const c = checkRecoveryDenominator(a, b);
      expect(c.small).toBe(false);
      expect(c.message).toBeNull();
      expect(Math.abs(c.denominator)).toBeCloseTo(2, 12);
    }
  });

  it('uses a strict bound at the threshold, a given threshold, and flags non-finite margins', () => {
    expect(checkRecoveryDenominator(0.5, 0, 0.5).small).toBe(false);
    expect(checkRecoveryDenominator(0.49, 0, 0.5).small).toBe(true);
    expect(checkRecoveryDenominator(3, 0, 4).small).toBe(true);
    expect(checkRecoveryDenominator(Number.NaN, 0).small).toBe(true);
    expect(() => checkRecoveryDenominator(1, 0, -1)).toThrow(RangeError);
  });

  it('a threshold of 0 trusts every finite denominator; an infinite or NaN threshold is refused; an infinite margin is flagged', () => {
    expect(checkRecoveryDenominator(1, 1, 0)).toStrictEqual({ denominator: 0, threshold: 0, small: false, message: null });
    for (const t of [Number.POSITIVE_INFINITY, Number.NaN]) {
      expect(() => checkRecoveryDenominator(1, 0, t)).toThrow(`the denominator threshold must be a finite number ≥ 0 (got ${t})`);
    }
    const inf = checkRecoveryDenominator(Number.POSITIVE_INFINITY, 0);
    expect([inf.denominator, inf.small]).toEqual([Number.POSITIVE_INFINITY, true]);
    expect(inf.message).toContain('Δ_clean − Δ_corrupt = Infinity nats, below the 0.5 nats this view trusts');
  });
});
