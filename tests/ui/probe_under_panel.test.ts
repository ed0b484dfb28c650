// @vitest-environment happy-dom
/**
 * The Probes view's "Under an intervention" panel (app/views/ProbeUnderPanel.tsx): what it sends for
 * each pick — one of the experiment's interventions as it is written there (switched on or not), or
 * a library vector added at its hook with the α typed — and that picking, typing and running leave
 * the experiment's interventions and vectors as they were. A pick that cannot run says why and
 * keeps the button off. Store and DOM only; the study itself is mocked.
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
const { ProbeUnderPanel } = await import('../../app/views/ProbeUnderPanel');
const dom = domPerTest(useStore);

const HOOK = 'blocks.1.hook_resid_post';
const vec = (id: string, hook: string | null, alpha?: number): LibraryEntry => ({
  id, name: `vector ${id}`, vector: Float32Array.from({ length: 4 }, (_, j) => j + 1), dModel: 4, hook, model: null, ...(alpha !== undefined ? { alpha } : {}),
  provenance: { method: 'caa', position: 'last', positive: [], negative: [] }, createdAt: '2026-01-01T00:00:00Z',
});
const draft: InterventionDraft = { id: 7, enabled: false, hook: HOOK, type: 'add', dose: -3, rotateBy: 'theta', mode: 'project', vectorId: 'a', source: '', head: null, positions: 'all', steps: null };

function type(input: HTMLInputElement, text: string) {
  Object.getOwnPropertyDescriptor(HTMLInputElement.prototype, 'value')!.set!.call(input, text);
  input.dispatchEvent(new Event('input', { bubbles: true }));
}
function pick(value: string) {
  const select = dom.host.querySelector<HTMLSelectElement>('[data-testid="probe-under-pick"]')!;
  select.value = value;
  select.dispatchEvent(new Event('change', { bubbles: true }));
}
const button = () => dom.host.querySelector<HTMLButtonElement>('[data-testid="run-probe-under"]')!;
const why = () => dom.host.querySelector('[data-testid="probe-under-why"]')?.textContent ?? '';

describe('probe under an intervention: the pick', () => {
  it('sends the experiment\'s intervention as written (off in the list too) or a library vector at its hook with α; the experiment is untouched', () => {
    act(() => useStore.setState({
      modelStatus: 'ready', vectors: [vec('a', HOOK, 6), vec('b', null)], interventions: [draft],
      probeSettings: { ...useStore.getState().probeSettings, positive: 'Tom ran\nBen sat', negative: 'Lily ran\nSue sat', good: ' he', bad: ' she' },
    }));
    const before = { interventions: useStore.getState().interventions, vectors: useStore.getState().vectors };
    const frozen = JSON.stringify(before);
    act(() => dom.root.render(createElement(ProbeUnderPanel)));
    expect(button().disabled).toBe(true);
    expect(why()).toContain('pick an intervention of the experiment or a vector of the library');
    expect(dom.host.querySelector('option[value="i7"]')!.textContent).toBe(`intervention #1: add at ${HOOK} (off in the list)`);
    expect(dom.host.querySelector<HTMLOptionElement>('option[value="vb"]')!.disabled).toBe(true); // no hook recorded
    act(() => pick('i7'));
    act(() => button().click());
    expect(runStudy).toHaveBeenLastCalledWith('probeUnder', expect.objectContaining({
      positive: ['Tom ran', 'Ben sat'], negative: ['Lily ran', 'Sue sat'], good: { text: ' he' }, bad: { text: ' she' }, generate: 0,
      specs: [expect.objectContaining({ hook: HOOK, type: 'add', alpha: -3, positions: 'all' })], specLabels: ['intervention #1'],
    }), expect.anything());
    const sent = runStudy.mock.calls.at(-1)![1] as { specs: { vector: ArrayLike<number> }[] };
    expect(Array.from(sent.specs[0].vector)).toEqual([1, 2, 3, 4]);
    // a library vector: its α (6) to start, then the one typed
    act(() => pick('va'));
    const alpha = dom.host.querySelector<HTMLInputElement>('[data-testid="probe-under-alpha"]')!;
    expect(alpha.value).toBe('6');
    act(() => type(alpha, '2.5'));
    act(() => button().click());
    expect(runStudy).toHaveBeenLastCalledWith('probeUnder', expect.objectContaining({
      specs: [{ hook: HOOK, type: 'add', vector: [1, 2, 3, 4], alpha: 2.5 }], specLabels: ['vector “vector a”'],
    }), expect.anything());
    // nothing of the experiment changed: same objects, same contents
    expect(useStore.getState().interventions).toBe(before.interventions);
    expect(useStore.getState().vectors).toBe(before.vectors);
    expect(JSON.stringify({ interventions: useStore.getState().interventions, vectors: useStore.getState().vectors })).toBe(frozen);
  });

  it('an empty α or a missing future keeps the button off and says why', () => {
    act(() => useStore.setState({
      modelStatus: 'ready', vectors: [vec('a', HOOK, 6)], interventions: [],
      probeSettings: { ...useStore.getState().probeSettings, positive: 'Tom ran\nBen sat', negative: 'Lily ran\nSue sat', good: ' he', bad: ' she', underPick: 'va' },
    }));
    act(() => dom.root.render(createElement(ProbeUnderPanel)));
    expect(button().disabled).toBe(false);
    act(() => type(dom.host.querySelector<HTMLInputElement>('[data-testid="probe-under-alpha"]')!, ''));
    expect(button().disabled).toBe(true);
    expect(why()).toContain('α must be a finite number (got NaN)');
    act(() => type(dom.host.querySelector<HTMLInputElement>('[data-testid="probe-under-alpha"]')!, '1'));
    act(() => type(dom.host.querySelector<HTMLInputElement>('[data-testid="probe-under-bad"]')!, ''));
    expect(button().disabled).toBe(true);
    expect(why()).toContain('give both futures');
  });
});
