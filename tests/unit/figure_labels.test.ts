import { describe, expect, it } from 'vitest';
import { columnLabelSpacing, LABEL_PITCH } from '../../app/components/Heatmap';
import { positionLabel } from '../../app/lib/format';
import { buildFigureSvg } from '../../app/lib/figure';

describe('heatmap column labels never overlap (the trial’s patching x-labels)', () => {
  it('neighbouring drawn labels are at least LABEL_PITCH apart across their baselines, at every column width', () => {
    for (let cw = 4; cw <= 100; cw += 0.5) {
      const { angle, labelEvery } = columnLabelSpacing(cw);
      expect(cw * labelEvery * Math.sin(angle), `cw = ${cw}`).toBeGreaterThanOrEqual(LABEL_PITCH - 1e-9);
    }
  });

  it('keeps every label where the columns allow it: vertical at 16 px (the patching grid), 45° when wide', () => {
    expect(columnLabelSpacing(16)).toEqual({ angle: Math.PI / 2, labelEvery: 1 });
    expect(columnLabelSpacing(30)).toEqual({ angle: Math.PI / 4, labelEvery: 1 });
    expect(columnLabelSpacing(8).labelEvery).toBe(2);
  });
});

describe('one way to name a sequence position (branch view)', () => {
  it('absolute position, with the new-token index after the prompt', () => {
    expect(positionLabel(14, 11)).toBe('position 14 (new token 3)');
    expect(positionLabel(11, 11)).toBe('position 11 (new token 0)');
    expect(positionLabel(5, 11)).toBe('position 5 (prompt)');
  });
});

describe('a figure colour bar\'s end notes never run together (the trial\'s branch-tree legend with long futures)', () => {
  /** 7 px per character: the notes' widths as the layout sees them. */
  const measure = (t: string) => 7 * t.length;
  /** The two end notes of a one-panel heatmap figure: x, y, anchor and the x-extent they cover at that measure. */
  const notes = (lowNote: string, highNote: string) => {
    const { svg } = buildFigureSvg({ title: 't', caption: [], panels: [{ kind: 'heatmap', values: [0, 1], nRows: 1, nCols: 2, rowLabels: ['L0'], colLabels: ['a', 'b'], rowTitle: 'layer', colTitle: 'token', scale: { color: () => '#fff', domain: [-1, 1], title: 'Δ', lowNote, highNote } }] }, measure);
    return [...svg.matchAll(/<text x="([\d.]+)" y="([\d.]+)"[^>]*?(text-anchor="end")?[^>]*class="end-note">([^<]*)</g)].map((m) => {
      const x = Number(m[1]), w = measure(m[4].replace(/&[a-z]+;/g, '_'));
      return { y: Number(m[2]), from: m[3] ? x - w : x, to: m[3] ? x : x + w };
    });
  };

  it('side by side on one line when they fit with a gap; the high note on its own line when they do not; never overlapping on a line', () => {
    const [lo, hi] = notes('← favours ·Lily', 'favours ·Tom →');
    expect(hi.y).toBe(lo.y);
    expect(hi.from - lo.to).toBeGreaterThanOrEqual(16);
    const long = notes('← favours ·his·big·sister·and·her·friends', 'favours ·the·little·boy·with·the·red·ball →');
    expect(long[1].y).toBeGreaterThan(long[0].y);
    for (const [a, b] of [[lo, hi], long] as const) if (a.y === b.y) expect(a.to).toBeLessThanOrEqual(b.from);
  });
});
