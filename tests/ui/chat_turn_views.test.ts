// @vitest-environment happy-dom
/**
 * The views that build their own request, or keep a result, beside the experiment's prompt (issue
 * #27: they dropped the system prompt and tools): AtP beside the exact grid on display, steering
 * transfer, a fork's flow back to the prompt, the Patching view's token counts of its pair, and the
 * probes' stale line. Each request must carry the chat turn (chat template, system prompt, tools)
 * as written out here from the fields set (not through the app's request functions); a probe
 * result must be marked stale when the system prompt or the tools change. Store and DOM only; the
 * studies and the worker are mocked.
 */
import { act, createElement } from 'react';
import { describe, expect, it, vi } from 'vitest';
import type { BranchTree, PatchingResult, ProbeResult } from '../../workers/protocol';
import type { TreePath } from '../../workers/shared';
import { domPerTest } from './dom';

vi.mock('virtual:bundled-models', () => ({ default: ['stories260K'] }));
const runStudy = vi.fn(async (..._args: unknown[]) => null);
vi.mock('../../app/actions/study', () => ({ runStudy }));
/** Every prompt the views ask the worker to tokenise. */
const tokenized: unknown[] = [];
vi.mock('../../app/actions/worker', async (orig) => ({
  ...(await orig<object>()),
  inOrder: vi.fn((f: (w: unknown) => Promise<unknown>) => f({ tokenize: async (p: unknown) => { tokenized.push(p); return { ids: [1, 2, 3], tokens: ['a', 'b', 'c'] }; } })),
}));
vi.mock('../../app/components/Heatmap', () => ({ Heatmap: () => createElement('canvas', { 'data-testid': 'heatmap-stub' }) }));

const { useStore } = await import('../../app/store');
const { AtpBesideExact } = await import('../../app/views/AtpBesideExact');
const { SteeringTransferSection } = await import('../../app/components/SteeringTransferSection');
const { ForkFlow } = await import('../../app/views/ForkFlow');
const { PatchingView } = await import('../../app/views/PatchingView');
const { ProbeView } = await import('../../app/views/ProbeView');
const dom = domPerTest(useStore);

const SYSTEM = 'Be brief.';
const TOOL = { type: 'function' as const, function: { name: 'lookup', description: 'Looks a word up', parameters: { type: 'object', properties: {} } } };
/** The chat turn every request below must carry, written out. */
const TURN = { chatTemplate: true, system: SYSTEM, tools: [TOOL] };
const F32 = 'stories260K · float32 · WebGPU';
const byTestId = (id: string) => dom.host.querySelector<HTMLElement>(`[data-testid="${id}"]`);
const click = (id: string) => act(() => (byTestId(id) as HTMLButtonElement).click());

/** A model ready, with the chat turn above in the experiment. */
function ready(turn: Partial<typeof TURN> = TURN) {
  useStore.setState({ modelStatus: 'ready', modelLabel: 'stories260K', modelIdentity: F32, chatTemplate: false, system: undefined, tools: [], ...turn });
}

const grid: PatchingResult = {
  hook: 'resid_pre', hookTemplate: 'blocks.{l}.hook_resid_pre', direction: 'denoise', metric: 'final', nLayers: 2,
  columns: 'position', nCols: 3, cleanIds: [1, 2, 3], corruptIds: [1, 4, 3], cleanTokens: ['<s>', ' mat', ' the'], corruptTokens: ['<s>', ' dog', ' the'],
  good: {} as PatchingResult['good'], bad: {} as PatchingResult['bad'], cleanMargin: 0.1, corruptMargin: -1.7,
  patchedMargin: Float32Array.from([1, 2, 3, 4, 5, 6]), recovery: Float32Array.from([0, 1, 0, 0, 1, 0]), layerRecovery: Float32Array.from([1, 1]),
  positionsComputed: 12, cellsSkipped: 0,
};

