import { describe, expect, it } from 'vitest';
import { columnLabelSpacing, LABEL_PITCH } from '../../app/components/Heatmap';
import { positionLabel } from '../../app/lib/format';

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
