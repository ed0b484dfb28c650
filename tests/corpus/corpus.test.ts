import { afterAll, describe, expect, it } from 'vitest';
import { CASES } from './cases';
import { baseEngine, judge, runInput } from './run_case';

/**
 * The bad-input corpus (issue #8), every case through the engine and the runner in process:
 * each refusal names its culprit, each accepted input gives its stated result. Prints the outcome
 * counts for the closing note.
 */
const counts = { refused: 0, result: 0 };
const areas = new Map<string, number>();

describe('bad-input corpus', () => {
  it('has at least 80 cases with unique ids', () => {
    expect(CASES.length).toBeGreaterThanOrEqual(80);
    expect(new Set(CASES.map((c) => c.id)).size).toBe(CASES.length);
  });
  for (const c of CASES) {
    it(`${c.id}: ${c.what} → ${'error' in c.expect ? `refused (${c.expect.error.source.slice(0, 60)}…)` : c.expect.ok}`, async () => {
      const t0 = performance.now();
      const o = await runInput(c.input());
      const ms = performance.now() - t0;
      expect(judge(c, o)).toBe(true);
      if (c.withinMs !== undefined) expect(ms, `answered in ${ms.toFixed(0)} ms`).toBeLessThan(c.withinMs);
      counts[o.ok ? 'result' : 'refused']++;
      const area = c.id.split('/')[0];
      areas.set(area, (areas.get(area) ?? 0) + 1);
    }, 60_000);
  }
});

afterAll(async () => {
  (await baseEngine()).dispose();
  console.log(`corpus: ${CASES.length} cases, ${counts.refused} refused with the expected message, ${counts.result} gave the expected result; by area: ${[...areas].map(([a, n]) => `${a} ${n}`).join(', ')}`);
});
