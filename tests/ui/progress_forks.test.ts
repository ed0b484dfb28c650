// @vitest-environment happy-dom
/**
 * The progress line of a fork-points run (fresh-user trial t2: the estimate said "22 near-tie
 * tokens", the line "3 of 176 continuations", Cancel "3 of 64 positions"; the time left jumped
 * from "about 2 min" to "3 min"): it counts in the estimate's units, shows no time left before the
 * first few continuations, then the time at the run's pace per token position, and the bar moves
 * by token positions. Store and DOM only.
 */
import { act, createElement } from 'react';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { domPerTest } from './dom';

vi.mock('virtual:bundled-models', () => ({ default: ['stories260K'] }));

const { useStore } = await import('../../app/store');
const { Progress } = await import('../../app/components/Progress');
const { forkSteps } = await import('../../app/lib/fork_estimate');

const dom = domPerTest(useStore);

describe('the fork-points progress line', () => {
  afterEach(() => vi.useRealTimers());

  it('continuations and the near-tie tokens scored; the time left only after the warm-up and a few measured continuations, per token position; the bar by token positions', () => {
    vi.useFakeTimers({ toFake: ['setInterval', 'clearInterval', 'performance'] });
    const at = (p: { done: number; scored: number; tokens: number }) => act(() => useStore.getState().setJobSteps(forkSteps({ ...p, total: 176, positions: 22, tokensTotal: 5608 }, true)));
    act(() => useStore.getState().setJob({ kind: 'forks', label: 'Finding fork points', startedAt: performance.now(), cancellable: true }));
    at({ done: 1, scored: 0, tokens: 64 });
    act(() => dom.root.render(createElement(Progress)));
    const detail = () => dom.host.querySelector('[data-testid="progress-detail"]')!.textContent;
    expect(detail()).toBe('1 of 176 continuations · 0 of 22 near-tie tokens scored');
    // the first 3 continuations (64 token positions each) take 6 s: the warm-up, no time left yet
    act(() => vi.advanceTimersByTime(6000));
    at({ done: 3, scored: 0, tokens: 192 });
    expect(detail()).toBe('3 of 176 continuations · 0 of 22 near-tie tokens scored');
    // the next 3 (63 each) take 3 s: 3 s per 189 positions × 5227 left ≈ 83 s (not 9 s × 5227/381 ≈ 2 min, nor 9 s × 170/6 ≈ 4 min)
    act(() => vi.advanceTimersByTime(3000));
    at({ done: 6, scored: 0, tokens: 381 });
    expect(detail()).toBe('6 of 176 continuations · 0 of 22 near-tie tokens scored · about 83 s left');
    expect(Number(dom.host.querySelector('progress')!.getAttribute('value'))).toBeCloseTo(381 / 5608, 6);
    // a second later the countdown goes on (a re-estimate within the noise does not raise it)
    act(() => vi.advanceTimersByTime(1000));
    at({ done: 7, scored: 0, tokens: 443 });
    expect(detail()).toMatch(/· about 8[0-2] s left$/);
    expect(dom.host.querySelector('[data-testid="progress-waiting"]')!.textContent).toBe('Other actions wait for it (their buttons are disabled); Analyse queues behind it.');
  });
});
