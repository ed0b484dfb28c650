import { describe, expect, it } from 'vitest';
import { rgb } from 'd3';
import { fitLabel, LABEL_PX, labelInk, nodeColourScale, tokenCellWidth, TREE_LEFT, TREE_RIGHT, WHOLE_CHARS } from '../../app/components/BranchTreeChart';
import type { BranchTree } from '../../workers/protocol';

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
    expect(tokenCellWidth(['a', 'b'], 4, 814)).toBeCloseTo((814 - TREE_LEFT - TREE_RIGHT) / 4, 6);
  });

  it('show every label of up to WHOLE_CHARS characters whole, at 12 px (trials at 1440×900: 10 px, "·hap…")', () => {
    // The trunk the trial saw: mostly short tokens, a few long ones.
    const labels = ['·the', '·p', 'ar', 'k', '.', '·They', '·we', 're', '·very', '·happy', '.', '·They', '·want', 'ed', '·to', '·play', '·with', '·the', '·b', 'all', '.', '·wonderful'];
    const cell = tokenCellWidth(labels, 32, 1000);
    for (const l of labels) expect(fitLabel(l, cell)).toBe(l);
    expect(WHOLE_CHARS).toBeGreaterThanOrEqual(10);
    expect(LABEL_PX).toBeGreaterThanOrEqual(12);
  });

  it('cut a label longer than the column to its first characters and "…"', () => {
    const cell = tokenCellWidth(['ab', 'cd'], 40, 400);
    const cut = fitLabel('·extraordinary', cell);
    expect(cut.endsWith('…')).toBe(true);
    expect('·extraordinary'.startsWith(cut.slice(0, -1))).toBe(true);
    expect(cut.length).toBeLessThan('·extraordinary'.length);
  });
});

/** WCAG 2.x contrast ratio of two colours (https://www.w3.org/TR/WCAG21/#dfn-contrast-ratio). */
function contrast(a: string, b: string): number {
  const L = (c: string) => { const { r, g, b: bl } = rgb(c); const lin = (v: number) => { const u = v / 255; return u <= 0.04045 ? u / 12.92 : ((u + 0.055) / 1.055) ** 2.4; }; return 0.2126 * lin(r) + 0.7152 * lin(g) + 0.0722 * lin(bl); };
  const [hi, lo] = [L(a), L(b)].sort((x, y) => y - x);
  return (hi + 0.05) / (lo + 0.05);
}

describe('branch tree token labels are readable on every node colour (the trial: dark on dark negative cells)', () => {
  it('white on the dark ends of the margin scale, black on the light middle', () => {
    expect(labelInk('#67001f')).toBe('#ffffff');
    expect(labelInk('#053061')).toBe('#ffffff');
    expect(labelInk('#f7f7f7')).toBe('#000000');
  });

  it('reach the WCAG AA contrast 4.5 against every colour of the margin and entropy scales', () => {
    for (const colour of ['final_margin', 'mean_entropy'] as const) {
      const tree = { nodes: [{ margins: [-2], entropy: [0] }, { margins: [2], entropy: [3] }] } as unknown as BranchTree;
      const { color, domain } = nodeColourScale(tree, colour);
      for (let i = 0; i <= 100; i++) {
        const fill = color(domain[0] + ((domain[1] - domain[0]) * i) / 100);
        expect(contrast(labelInk(fill), fill), `${colour} ${fill}`).toBeGreaterThanOrEqual(4.5);
      }
    }
  });
});
