import { describe, expect, it } from 'vitest';
import { duration, ETA_MIN_STEPS, etaSeconds, nextEta, steadyEta, type EtaState, type ShownEta } from '../../app/lib/time_left';

/**
 * The time left on the progress line (lib/time_left.ts). Fresh-user trial t2: a fork-points run
 * said "about 2 min" before it started and "3 min left" after three continuations — the pace of the
 * first (longest) continuations, counted as if all cost the same.
 */
describe('the time left of a job', () => {
  const start = { at: 0, work: 0, done: 0 };

  it('is the pace since its base times the work left, in the units of equal cost when the job gives them', () => {
    expect(etaSeconds(10, { done: 4, total: 12 }, start)).toBeCloseTo(20, 12);
    // 4 continuations done, but they were the long ones: 400 of 1000 token positions → 15 s left, not 20
    expect(etaSeconds(10, { done: 4, total: 12, work: { done: 400, total: 1000 } }, start)).toBeCloseTo(15, 12);
    // measured from a base after the warm-up: 6 s for 200 units since 4 s in → 0.03 s per unit × 400 left
    expect(etaSeconds(10, { done: 9, total: 20, work: { done: 600, total: 1000 } }, { at: 4, work: 400, done: 3 })).toBeCloseTo(12, 12);
  });

  it('is not said before ETA_MIN_STEPS steps were measured after the base, nor once all are done', () => {
    expect(ETA_MIN_STEPS).toBe(3);
    expect(etaSeconds(10, { done: 2, total: 12 }, start)).toBeNull();
    expect(etaSeconds(10, { done: 5, total: 12 }, { at: 2, work: 3, done: 3 })).toBeNull();
    expect(etaSeconds(10, { done: 12, total: 12 }, start)).toBeNull();
    expect(etaSeconds(10, { done: 5, total: 12, work: { done: 9, total: 9 } }, start)).toBeNull();
  });

  it('leaves the warm-up out: the base is set after the first ETA_MIN_STEPS steps, the pace measured from there', () => {
    // a fork-points run: the first 3 continuations (64 token positions each) take 6 s (pipelines compiled), the next 3 (63 each) 3 s
    let st: EtaState = { base: null, shown: null };
    const work = (done: number, tokens: number) => ({ done, total: 176, work: { done: tokens, total: 5608 } });
    st = nextEta(st, 2, work(1, 64));
    expect(st).toEqual({ base: null, shown: null });
    st = nextEta(st, 6, work(3, 192));
    expect(st).toEqual({ base: { at: 6, work: 192, done: 3 }, shown: null, step: 3 });
    st = nextEta(st, 9, work(6, 381));
    // 3 s for 189 positions × 5227 left ≈ 83 s (the pace since the start would say 123 s)
    const first = (3 / 189) * 5227;
    expect(st.shown?.seconds).toBeCloseTo(first, 9);
    expect(st.base).toEqual({ at: 6, work: 192, done: 3 });
    // between steps (a long continuation runs) it counts down; it is not re-estimated as if time passed without work
    st = nextEta(st, 10.5, work(6, 381));
    expect(st.shown?.seconds).toBeCloseTo(first - 1.5, 9);
    st = nextEta(st, 11, work(6, 381));
    expect(st.shown?.seconds).toBeCloseTo(first - 2, 9);
  });

  it('counts down between estimates: noise never raises it, a faster pace lowers it, a real slowdown is said', () => {
    let shown: ShownEta | null = null;
    const at = (now: number, estimate: number | null) => (shown = steadyEta(shown, estimate, now))?.seconds ?? null;
    expect(at(5, null)).toBeNull();
    expect(at(10, 120)).toBe(120);
    // 1 s later a re-estimate of 125 s (noise): it counts down to 119 instead
    expect(at(11, 125)).toBe(119);
    // faster: a lower estimate is taken
    expect(at(12, 100)).toBe(100);
    // a re-estimate well above the countdown (> 1.25 × 99 + 2 s): the job really slowed, said
    expect(at(13, 140)).toBe(140);
    // the sequence shown while the estimates wobble within the noise band never goes up
    shown = null;
    const seq = [60, 62, 58, 61, 59, 63, 57].map((e, i) => at(i, e)!);
    for (let i = 1; i < seq.length; i++) expect(seq[i]).toBeLessThanOrEqual(seq[i - 1]);
  });

  it('reads in words at the granularity it deserves', () => {
    expect([duration(0.4), duration(42.4), duration(178)]).toEqual(['under a second', 'about 42 s', 'about 3 min']);
  });
});
