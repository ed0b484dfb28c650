import { describe, expect, it } from 'vitest';
import { checkBudgets, controlSums, DEFAULT_BUDGETS, doseVerdict, operatingWindow } from '../../workers/engine/analysis/operating_window';

/** The operating window's maths on planted inputs whose answers are known by hand. */
describe('operatingWindow: the longest run of consecutive passing doses', () => {
  const doses = [-2, -1, 0, 1, 2, 3, 4, 5];
  it('picks the longest run, not the first', () => {
    expect(operatingWindow(doses, [true, false, false, true, true, true, false, true])).toEqual([1, 3]);
  });
  it('of two equally long runs, the one nearer dose 0', () => {
    expect(operatingWindow(doses, [true, true, false, false, false, false, true, true])).toEqual([-2, -1]);
    expect(operatingWindow([0, 1, 2, 3, 4, 5], [false, false, true, false, true, false])).toEqual([2, 2]);
  });
  it('one dose is a window of one point; no passing dose is an empty window (null)', () => {
    expect(operatingWindow(doses, doses.map((d) => d === 4))).toEqual([4, 4]);
    expect(operatingWindow(doses, doses.map(() => false))).toBeNull();
    expect(operatingWindow(doses, doses.map(() => true))).toEqual([-2, 5]);
  });
  it('refuses doses that are not ascending and distinct', () => {
    expect(() => operatingWindow([0, 2, 1], [true, true, true])).toThrow('doses must be ascending and distinct');
    expect(() => operatingWindow([0, 0], [true, true])).toThrow('doses must be ascending and distinct');
  });
});

describe('budgets and verdicts', () => {
  it('a negative or non-finite budget is refused with its name and why; the defaults pass', () => {
    expect(() => checkBudgets(DEFAULT_BUDGETS)).not.toThrow();
    expect(() => checkBudgets({ ...DEFAULT_BUDGETS, other: -1 })).toThrow("the other behaviours' budget -1 is negative: a budget is the most a side effect may cost");
    expect(() => checkBudgets({ ...DEFAULT_BUDGETS, kl: Number.NaN })).toThrow('the KL budget NaN is not a finite number');
    expect(() => checkBudgets({ ...DEFAULT_BUDGETS, reach: Number.POSITIVE_INFINITY })).toThrow('the reach threshold R = Infinity is not a finite number');
  });
  it('a dose fails each criterion it misses, by name, and passes on the boundary', () => {
    const b = { reach: 1, kl: 0.1, ll: 0.1, other: 0.5 };
    expect(doseVerdict({ reach: 1, kl: 0.1, deltaLl: -0.1, others: [0.5, -0.5] }, b)).toEqual([]);
    expect(doseVerdict({ reach: 0.5, kl: 0.2, deltaLl: -0.3, others: [-0.6] }, b, ['he/she'])).toEqual(['reach 0.500 < R = 1', 'KL 0.200 > 0.1', 'Δll -0.300 < −0.1 nats/token', 'he/she moved -0.600 (|·| > 0.5)']);
    expect(doseVerdict({ reach: Number.NaN, kl: 0, deltaLl: 0, others: [] }, b)).toEqual(['reach NaN < R = 1']);
  });
});

describe('controlSums', () => {
  const V = 3;
  const ids = [0, 2, 1];
  const base = Float32Array.from([0, 1, 2, 1, 0, 0, 2, 2, -1]);
  it('equal logits give KL 0 and Δll 0 exactly; the counts are T positions and T − 1 tokens', () => {
    expect(controlSums(base, base.slice(), ids, V)).toEqual({ kl: 0, positions: 3, dll: 0, tokens: 2 });
  });
  it('KL and Δll by hand for one changed row; rows from `from` on count the same as the whole text', () => {
    const steered = base.slice();
    steered.set([0, 0, 0], 3); // position 1: uniform
    const lp = [1, 0, 0].map((x) => x - Math.log(Math.E + 2)), lq = Math.log(1 / 3);
    const kl = lp.reduce((s, x) => s + Math.exp(x) * (x - lq), 0);
    const dll = lq - lp[ids[2]];
    const all = controlSums(base, steered, ids, V);
    expect(all.kl).toBeCloseTo(kl, 6);
    expect(all.dll).toBeCloseTo(dll, 6);
    const tail = controlSums(base.subarray(V), steered.subarray(V), ids, V, 1);
    expect(tail).toEqual(all);
  });
});
