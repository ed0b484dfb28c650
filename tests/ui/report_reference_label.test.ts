// @vitest-environment happy-dom
/**
 * The report figure's reference-line labels ("threshold 0.1", "r = 0.5", "sign change") stand
 * outside the plot, right of its last point and of the second curve's right axis, so they never
 * cover a data point (fresh-user trial t3: "threshold 0.1" sat on the final layer's point L4).
 */
import { act, createElement } from 'react';
import { describe, expect, it } from 'vitest';
import { domPerTest } from './dom';
import { ReportFigure, type ReportPanel } from '../../app/components/ReportFigure';

const dom = domPerTest({ getState: () => ({}), setState: () => {} });

/** A layer panel whose final point lies on its reference line (the trial's case: Δ at L4 ≈ the threshold). */
const panel = (testId: string, label: string, y: number, extra = false): ReportPanel => ({
  title: testId, yLabel: 'y', curve: [-4.5, -2.5, -0.1, 0, 0.4, y], band: null, reference: { y, label }, mark: { x: 3, label: 'from L2' }, testId,
  extra: extra ? { name: 'probe accuracy', curve: [0.5, 0.5, 0.6, 0.8, 1, 1], domain: [0, 1] } : null,
});

describe('the report figure\'s reference labels', () => {
  for (const extra of [false, true]) {
    it(`stand right of every point and of the plot${extra ? ', after the second curve\'s right axis,' : ''} and end inside the figure`, () => {
      const step: ReportPanel = { ...panel('step', 'sign change', 0), curve: [1, 0.5, 0, -1] };
      act(() => dom.root.render(createElement(ReportFigure, { layerPanels: [panel('visible', 'threshold 0.1', 0.1, extra), panel('causal', 'r = 0.5', 0.5)], stepPanel: step, nLayers: 5, testId: 'fig' })));
      const svg = dom.host.querySelector('svg')!;
      const W = Number(svg.getAttribute('width'));
      const plotRight = Math.max(...[...svg.querySelectorAll('line')].map((l) => Number(l.getAttribute('x2'))));
      const points = [...svg.querySelectorAll('circle')].map((c) => Number(c.getAttribute('cx')) + Number(c.getAttribute('r')));
      const axis = [...svg.querySelectorAll('[data-testid="report-extra"] text')].filter((t) => /^[\d.]+$/.test(t.textContent!)).map((t) => Number(t.getAttribute('x')) + 6.5 * t.textContent!.length);
      for (const id of ['visible', 'causal', 'step']) {
        const label = dom.host.querySelector(`[data-testid="${id}-reference"]`)!;
        const x = Number(label.getAttribute('x'));
        expect(x, id).toBeGreaterThan(Math.max(plotRight, ...points));
        if (id === 'visible' && extra) expect(x, 'after the right axis').toBeGreaterThanOrEqual(Math.max(...axis));
        expect(x + 6.5 * label.textContent!.length, `${id} inside the figure`).toBeLessThanOrEqual(W);
        expect(label.getAttribute('text-anchor') ?? 'start').toBe('start');
      }
    });
  }
});
