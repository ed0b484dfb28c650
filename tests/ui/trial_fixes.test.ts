// @vitest-environment happy-dom
/**
 * A fresh-user trial of main (after issue 29): what read wrong to a new user.
 * - Mechanisms: the "where each becomes causal" curve is indexed by blocks.l.hook_resid_pre, so its
 *   first value is the embeddings' row; its labels and its "first" name read as the Report's
 *   (app/lib/layer_names.ts: blocks.1.hook_resid_pre is "L0").
 * - Opening a parent folder of model folders (fixtures-moe/) is refused naming the folders inside,
 *   before any load; the Model dropdown names an opened folder's model with one suffix.
 * - Colour legends and scale notes of tiny ranges (Compare's JS, 0 … 0.002) tell their ticks and their
 *   end apart ("0 0.001 0.001 0.002", "0 to 0.00" before).
 * - The Chat turn box's legend is its two words (a longer one wrapped through the box's border).
 * - Attribution faithfulness: the k axis's ticks never put a stepped tick right beside the last (19, 20).
 * Store and DOM only; the worker and the studies are not run.
 */
import { act, createElement } from 'react';
import { describe, expect, it, vi } from 'vitest';
import { domPerTest } from './dom';

vi.mock('virtual:bundled-models', () => ({ default: ['stories260K'] }));

const { useStore } = await import('../../app/store');
const { MechanismsView } = await import('../../app/views/MechanismsView');
const { ModelPicker } = await import('../../app/components/ModelPicker');
const { openDrop } = await import('../../app/actions/drop');
const { nestedModelRefusal, openModelFolder } = await import('../../app/actions/model');
const { sparseTicks } = await import('../../app/lib/sparse_ticks');
const { ChatTurnEditor } = await import('../../app/components/ChatTurnEditor');
const { ColorLegend } = await import('../../app/components/ColorLegend');
const { rangeNote, symmetricRange } = await import('../../app/lib/color_scale');
const dom = domPerTest(useStore);
const q = (id: string) => dom.host.querySelector(`[data-testid="${id}"]`);

