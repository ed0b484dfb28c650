// @vitest-environment happy-dom
/**
 * The decision-point report explains its "visible" answer (fresh-user trial t2: "from position 13
 * (token “g”)" stood unexplained): the layer half reads the logit lens at the last prompt position
 * down the layers, the position half the final layer along the prompt (DESIGN.md §3,
 * studies/report.ts firstStable). Text and DOM only; the report's SVG is stubbed.
 */
import { act, createElement } from 'react';
import { createRoot, type Root } from 'react-dom/client';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import type { PatchingResult, ReportResult } from '../../workers/protocol';
import type { ReportDisplay } from '../../app/store/report';
import { reportJson } from '../../workers/engine/studies/report_json';

vi.mock('virtual:bundled-models', () => ({ default: ['stories260K'] }));
vi.mock('../../app/actions/worker', async (orig) => ({ ...(await orig<object>()), inOrder: vi.fn(() => new Promise(() => undefined)) }));
vi.mock('../../app/components/ReportFigure', () => ({ ReportFigure: () => createElement('svg', { className: 'chart' }) }));

const { useStore } = await import('../../app/store');
const { ReportView, visibleWhy } = await import('../../app/views/ReportView');

// The trial's pair on stories260K (5 layers): 18 clean tokens, visible at the embed row and from position 13 “g”.
const TOKENS = ['<s>', ' The', ' c', ' at', ' s', ' at', ' on', ' the', ' m', ' at', '.', ' The', ' do', 'g', ' s', ' at', ' on', ' the'];
const grid = {
  hook: 'resid_pre', hookTemplate: 'blocks.{l}.hook_resid_pre', direction: 'denoise', metric: 'final', nLayers: 5, columns: 'position', nCols: 18,
  cleanIds: TOKENS.map((_, i) => i), corruptIds: TOKENS.map((_, i) => i), cleanTokens: TOKENS, corruptTokens: TOKENS,
  cleanMargin: 0.1067, corruptMargin: -1.7372, patchedMargin: new Float32Array(90), recovery: new Float32Array(90), layerRecovery: new Float32Array(5), positionsComputed: 0, cellsSkipped: 0,
} as unknown as PatchingResult;
const result = (patch: Partial<ReportResult> = {}, finalSign: 1 | -1 = 1): ReportResult => ({
  nPrompts: 1, label: 'one prompt', threshold: 0.1, causalRecovery: 0.5, nLayers: 5,
  visible: { layer: 0, token: 13, curve: [5.3, 4.3, 4.1, 3.4, 3.2, 0.1], band: null, interval: null },
  causal: { layer: 1, positions: [8], trivial: { positions: [8, 9], recovery: 1.11 }, curve: [1.1, 1.1, 1, 1, 1], band: null, interval: null, skipped: 0 },
  probe: null, changeable: null, patching: grid,
  prompts: [{ clean: 'c', corrupt: 'k', lensLast: [], finalSign, visibleLayer: 0, visibleToken: 13, maxRecovery: null, causalLayer: 1, causalPositions: [8], window: null }],
  ...patch,
});
const display = (r: ReportResult): ReportDisplay => ({
  result: r, modelLabel: 'stories260K', computedWith: '', clean: 'c', corrupt: 'k', chatTemplate: false, system: undefined, tools: [],
  good: { mode: 'text', value: ' mat' }, bad: { mode: 'text', value: ' dog' }, steering: null, windowSteering: null, scoreLabel: null, setSource: null,
});

describe('the visible answer in words', () => {
  it('one prompt: the layer half at the last position, the position half along the prompt at the final layer, toward the final answer', () => {
    expect(visibleWhy(display(result()))).toBe(
      'At the last prompt position (17 “·the”), the logit-lens margin favours “·mat” (the final answer) by |Δ| ≥ 0.1 from embed on, keeping that sign through every later layer. '
      + 'Read at the final layer along the prompt instead (the model’s next-token prediction after each token), it favours “·mat” by |Δ| ≥ 0.1 from position 13 “g” on, keeping that sign to the last position.');
  });

  it('the final answer is the bad future when the final margin is negative; a later layer and the last position are named so', () => {
    const r = result({ visible: { layer: 3, token: 17, curve: [], band: null, interval: null } }, -1);
    expect(visibleWhy(display(r))).toBe(
      'At the last prompt position (17 “·the”), the logit-lens margin favours “·dog” (the final answer) by |Δ| ≥ 0.1 from L2 on, keeping that sign through every later layer. '
      + 'Read at the final layer along the prompt instead (the model’s next-token prediction after each token), it favours “·dog” by |Δ| ≥ 0.1 from position 17 “·the” on (the last position).');
  });

  it('a prompt set: the layer from the mean curve, the position of the clean prompt; nothing visible: no explanation', () => {
    const set = visibleWhy(display(result({ nPrompts: 12, label: '12 prompts' })));
    expect(set).toContain('Averaged over the 12 prompts, the logit-lens margin at each prompt’s last position, toward its own final answer, reaches |Δ| ≥ 0.1 at embed');
    expect(set).toContain('Read at the final layer along the clean prompt instead');
    expect(visibleWhy(display(result({ visible: { layer: null, token: null, curve: [], band: null, interval: null } })))).toBe('');
  });
});

describe('the Report view', () => {
  (globalThis as { IS_REACT_ACT_ENVIRONMENT?: boolean }).IS_REACT_ACT_ENVIRONMENT = true;
  const initial = useStore.getState();
  let root: Root;
  let host: HTMLElement;
  beforeEach(() => {
    useStore.setState(initial, true);
    host = document.createElement('div');
    document.body.append(host);
    root = createRoot(host);
  });
  afterEach(() => {
    act(() => root.unmount());
    host.remove();
  });

  it('shows the explanation under the visible answer, whose headline and data attributes (and the JSON keys) are unchanged', () => {
    const d = display(result());
    useStore.setState({ report: d, probeSettings: { ...initial.probeSettings, positive: 'a', negative: 'b' } });
    act(() => root.render(createElement(ReportView)));
    const dd = host.querySelector('[data-testid="report-visible"]')!;
    expect(dd.getAttribute('data-layer')).toBe('0');
    expect(dd.getAttribute('data-token')).toBe('13');
    expect(dd.textContent).toContain('embed · blocks.0.hook_resid_pre · from position 13 (token “g”)');
    expect(host.querySelector('[data-testid="report-visible-why"]')!.textContent).toBe(` · ${visibleWhy(d)}`);
    expect(Object.keys(reportJson(d.result))).toContain('visible_token');
  });
});
