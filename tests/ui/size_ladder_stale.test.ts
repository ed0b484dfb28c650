// @vitest-environment happy-dom
/**
 * Fresh-user trial (trialfix2 2): "Will it fit?" kept stories260K's numbers after a folder load,
 * without a word. Now the table of the model checked before is marked stale, naming it and the
 * model chosen now, until Check is pressed again; and after a folder load Check sizes that folder.
 * Store and DOM only; the worker is mocked (it answers with the ladder of the source it is given).
 */
import { act, createElement } from 'react';
import { describe, expect, it, vi } from 'vitest';
import { domPerTest } from './dom';
import type { ModelSource } from '../../workers/protocol';

vi.mock('virtual:bundled-models', () => ({ default: ['stories260K', 'stories260K-happy-ft'] }));
const asked: ModelSource[] = [];
const fakeWorker = { sizeLadder: async (source: ModelSource) => { asked.push(source); return { label: source.kind === 'url' ? source.label : 'mixtral-tiny', contextLength: 512, device: 'CPU', rungs: [] }; } };
vi.mock('../../app/actions/worker', async (orig) => ({ ...(await orig<object>()), inOrder: <T,>(call: (w: unknown) => Promise<T>) => call(fakeWorker) }));

const { useStore } = await import('../../app/store');
const { ModelPicker } = await import('../../app/components/ModelPicker');
const dom = domPerTest(useStore);
const q = (id: string) => dom.host.querySelector(`[data-testid="${id}"]`);

describe('Will it fit? after another model is loaded', () => {
  it('marks the table of the model before stale (naming both), and Check then sizes the folder loaded', async () => {
    act(() => useStore.setState({ localModels: ['stories260K', 'stories260K-happy-ft'], lastLoad: { source: { kind: 'url', url: 'models/stories260K/', label: 'stories260K' }, options: {} } }));
    act(() => dom.root.render(createElement(ModelPicker)));
    await act(async () => { (q('fit-check') as HTMLButtonElement).click(); });
    expect(q('fit-caption')?.textContent).toMatch(/^stories260K · /);
    expect(q('fit-stale')).toBeNull();
    expect(q('fit-table')?.getAttribute('data-stale')).toBe('false');
    const folder = { kind: 'files' as const, label: 'mixtral-tiny (local folder)', files: [] };
    act(() => useStore.setState({ lastLoad: { source: folder, options: {} } }));
    expect(q('fit-table')?.getAttribute('data-stale')).toBe('true');
    expect(q('fit-stale')?.textContent).toBe('Stale: this table describes stories260K, not mixtral-tiny (local folder). Press Check to size it.');
    await act(async () => { (q('fit-check') as HTMLButtonElement).click(); });
    expect(asked.at(-1)).toBe(folder);
    expect(q('fit-stale')).toBeNull();
    expect(q('fit-caption')?.textContent).toMatch(/^mixtral-tiny · /);
  });
});