describe('fresh-user trial fixes', () => {
  it('Mechanisms: the causal curve is named by its resid_pre rows (embed, L0, …) and the first row ≥ 0.5 by the same name', () => {
    const m = (mean: number) => ({ n: 8, mean, lo: mean, hi: mean });
    const cross = { aOnA: [m(1)], aOnB: [m(0.2)], bOnB: [m(1)], bOnA: [m(0.2)] };
    // resid_pre of blocks 0, 1, 2: the embeddings 1.17, block 0's output 1.16, block 1's 0.3; the
    // first row from 1 on reaching 0.5 is 1 = blocks.1.hook_resid_pre, which the Report calls L0.
    const curve = { curve: [1.17, 1.16, 0.3], firstBlock: 1, pairs: 2, skipped: 0 };
    const result = {
      names: ['a', 'b'], layers: [1], hooks: ['blocks.1.hook_resid_post'], dose: 4,
      cosCaa: [0.1], cosProbe: [0.1], crossSteer: cross, selectivityA: [0.2], selectivityB: [0.2], naturalCorr: [0.1],
      pool: { a: 4, b: 4, control: 0 }, causal: { a: curve, b: { ...curve, firstBlock: null, curve: [0.2, 0.1, 0.3] }, similarity: 0.5 },
      verdict: [{ kind: 'independent', text: 'L1: independent' }],
      thresholds: { sharedCosine: 0.5, mutualSelectivity: 0.5, naturalCorrelation: 0.5, minReach: 0.05 }, unsteered: { a: 0.1, b: 0.2 },
      cost: { cells: 4, forwardEquivalentsPerCell: 0.5, naivePerCell: 1, overheadForwards: 4, positionsComputed: 10 }, interval: '95 % bootstrap', sharedPrefix: { a: null, b: null },
    };
    const behaviour = { name: 'x', positive: ['a'], negative: ['b'], good: { text: ' a' }, bad: { text: ' b' } };
    vi.stubGlobal('fetch', vi.fn(() => new Promise(() => undefined)));
    act(() => useStore.setState({ modelStatus: 'ready', modelLabel: 'stories260K', studies: { mechanisms: { request: { a: behaviour, b: behaviour, dose: 4, causal: true }, result: result as never, modelLabel: 'stories260K', computedWith: '' } } }));
    act(() => dom.root.render(createElement(MechanismsView)));
    const line = q('mech-causal-line')?.textContent ?? '';
    expect(line).toContain('A embed 1.17, L0 1.16, L1 0.30 (first after the embeddings ≥ 0.5: L0 · blocks.1.hook_resid_pre; 2 pairs)');
    expect(line).toContain('B embed 0.20, L0 0.10, L1 0.30 (first after the embeddings ≥ 0.5: none; 2 pairs)');
    vi.unstubAllGlobals();
  });

  it('a dropped parent of model folders is refused naming them, before any load; a model folder itself is not refused', async () => {
    const f = (path: string) => ({ path, file: new File(['{}'], path.split('/').pop()!) });
    const parent = ['README.md', 'tokenizer_cases.json', 'mixtral-tiny/config.json', 'mixtral-tiny/model.safetensors', 'olmoe-tiny/config.json', 'olmoe-tiny/model.safetensors', 'qwen2_moe-tiny/config.json', 'qwen2_moe-tiny/model.safetensors'].map((n) => f(`fixtures-moe/${n}`));
    const why = 'fixtures-moe is not a model folder (no config.json or .gguf file at its top level) but holds 3: mixtral-tiny, olmoe-tiny, qwen2_moe-tiny. Open one of them.';
    expect(nestedModelRefusal(parent)).toBe(why);
    expect(nestedModelRefusal(['config.json', 'model.safetensors', 'sub/x/config.json'].map((n) => f(`mixtral-tiny/${n}`)))).toBeNull();
    expect(nestedModelRefusal([f('m/model.gguf')])).toBeNull();
    const before = useStore.getState().lastLoad;
    await act(async () => { await openDrop(parent); });
    expect(useStore.getState().failure).toEqual({ what: 'Could not open the dropped folder', why });
    expect(useStore.getState().job).toBeNull();
    expect(useStore.getState().lastLoad).toBe(before);
  });

  it('a parent of model folders opened with the directory picker (a stubbed handle) is refused with the folder input\'s check and message, before any load', async () => {
    const file = (name: string) => ({ kind: 'file', name, getFile: async () => new File(['{}'], name) });
    const folder = (name: string, entries: object[]) => ({ kind: 'directory', name, values: async function* () { yield* entries; } });
    const parent = folder('fixtures-moe', [file('README.md'), file('tokenizer_cases.json'),
      ...['mixtral-tiny', 'olmoe-tiny', 'qwen2_moe-tiny'].map((m) => folder(m, [file('config.json'), file('model.safetensors')]))]);
    vi.stubGlobal('showDirectoryPicker', async () => parent);
    const why = 'fixtures-moe is not a model folder (no config.json or .gguf file at its top level) but holds 3: mixtral-tiny, olmoe-tiny, qwen2_moe-tiny. Open one of them.';
    act(() => useStore.setState({ localModels: ['stories260K'] }));
    act(() => dom.root.render(createElement(ModelPicker)));
    const before = useStore.getState().lastLoad;
    await act(async () => { (q('open-folder') as HTMLButtonElement).click(); await new Promise((r) => setTimeout(r, 20)); });
    expect(useStore.getState().failure).toEqual({ what: 'Could not open the folder', why });
    expect(useStore.getState().job).toBeNull();
    expect(useStore.getState().lastLoad).toBe(before);
    // the folder input's path: the same check and the same words
    act(() => useStore.getState().setFailure(null));
    vi.unstubAllGlobals();
    const picked = ['README.md', 'mixtral-tiny/config.json', 'olmoe-tiny/config.json', 'qwen2_moe-tiny/config.json'].map((n) => ({ path: `fixtures-moe/${n}`, file: new File(['{}'], n) }));
    await act(async () => { expect(await openModelFolder(picked, async () => { throw new Error('no load may start'); })).toBe(false); });
    expect(useStore.getState().failure).toEqual({ what: 'Could not open the folder', why });
  });

  it('the Model dropdown names a folder’s model with the one suffix its source carries', () => {
    act(() => useStore.setState({ localModels: ['stories260K'], lastLoad: { source: { kind: 'files', label: 'mixtral-tiny (local folder)', files: [] }, options: {} } }));
    act(() => dom.root.render(createElement(ModelPicker)));
    const s = q('model-select') as HTMLSelectElement;
    expect(s.options[s.selectedIndex]?.textContent).toBe('mixtral-tiny (local folder)');
  });

  it('a colour legend over 0 … 0.002 has distinct ticks, and the scale note gives the range in two significant digits', () => {
    act(() => dom.root.render(createElement(ColorLegend, { color: () => '#fff', domain: [0, 0.0021], title: 'JS', testId: 'leg' })));
    const ticks = [...dom.host.querySelectorAll('[data-testid="leg"] text')].map((t) => t.textContent);
    expect(ticks).toEqual(['0', '0.0005', '0.001', '0.0015', '0.002']);
    // a −2.5 … 2.5 legend reads as before
    act(() => dom.root.render(createElement(ColorLegend, { color: () => '#fff', domain: [-2.5, 2.5], title: 'Δ', testId: 'leg' })));
    expect([...dom.host.querySelectorAll('[data-testid="leg"] text')].map((t) => t.textContent)).toEqual(['−2', '−1', '0', '1', '2']);
    const r = symmetricRange([0, 0.0021, 0.001], 'max');
    expect(rangeNote(r, 'max', 'JS')).toBe('scale ±0.0021: largest |JS|');
    expect(rangeNote(symmetricRange([1.234, -0.5], 'max'), 'max')).toBe('scale ±1.23: largest |value|');
  });

  it('the Chat turn legend is short (two words), its explanation a line inside the box', () => {
    act(() => dom.root.render(createElement(ChatTurnEditor)));
    const box = q('chat-turn')!;
    expect(box.querySelector('legend')?.textContent).toBe('Chat turn');
    expect(box.querySelector('p.hint')?.textContent).toBe('System prompt and tools, rendered by the chat template.');
  });

  it('the faithfulness k ticks: every s-th k and the last, none closer than s / 2 places to the last', () => {
    const k = Array.from({ length: 20 }, (_, i) => i + 1); // k = 1 … 20: s = 3
    const ticks = sparseTicks(k);
    expect(ticks).toEqual([1, 4, 7, 10, 13, 16, 20]);
    for (let i = 1; i < ticks.length; i++) expect(ticks[i] - ticks[i - 1]).toBeGreaterThanOrEqual(2);
    expect(sparseTicks([0, 1, 2])).toEqual([0, 1, 2]);
    expect(sparseTicks(Array.from({ length: 17 }, (_, i) => i))).toEqual([0, 3, 6, 9, 12, 16]);
  });
});
