// @vitest-environment happy-dom
/**
 * Leftovers of the fresh-user trial (issue 29): what a new user met without a word.
 * - Steering transfer's Build waits for a loaded labelled set: the section says so beside it.
 * - "Will it fit?" says when the context asked was capped at the model's max_position_embeddings.
 * - After a folder (or Hub) load the Model dropdown names that model, not the bundled one it showed.
 * - Mechanisms: a selectivity over an own change under the reach threshold is marked, and the
 *   table says what selectivity is and that it has no upper bound.
 * Store and DOM only; the worker and the studies are mocked.
 */
import { act, createElement } from 'react';
import { describe, expect, it, vi } from 'vitest';
import { domPerTest } from './dom';
import type { SizeLadder } from '../../workers/shared';

vi.mock('virtual:bundled-models', () => ({ default: ['stories260K', 'stories260K-happy-ft'] }));
const inOrder = vi.fn(async (..._args: unknown[]): Promise<unknown> => null);
vi.mock('../../app/actions/worker', async (orig) => ({ ...(await orig<object>()), inOrder }));

const { useStore } = await import('../../app/store');
const { SteeringTransferSection } = await import('../../app/components/SteeringTransferSection');
const { SizeLadderCheck } = await import('../../app/components/SizeLadder');
const { ModelPicker } = await import('../../app/components/ModelPicker');
const { MechanismsView } = await import('../../app/views/MechanismsView');
const dom = domPerTest(useStore);

const q = (id: string) => dom.host.querySelector(`[data-testid="${id}"]`);
const info = { label: 'stories260K', nLayers: 5 } as never;

