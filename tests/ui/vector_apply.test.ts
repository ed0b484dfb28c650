// @vitest-environment happy-dom
/**
 * Applying a library vector (fresh-user trial t3: the Vectors library had no way to use a vector,
 * and a heatmap cell placed the happy/sad vector with α = 1 while README's example steers with
 * α = 6). Apply in a row sets an `add` of that vector at its hook with the row's α in the steering
 * editor; a second Apply replaces it rather than adding a second dose; a heatmap cell takes the
 * vector's α too; the happy/sad set's CAA vector carries the set's suggested α. Store and DOM only.
 */
import { act, createElement } from 'react';
import * as fs from 'node:fs';
import { describe, expect, it, vi } from 'vitest';
import type { LibraryEntry } from '../../app/store/vectors';
import { domPerTest } from './dom';

vi.mock('virtual:bundled-models', () => ({ default: ['stories260K'] }));

const { useStore } = await import('../../app/store');
const { VectorLibraryView } = await import('../../app/views/VectorLibraryView');
const { placeAtLensCell } = await import('../../app/actions/steering');
const { parseContrastSet } = await import('../../app/actions/vectors');

const dom = domPerTest(useStore);

const vec = (id: string, hook: string | null, alpha?: number): LibraryEntry => ({
  id, name: `vector ${id}`, vector: new Float32Array(64), dModel: 64, hook, model: null, ...(alpha !== undefined ? { alpha } : {}),
  provenance: { method: 'caa', position: 'last', positive: [], negative: [] }, createdAt: '2026-01-01T00:00:00Z',
});

/** Sets a React-controlled input's value as typing does. */
function type(input: HTMLInputElement, text: string) {
  Object.getOwnPropertyDescriptor(HTMLInputElement.prototype, 'value')!.set!.call(input, text);
  input.dispatchEvent(new Event('input', { bubbles: true }));
}

describe('Apply in the vector library', () => {
  it('sets an add of the vector at its hook with the row\'s α, all positions, every step, opened in the editor; Apply again replaces it', () => {
    act(() => useStore.setState({ vectors: [vec('a', 'blocks.1.hook_resid_post'), vec('b', 'blocks.3.hook_resid_post', 6)], contrastSet: { name: 'set', positive: ['x'], negative: ['y'], suggested: null } }));
    act(() => dom.root.render(createElement(VectorLibraryView)));
    const alpha = dom.host.querySelector<HTMLInputElement>('[data-testid="vector-alpha-1"]')!;
    expect(alpha.value).toBe('6');
    expect(dom.host.querySelector<HTMLInputElement>('[data-testid="vector-alpha-0"]')!.value).toBe('1');
    act(() => dom.host.querySelector<HTMLButtonElement>('[data-testid="apply-vector-1"]')!.click());
    let s = useStore.getState();
    expect(s.interventions).toHaveLength(1);
    expect(s.interventions[0]).toMatchObject({ enabled: true, type: 'add', hook: 'blocks.3.hook_resid_post', vectorId: 'b', dose: 6, positions: 'all', steps: null });
    expect(s.selectedIntervention).toBe(s.interventions[0].id);
    expect(dom.host.querySelector('[data-testid="library-applied"]')!.textContent).toContain('Added intervention #1: add “vector b” at blocks.3.hook_resid_post with α = 6');
    // a new α in the row, applied again: the same intervention takes it (no second α added on top)
    act(() => type(alpha, '-4'));
    act(() => dom.host.querySelector<HTMLButtonElement>('[data-testid="apply-vector-1"]')!.click());
    s = useStore.getState();
    expect(s.interventions).toHaveLength(1);
    expect(s.interventions[0].dose).toBe(-4);
    expect(s.vectors[1].alpha).toBe(-4);
    expect(dom.host.querySelector('[data-testid="library-applied"]')!.textContent).toContain('Set intervention #1');
    // another vector is another intervention
    act(() => dom.host.querySelector<HTMLButtonElement>('[data-testid="apply-vector-0"]')!.click());
    expect(useStore.getState().interventions.map((d) => [d.hook, d.vectorId, d.dose])).toEqual([['blocks.3.hook_resid_post', 'b', -4], ['blocks.1.hook_resid_post', 'a', 1]]);
  });

  it('a heatmap cell places the vector built at its hook with that vector\'s α', () => {
    useStore.setState({ vectors: [vec('here', 'blocks.3.hook_resid_post', 6)] });
    expect(placeAtLensCell(4, 7).placed).toBe(true);
    expect(useStore.getState().interventions[0]).toMatchObject({ hook: 'blocks.3.hook_resid_post', positions: [7], vectorId: 'here', dose: 6 });
  });

  it('the shipped happy/sad set suggests α = 6 for its CAA vector (README\'s example dose); a set without one suggests none', () => {
    const set = parseContrastSet(JSON.parse(fs.readFileSync('public/steering/happy_sad.json', 'utf8')), 'happy_sad.json');
    expect(set.suggested).toMatchObject({ prompt: 'The little girl felt very', alpha: 6 });
    expect(parseContrastSet({ positive: [], negative: [], suggested: { prompt: 'p', good: 'a', bad: 'b', alpha: 'six' } }, 'x.json').suggested).toEqual({ prompt: 'p', good: 'a', bad: 'b' });
  });
});
