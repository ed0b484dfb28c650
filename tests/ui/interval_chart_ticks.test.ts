/**
 * Issue 29: the Batch plot of a one-row batch (mean, interval and dot at one value) labelled its
 * y ticks with every float digit ("4.8608770002", steps of 2e-10 from a ±1e-9 domain), over the
 * axis title. The value axis is padded to readable units (app/lib/value_domain.ts) and its labels
 * are D3's tick format: a few short labels around the value.
 */
import { createElement } from 'react';
import { renderToStaticMarkup } from 'react-dom/server';
import { describe, expect, it } from 'vitest';
import { IntervalChart } from '../../app/components/IntervalChart';

/** The y tick labels of an IntervalChart of one group at `v` (one row: lo = hi = mean = v). */
function oneRowTicks(v: number): string[] {
  const html = renderToStaticMarkup(createElement(IntervalChart, {
    groups: [{ x: 0, label: 'a', mean: v, lo: v, hi: v, n: 1 }], points: [[0, v]], xLabel: 'x', yLabel: 'margin', label: 'one row',
  }));
  return [...html.matchAll(/<g class="y-tick"[^>]*>(?:<line[^>]*><\/line>)?<text[^>]*>([^<]*)<\/text>/g)].map((m) => m[1]);
}

describe('the Batch plot of one row', () => {
  it.each([4.860877, -4.860877, 0, 0.000731, 1234.5678])('ticks %s with 3 to 11 labels of at most 8 characters, the value between the first and the last', (v) => {
    const ticks = oneRowTicks(v);
    expect(ticks.length).toBeGreaterThanOrEqual(3);
    expect(ticks.length).toBeLessThanOrEqual(11);
    for (const t of ticks) expect(t.length, t).toBeLessThanOrEqual(8);
    const values = ticks.map((t) => Number(t.replace('−', '-').replace(/,/g, '')));
    expect(values[0]).toBeLessThanOrEqual(v);
    expect(values.at(-1)).toBeGreaterThanOrEqual(v);
  });
});
