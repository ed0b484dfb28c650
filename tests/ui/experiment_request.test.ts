// @vitest-environment happy-dom
/**
 * The experiment's part of a view's study request (app/components/useExperimentRequest.ts), as the
 * two views that share it send it: the Activations view's "While generating" panel
 * (GenerationCapturePanel) and the Expert routes view (RoutesView). Each sends the prompt, chat
 * template, system prompt, tools, enable_thinking, both futures and the enabled interventions as specs, as written
 * out here from the store's fields; an intervention whose vector is gone, or a future that does not
 * parse, is shown with the reason, the button stays off and the experiment is unchanged. Store and
 * DOM only; the studies themselves are mocked.
 */
import { act, createElement } from 'react';
import { describe, expect, it, vi } from 'vitest';
import type { LibraryEntry } from '../../app/store/vectors';
import type { InterventionDraft } from '../../app/store/steering';
import { domPerTest } from './dom';

vi.mock('virtual:bundled-models', () => ({ default: ['stories260K'] }));
const runStudy = vi.fn(async (..._args: unknown[]) => null);
vi.mock('../../app/actions/study', () => ({ runStudy }));

const { useStore } = await import('../../app/store');
const { GenerationCapturePanel } = await import('../../app/views/GenerationCapturePanel');
const { RoutesView } = await import('../../app/views/RoutesView');
const dom = domPerTest(useStore);

const HOOK = 'blocks.1.hook_resid_post';
const TOOL = { type: 'function', function: { name: 'lookup', description: 'Looks a word up', parameters: { type: 'object', properties: {} } } };
const vector: LibraryEntry = {
  id: 'v1', name: 'happy', vector: Float32Array.from([1, 2, 3, 4]), dModel: 4, hook: HOOK, model: null,
  provenance: { method: 'caa', position: 'last', positive: [], negative: [] }, createdAt: '2026-01-01T00:00:00Z',
};
const add: InterventionDraft = { id: 3, enabled: true, hook: HOOK, type: 'add', dose: 2.5, rotateBy: 'theta', mode: 'project', vectorId: 'v1', source: '', head: null, positions: 'all', steps: null };
const off: InterventionDraft = { ...add, id: 4, enabled: false, dose: 9 };

/** The experiment every case starts from: a system prompt, a tool, text and id futures, one enabled and one disabled intervention. */
function experiment() {
  useStore.setState({
    modelStatus: 'ready', prompt: 'Once upon a time', chatTemplate: true, system: 'Be brief.', tools: [TOOL] as never, enableThinking: false,
    good: { mode: 'text', value: ' Tom' }, bad: { mode: 'ids', value: '274 | 317' }, vectors: [vector], interventions: [add, off],
  });
}

/** What both views must send for experiment(), written out from its fields (not through the shared code). */
const EXPECTED = {
  prompt: 'Once upon a time', chatTemplate: true, system: 'Be brief.', tools: [TOOL], enableThinking: false,
  good: { text: ' Tom' }, bad: { ids: [[274], [317]] },
  specs: [expect.objectContaining({ hook: HOOK, type: 'add', alpha: 2.5, positions: 'all', vector: Float32Array.from([1, 2, 3, 4]) })], specLabels: ['intervention #1'],
};

const byTestId = (id: string) => dom.host.querySelector<HTMLElement>(`[data-testid="${id}"]`);

describe('the experiment as a study request, in the views that share it', () => {
  it('While generating sends the experiment (system, tools, futures, enabled interventions) with its hook and new tokens', () => {
    act(experiment);
    act(() => dom.root.render(createElement(GenerationCapturePanel, { hook: HOOK })));
    act(() => (byTestId('gen-capture-run') as HTMLButtonElement).click());
    expect(runStudy).toHaveBeenLastCalledWith('generationActivations', { ...EXPECTED, hook: HOOK, maxNewTokens: 16 }, expect.objectContaining({ total: 2 }));
  });

  it('Expert routes sends the same experiment with its own settings', () => {
    act(experiment);
    act(() => useStore.setState({ info: { ...(useStore.getState().info ?? {}), modelType: 'mixtral', hookNames: ['blocks.0.mlp.hook_router_logits'] } as never }));
    act(() => dom.root.render(createElement(RoutesView)));
    act(() => (byTestId('run-routes') as HTMLButtonElement).click());
    expect(runStudy).toHaveBeenLastCalledWith('route', { ...EXPECTED, banAt: 'all' }, expect.anything());
  });

  it('an intervention whose vector is gone or a future that does not parse is shown with the reason, the button off, the experiment unchanged', () => {
    act(experiment);
    act(() => useStore.setState({ vectors: [] }));
    const frozen = JSON.stringify({ interventions: useStore.getState().interventions, good: useStore.getState().good, bad: useStore.getState().bad });
    runStudy.mockClear();
    act(() => dom.root.render(createElement(GenerationCapturePanel, { hook: HOOK })));
    expect(byTestId('gen-capture-problem')?.textContent).toMatch(/intervention #1: its vector is no longer in the library/);
    expect((byTestId('gen-capture-run') as HTMLButtonElement).disabled).toBe(true);
    act(() => useStore.setState({ vectors: [vector], bad: { mode: 'ids', value: '274 x' } }));
    expect(byTestId('gen-capture-problem')?.textContent).toBeTruthy();
    expect((byTestId('gen-capture-run') as HTMLButtonElement).disabled).toBe(true);
    act(() => (byTestId('gen-capture-run') as HTMLButtonElement).click());
    expect(runStudy).not.toHaveBeenCalled();
    act(() => useStore.setState({ bad: { mode: 'ids', value: '274 | 317' } }));
    expect(JSON.stringify({ interventions: useStore.getState().interventions, good: useStore.getState().good, bad: useStore.getState().bad })).toBe(frozen);
    expect(byTestId('gen-capture-problem')).toBeNull();
    expect((byTestId('gen-capture-run') as HTMLButtonElement).disabled).toBe(false);
  });
});
