// @vitest-environment happy-dom
/**
 * The Patching and Report views mark a result that no longer answers the setup as the other views
 * do (fresh-user trial t2: a grid of " mat" vs " dog" stayed unmarked after the futures became
 * " happy" vs " sad", and its stale line said "press Analyse", which does not rerun it): the line
 * says what changed (load, prompt pair, futures, window interventions) and names the view's own
 * action with its button, and the figure is dimmed with the overlay. Store and DOM only; the
 * canvas heatmap and the report's SVG are stubbed (happy-dom draws no canvas).
 */
import { act, createElement } from 'react';
import { beforeEach, describe, expect, it, vi } from 'vitest';
import { domPerTest } from './dom';
import type { PatchingResult, ReportResult } from '../../workers/protocol';
import type { InterventionDraft } from '../../app/store/steering';

vi.mock('virtual:bundled-models', () => ({ default: ['stories260K'] }));
// the views count the pair's tokens in the worker: never answered here
vi.mock('../../app/actions/worker', async (orig) => ({ ...(await orig<object>()), inOrder: vi.fn(() => new Promise(() => undefined)) }));
vi.mock('../../app/components/Heatmap', () => ({ Heatmap: () => createElement('canvas', { 'data-testid': 'heatmap-stub' }) }));
vi.mock('../../app/components/ReportFigure', () => ({ ReportFigure: () => createElement('svg', { className: 'chart', 'data-testid': 'report-figure-stub' }) }));

const { useStore } = await import('../../app/store');
const { PatchingView } = await import('../../app/views/PatchingView');
const { ReportView } = await import('../../app/views/ReportView');
const { windowApplied } = await import('../../app/actions/window');

const initial = useStore.getState();
const dom = domPerTest(useStore);

const F32 = 'stories260K · float32 · WebGPU', Q8 = 'stories260K · Q8_0 · CPU';
const CLEAN = 'The cat sat on the mat. The dog sat on the', CORRUPT = 'The cat sat on the dog. The dog sat on the';
const MAT = { mode: 'text' as const, value: ' mat' }, DOG = { mode: 'text' as const, value: ' dog' };
const grid: PatchingResult = {
  hook: 'resid_pre', hookTemplate: 'blocks.{l}.hook_resid_pre', direction: 'denoise', metric: 'final', nLayers: 2,
  columns: 'position', nCols: 3, cleanIds: [1, 2, 3], corruptIds: [1, 4, 3], cleanTokens: ['<s>', ' mat', ' the'], corruptTokens: ['<s>', ' dog', ' the'],
  good: { text: ' mat', ids: [9], firstIds: [9] } as unknown as PatchingResult['good'], bad: { text: ' dog', ids: [8], firstIds: [8] } as unknown as PatchingResult['bad'],
  cleanMargin: 0.1067, corruptMargin: -1.7372,
  patchedMargin: Float32Array.from([1, 2, 3, 4, 5, 6]), recovery: Float32Array.from([0, 1, 0, 0, 1, 0]), layerRecovery: Float32Array.from([1, 1]),
  positionsComputed: 12, cellsSkipped: 0,
};
const report: ReportResult = {
  nPrompts: 1, label: 'one prompt', threshold: 0.1, causalRecovery: 0.5, nLayers: 2,
  visible: { layer: 0, token: 2, curve: [0.5, 1, 2], band: null, interval: null },
  causal: { layer: 1, positions: [1], trivial: { positions: [1], recovery: 1 }, curve: [1, 1], band: null, interval: null, skipped: 0 },
  probe: null, changeable: null, patching: grid,
  prompts: [{ clean: CLEAN, corrupt: CORRUPT, lensLast: [0.5, 1, 2], finalSign: 1, visibleLayer: 0, visibleToken: 2, maxRecovery: [1, 1], causalLayer: 1, causalPositions: [1], window: null }],
};
const intervention = (patch: Partial<InterventionDraft> = {}): InterventionDraft => ({
  id: 1, enabled: true, hook: 'blocks.1.hook_resid_post', type: 'add', dose: 4, rotateBy: 'theta', mode: 'project',
  vectorId: 'v1', source: '', head: null, positions: 'all', steps: null, ...patch,
});

/** The trial's setup: the cat/dog pair (edited by the user, so it no longer follows the experiment's prompt), " mat" vs " dog", float32 on WebGPU. */
function setUp() {
  useStore.setState({
    modelStatus: 'ready', modelLabel: 'stories260K', modelIdentity: F32,
    prompt: 'The little girl felt very', good: MAT, bad: DOG,
    patchingSettings: { ...initial.patchingSettings, clean: CLEAN, corrupt: CORRUPT }, patchingFollowsPrompt: false,
    probeSettings: { ...initial.probeSettings, positive: 'a\nb', negative: 'c\nd' },
  });
}
const q = (id: string) => dom.host.querySelector(`[data-testid="${id}"]`);

