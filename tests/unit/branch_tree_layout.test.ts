import { describe, expect, it } from 'vitest';
import { fitLabel, tokenCellWidth } from '../../app/components/BranchTreeChart';

/**
 * The branch tree's token columns (components/BranchTreeChart.tsx): labels stay legible (most shown
 * whole, the rest cut with "…", the full text in a tooltip), and a short tree fills its panel
 * rather than a fixed 900 px.
 */
describe('branch tree token columns', () => {
  it('are wide enough to show a typical label whole, even when the tree is then wider than its panel', () => {
    const labels = ['·The', '·want', 'ed', '·happy', '·with', '·the', '.', 'all', '·They', '·play'];
    const cell = tokenCellWidth(labels, 32, 814);
    for (const l of labels.filter((t) => t.length <= 5)) expect(fitLabel(l, cell)).toBe(l);
    expect(cell * 32).toBeGreaterThan(814);
  });

  it('fill the panel when a short tree leaves room', () => {
    expect(tokenCellWidth(['a', 'b'], 4, 814)).toBeCloseTo((814 - 120 - 14) / 4, 6);
  });

  it('cut a label longer than the column to its first characters and "…"', () => {
    const cell = tokenCellWidth(['ab', 'cd'], 40, 400);
    const cut = fitLabel('·extraordinary', cell);
    expect(cut.endsWith('…')).toBe(true);
    expect('·extraordinary'.startsWith(cut.slice(0, -1))).toBe(true);
    expect(cut.length).toBeLessThan('·extraordinary'.length);
  });
});