describe('fresh-user trial leftovers', () => {
  it('Steering transfer: with no labelled set loaded the section says to load one (Build stays off); with one it says nothing', () => {
    act(() => useStore.setState({ modelStatus: 'ready', info, modelB: { label: 'stories260K-happy-ft', status: 'ready', info, source: { kind: 'url', url: 'models/x/' }, options: {}, progress: null } }));
    act(() => useStore.setState({ probeSettings: { ...useStore.getState().probeSettings, positive: '', negative: '' } }));
    act(() => dom.root.render(createElement(SteeringTransferSection)));
    expect((q('run-transfer') as HTMLButtonElement).disabled).toBe(true);
    expect(q('transfer-needs-set')?.textContent).toMatch(/No labelled set is loaded yet: pick one under Example and press Load/);
    act(() => useStore.setState({ probeSettings: { ...useStore.getState().probeSettings, positive: 'He ran', negative: 'She ran' } }));
    expect(q('transfer-needs-set')).toBeNull();
    expect((q('run-transfer') as HTMLButtonElement).disabled).toBe(false);
  });

  it('Will it fit?: a context above max_position_embeddings is said to be capped (asked and used), one within it is not', async () => {
    const ladder = (contextLength: number): SizeLadder => ({ label: 'stories260K', contextLength, device: 'CPU', rungs: [] });
    act(() => dom.root.render(createElement(SizeLadderCheck, { source: { kind: 'url', url: 'models/stories260K/' } })));
    inOrder.mockResolvedValueOnce(ladder(512));
    await act(async () => { (q('fit-check') as HTMLButtonElement).click(); });
    expect(q('fit-caption')?.textContent).toContain("KV cache for 512 tokens (4096 asked: capped at the model's max_position_embeddings, 512)");
    const input = q('fit-context') as HTMLInputElement;
    act(() => {
      Object.getOwnPropertyDescriptor(HTMLInputElement.prototype, 'value')!.set!.call(input, '100');
      input.dispatchEvent(new Event('input', { bubbles: true }));
    });
    inOrder.mockResolvedValueOnce(ladder(100));
    await act(async () => { (q('fit-check') as HTMLButtonElement).click(); });
    expect(q('fit-caption')?.textContent).toContain('KV cache for 100 tokens ·');
    expect(q('fit-caption')?.textContent).not.toContain('capped');
  });

  it('the Model dropdown names the model loaded from a folder or the Hub (Load off for it), and the bundled one after loading it again', () => {
    act(() => useStore.setState({ localModels: ['stories260K', 'stories260K-happy-ft'], lastLoad: { source: { kind: 'url', url: 'models/stories260K/', label: 'stories260K' }, options: {} } }));
    act(() => dom.root.render(createElement(ModelPicker)));
    const shown = () => { const s = q('model-select') as HTMLSelectElement; return s.options[s.selectedIndex]?.textContent; };
    expect(shown()).toBe('stories260K');
    act(() => useStore.setState({ lastLoad: { source: { kind: 'files', label: 'mixtral-tiny (local folder)', files: [] }, options: {} } }));
    expect(shown()).toBe('mixtral-tiny (local folder)');
    expect((q('load-local') as HTMLButtonElement).disabled).toBe(true);
    act(() => useStore.setState({ lastLoad: { source: { kind: 'hub', repo: 'org/model' }, options: {} } }));
    expect(shown()).toBe('org/model (Hub)');
    act(() => useStore.setState({ lastLoad: { source: { kind: 'url', url: 'models/stories260K-happy-ft/', label: 'stories260K-happy-ft' }, options: {} } }));
    expect(shown()).toBe('stories260K-happy-ft');
    expect((q('load-local') as HTMLButtonElement).disabled).toBe(false);
  });

  it('Mechanisms: a selectivity over an own change under the reach threshold is marked †, the table defines selectivity and says it is unbounded', () => {
    const m = (mean: number) => ({ n: 8, mean, lo: mean - 0.01, hi: mean + 0.01 });
    // Block 1: A's own change 0.01 nats (under 0.05), B's 0.2 on it → selectivity 20; block 2: both reach.
    const cross = { aOnA: [m(0.01), m(1)], aOnB: [m(0.2), m(0.3)], bOnB: [m(0.8), m(1.2)], bOnA: [m(0.1), m(0.2)] };
    const result = {
      names: ['happy', 'he'], layers: [1, 2], hooks: ['blocks.1.hook_resid_post', 'blocks.2.hook_resid_post'], dose: 4,
      cosCaa: [0.1, 0.2], cosProbe: [0.1, 0.2], crossSteer: cross, selectivityA: [20, 0.3], selectivityB: [0.125, 0.2 / 1.2], naturalCorr: [0.1, 0.1],
      pool: { a: 4, b: 4, control: 0 }, causal: { a: null, b: null, similarity: null },
      verdict: [{ kind: 'no reach', text: 'L1: no reach' }, { kind: 'independent', text: 'L2: independent' }],
      thresholds: { sharedCosine: 0.5, mutualSelectivity: 0.5, naturalCorrelation: 0.5, minReach: 0.05 }, unsteered: { a: 0.1, b: 0.2 },
      cost: { cells: 8, forwardEquivalentsPerCell: 0.5, naivePerCell: 1, overheadForwards: 8, positionsComputed: 10 }, interval: '95 % bootstrap', sharedPrefix: { a: null, b: null },
    };
    const behaviour = { name: 'x', positive: ['a'], negative: ['b'], good: { text: ' a' }, bad: { text: ' b' } };
    vi.stubGlobal('fetch', vi.fn(() => new Promise(() => undefined))); // the shipped sets never arrive: the view shows the result it holds
    act(() => useStore.setState({ modelStatus: 'ready', modelLabel: 'stories260K', studies: { mechanisms: { request: { a: behaviour, b: behaviour, dose: 4, causal: false }, result: result as never, modelLabel: 'stories260K', computedWith: '' } } }));
    act(() => dom.root.render(createElement(MechanismsView)));
    expect(q('mech-sel-a-1')?.textContent).toBe('20.000 †');
    expect(q('mech-sel-a-1')?.querySelector('span')?.getAttribute('title')).toContain('under the reach threshold 0.05');
    expect(q('mech-sel-b-1')?.textContent).toBe('0.125');
    expect(q('mech-sel-a-2')?.textContent).toBe('0.300');
    const note = q('mech-selectivity-note')?.textContent ?? '';
    expect(note).toContain('Selectivity A = |A→B| / |A→A|');
    expect(note).toContain('above 1 = B moves more than A');
    expect(note).toContain('no upper bound');
    expect(note).toContain('† = the own change is under 0.05 nats');
    vi.unstubAllGlobals();
  });
});