describe('requests a view builds itself carry the chat turn', () => {
  it('AtP beside exact sends the stored grid\'s system prompt and tools (not the experiment\'s edits since)', () => {
    ready({ chatTemplate: true, system: 'edited since', tools: [] });
    const p = { result: grid, modelLabel: 'stories260K', computedWith: F32, clean: 'The cat sat on the mat.', corrupt: 'The cat sat on the dog.', ...TURN, good: { mode: 'text' as const, value: ' mat' }, bad: { mode: 'text' as const, value: ' dog' } };
    act(() => dom.root.render(createElement(AtpBesideExact, { p })));
    click('run-atp');
    expect(runStudy).toHaveBeenLastCalledWith('attributionPatching', {
      clean: 'The cat sat on the mat.', corrupt: 'The cat sat on the dog.', chatTemplate: true, system: SYSTEM, tools: [TOOL],
      good: { text: ' mat' }, bad: { text: ' dog' }, hook: 'resid_pre', direction: 'denoise',
    }, expect.anything());
  });

  it('steering transfer sends the experiment\'s prompt with its system prompt and tools', () => {
    ready();
    act(() => useStore.setState({
      info: { nLayers: 2 } as never, modelB: { status: 'ready' } as never, prompt: 'Once upon a time',
      good: { mode: 'text', value: ' happy' }, bad: { mode: 'ids', value: '274 | 317' },
      probeSettings: { ...useStore.getState().probeSettings, positive: 'I love it\nGreat day', negative: 'I hate it\nBad day' },
    }));
    act(() => dom.root.render(createElement(SteeringTransferSection)));
    click('run-transfer');
    expect(runStudy).toHaveBeenLastCalledWith('steeringTransfer', {
      prompt: 'Once upon a time', ...TURN, good: { text: ' happy' }, bad: { ids: [[274], [317]] }, positive: ['I love it', 'Great day'], negative: ['I hate it', 'Bad day'], alpha: 4,
    }, expect.anything());
  });

  it('a fork\'s flow back to the prompt reads the tree\'s prompt as it was rendered (system prompt and tools)', () => {
    ready({ chatTemplate: false });
    const tree = { version: 2, model: 'stories260K', prompt: 'Hi.', ...TURN, promptIds: [1, 2], promptTokens: ['<s>', 'Hi.'], maxNewTokens: 2 } as unknown as BranchTree;
    const top = { ids: [7, 8], tokens: [' a', ' b'], logProbs: [-0.1, -2] };
    const path: TreePath = { ids: [1, 2, 7, 9], tokens: ['<s>', 'Hi.', ' a', ' c'], node: [-1, -1, 0, 0], logProbs: [NaN, -1, -0.1, -0.5], margins: [NaN, 0, 0, 0], entropy: [NaN, 1, 1, 1], top: [null, top, top, top] };
    act(() => dom.root.render(createElement(ForkFlow, { tree, path, position: 2 })));
    click('fork-flow-run');
    expect(runStudy).toHaveBeenLastCalledWith('flow', {
      prompt: 'Hi.', ...TURN, good: { ids: [[7]] }, bad: { ids: [[8]] }, spans: [{ label: '1: Hi.', start: 1, end: 2 }], continuation: [], faithfulness: false,
    }, expect.anything());
  });

  it('the Patching view counts its pair\'s tokens in the experiment\'s chat turn', async () => {
    vi.useFakeTimers();
    try {
      ready();
      tokenized.length = 0;
      act(() => useStore.setState({ patchingFollowsPrompt: false, patchingSettings: { ...useStore.getState().patchingSettings, clean: 'A cat sat', corrupt: 'A dog sat' } }));
      act(() => dom.root.render(createElement(PatchingView)));
      await act(async () => { await vi.advanceTimersByTimeAsync(300); });
      expect(tokenized).toEqual([{ prompt: 'A cat sat', ...TURN }, { prompt: 'A dog sat', ...TURN }]);
    } finally {
      vi.useRealTimers();
    }
  });
});

const probe: ProbeResult = {
  hooks: ['hook_embed', 'blocks.0.hook_resid_post'], accuracy: [0.5, 1], auroc: [0.5, 1], controlAccuracy: [0.5, 0.5], controlAuroc: [0.5, 0.5],
  directions: [[1, 0], [0, 1]], classes: ['negative', 'positive'], position: 'last', readTokens: [' it'], folds: 2, l2: 1, bestAccuracy: 1, firstLayer95: 1, nPositive: 2, nNegative: 2,
} as unknown as ProbeResult;

describe('a probe result is stale when its chat turn changes', () => {
  /** Probes run on the set with TURN, and the view showing them. */
  function shown() {
    ready();
    act(() => useStore.setState({
      info: { nLayers: 1 } as never, probeSettings: { ...useStore.getState().probeSettings, positive: 'I love it\nGreat day', negative: 'I hate it\nBad day' },
      probe: { result: probe, modelLabel: 'stories260K', computedWith: F32, source: 'pasted', positive: ['I love it', 'Great day'], negative: ['I hate it', 'Bad day'], ...TURN },
    }));
    act(() => dom.root.render(createElement(ProbeView)));
    expect(byTestId('probe-status')).toBeNull();
  }
  const staleNow = () => byTestId('probe-status')?.getAttribute('data-stale');

  it.each([
    ['the system prompt', { system: 'Answer in French.' }],
    ['the system prompt removed', { system: undefined }],
    ['the tools', { tools: [] }],
    ['the chat template', { chatTemplate: false }],
  ])('%s changed: stale, with the rerun button and the figure dimmed', (_what, patch) => {
    shown();
    act(() => useStore.setState(patch));
    expect(staleNow()).toBe('prompt');
    expect(byTestId('probe-status')!.textContent).toContain('the prompt set or its chat turn changed since this probe');
    expect(byTestId('probe-status-rerun')).not.toBeNull();
    expect(byTestId('probe-stale')).not.toBeNull();
  });

  it('an edit of the set is stale too; putting the turn back makes it current again', () => {
    shown();
    act(() => useStore.setState({ probeSettings: { ...useStore.getState().probeSettings, negative: 'I hate it' } }));
    expect(staleNow()).toBe('prompt');
    act(() => useStore.setState({ probeSettings: { ...useStore.getState().probeSettings, negative: 'I hate it\nBad day' }, system: 'other' }));
    expect(staleNow()).toBe('prompt');
    act(() => useStore.setState({ system: SYSTEM, tools: [structuredClone(TOOL)] }));
    expect(byTestId('probe-status')).toBeNull();
  });
});