describe('a stale patching grid', () => {
  beforeEach(() => {
    setUp();
    useStore.getState().setPatching({ result: grid, modelLabel: 'stories260K', computedWith: F32, clean: CLEAN, corrupt: CORRUPT, chatTemplate: false, system: undefined, tools: [], good: MAT, bad: DOG });
    act(() => dom.root.render(createElement(PatchingView)));
  });

  it('up to date: no stale line, the heatmap not dimmed', () => {
    expect(q('patching-status')).toBeNull();
    expect(q('patching-stale')).toBeNull();
    expect(q('heatmap-stub')!.closest('.figure')!.classList.contains('stale')).toBe(false);
  });

  it('the trial: futures → happy/sad and the model reloaded as Q8_0 on the CPU: both are said, with Run patching (not Analyse), and the map is dimmed', () => {
    act(() => useStore.setState({ modelIdentity: Q8, good: { mode: 'text', value: ' happy' }, bad: { mode: 'text', value: ' sad' } }));
    const status = q('patching-status')!;
    expect(status.getAttribute('data-stale')).toBe('load futures');
    expect(status.textContent).toContain(`computed with ${F32} (${Q8} is loaded now), and the futures changed since this patching grid: press Run patching.`);
    expect(status.textContent).not.toContain('Analyse');
    expect(q('patching-status-rerun')!.textContent).toBe('Run patching');
    expect(q('patching-status-analyse')).toBeNull();
    expect(q('heatmap-stub')!.closest('.figure')!.classList.contains('stale')).toBe(true);
    expect(q('patching-stale')!.textContent).toBe('Stale — run patching again');
    // the caption still says which futures the grid measured
    expect(q('patching-caption')!.textContent).toContain('log p(·mat)');
  });

  it('an edited prompt pair is "the prompt pair changed"; setting it back makes the grid current again', () => {
    act(() => useStore.getState().setPatchingSettings({ corrupt: 'The cat sat on the hat. The dog sat on the' }));
    expect(q('patching-status')!.textContent).toContain('the prompt pair changed since this patching grid: press Run patching.');
    act(() => useStore.getState().setPatchingSettings({ corrupt: CORRUPT }));
    expect(q('patching-status')).toBeNull();
    expect(q('patching-stale')).toBeNull();
  });

  it('another model: its own line ("from the previous model"), not dimmed, as in the other views', () => {
    act(() => useStore.setState({ modelLabel: 'aidreams260K', modelIdentity: 'aidreams260K · float32 · WebGPU' }));
    expect(q('patching-status-model')!.textContent).toContain('From the previous model (stories260K)');
    expect(q('patching-stale')).toBeNull();
  });
});

describe('a stale decision-point report', () => {
  beforeEach(() => {
    setUp();
    const list = [intervention()];
    useStore.setState({ interventions: list });
    useStore.getState().setReport({
      result: report, modelLabel: 'stories260K', computedWith: F32, clean: CLEAN, corrupt: CORRUPT, chatTemplate: false, system: undefined, tools: [], good: MAT, bad: DOG,
      steering: 'add at blocks.1.hook_resid_post', windowSteering: windowApplied(list, null), scoreLabel: 'mean margin over all 12 steps', setSource: null,
    });
    act(() => dom.root.render(createElement(ReportView)));
  });

  it('up to date: no stale line, the answers and figure not dimmed', () => {
    expect(q('report-status')).toBeNull();
    expect(q('report-answers')!.classList.contains('stale')).toBe(false);
    expect(q('report-figure-stub')!.closest('.figure')!.classList.contains('stale')).toBe(false);
  });

  it('the trial: another load and other futures, said with Build report (not Analyse); answers and figure dimmed', () => {
    act(() => useStore.setState({ modelIdentity: Q8, good: { mode: 'text', value: ' happy' } }));
    const status = q('report-status')!;
    expect(status.getAttribute('data-stale')).toBe('load futures');
    expect(status.textContent).toContain('and the futures changed since this report: press Build report.');
    expect(status.textContent).not.toContain('Analyse');
    expect(q('report-status-rerun')!.textContent).toBe('Build report');
    expect(q('report-answers')!.classList.contains('stale')).toBe(true);
    expect(q('report-stale')!.textContent).toBe('Stale — build the report again');
  });

  it('an edit of the intervention its window switched on makes it stale; the chat template is the prompt pair\'s part', () => {
    act(() => useStore.getState().updateIntervention(1, { dose: 8 }));
    expect(q('report-status')!.getAttribute('data-stale')).toBe('interventions');
    expect(q('report-status')!.textContent).toContain('the interventions changed since this report');
    act(() => useStore.getState().updateIntervention(1, { dose: 4 }));
    expect(q('report-status')).toBeNull();
    act(() => useStore.getState().setChatTemplate(true));
    expect(q('report-status')!.textContent).toContain('the prompt pair changed since this report');
  });
});
