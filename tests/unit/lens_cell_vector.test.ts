import { beforeEach, describe, expect, it } from 'vitest';
import { pickVector } from '../../app/lib/pick_vector';
import { addDefaultIntervention, placeAtLensCell } from '../../app/actions/steering';
import { useStore } from '../../app/store';
import type { LibraryEntry } from '../../app/store/vectors';

const vec = (id: string, hook: string | null, d = 64): LibraryEntry => ({
  id, name: id, vector: new Float32Array(d), dModel: d, hook, model: null,
  provenance: { method: 'caa', position: 'last', positive: [], negative: [] }, createdAt: '2026-01-01T00:00:00Z',
});

describe('the vector a heatmap-cell intervention starts with (lib/pick_vector.ts)', () => {
  it('prefers the newest vector built at the cell’s hook over newer ones from other hooks', () => {
    const lib = [vec('a', 'blocks.1.hook_resid_post'), vec('b', 'blocks.3.hook_resid_post'), vec('c', 'blocks.0.hook_resid_post')];
    expect(pickVector(lib, 'blocks.1.hook_resid_post', 64)).toBe('a');
    expect(pickVector(lib, 'blocks.3.hook_resid_post', 64)).toBe('b');
  });

  it('falls back to the newest vector of the hook’s width, then the newest; an empty library gives null', () => {
    const lib = [vec('a', null), vec('b', 'blocks.0.attn.hook_z', 8)];
    expect(pickVector(lib, 'blocks.2.hook_resid_post', 64)).toBe('a');
    expect(pickVector(lib, 'blocks.2.hook_resid_post', 32)).toBe('b');
    expect(pickVector([], 'blocks.2.hook_resid_post', 64)).toBeNull();
  });
});

describe('a margin-heatmap cell click (actions/steering.ts placeAtLensCell)', () => {
  beforeEach(() => useStore.setState({ vectors: [], interventions: [], selectedIntervention: null }));

  it('with an empty library places nothing and names the hook a vector is needed at', () => {
    expect(placeAtLensCell(4, 7)).toEqual({ placed: false, hook: 'blocks.3.hook_resid_post', row: 4, col: 7, reason: 'empty' });
    expect(useStore.getState().interventions).toHaveLength(0);
  });

  it('with vectors from other hooks only places nothing and names the one it would fall back to; anyHook places that one', () => {
    useStore.setState({ vectors: [vec('older', 'blocks.1.hook_resid_post'), vec('newest', 'blocks.2.hook_resid_post')] });
    expect(placeAtLensCell(4, 7)).toEqual({
      placed: false, hook: 'blocks.3.hook_resid_post', row: 4, col: 7, reason: 'other-hook',
      fallback: { id: 'newest', name: 'newest', hook: 'blocks.2.hook_resid_post' },
    });
    expect(useStore.getState().interventions).toHaveLength(0);
    expect(placeAtLensCell(4, 7, true).placed).toBe(true);
    expect(useStore.getState().interventions[0]).toMatchObject({ hook: 'blocks.3.hook_resid_post', positions: [7], vectorId: 'newest' });
  });

  it('with vectors places an add at that layer and token, with the vector built at that hook', () => {
    useStore.setState({ vectors: [vec('here', 'blocks.3.hook_resid_post'), vec('newer', 'blocks.1.hook_resid_post')] });
    const p = placeAtLensCell(4, 7);
    expect(p.placed).toBe(true);
    const [d] = useStore.getState().interventions;
    expect(d).toMatchObject({ hook: 'blocks.3.hook_resid_post', type: 'add', positions: [7], vectorId: 'here' });
  });
});

/** The loaded model's fields + Add and the fit gate read (lib/intervention_fit.ts misfitReason): a 5-layer model with its residual hooks. */
const INFO = {
  label: 'test-model', nLayers: 5, dModel: 64, dMlp: 172, nHeads: 8, nKvHeads: 4, dHead: 8,
  hookNames: Array.from({ length: 5 }, (_, l) => [`blocks.${l}.hook_resid_pre`, `blocks.${l}.hook_resid_post`]).flat(),
} as unknown as NonNullable<ReturnType<typeof useStore.getState>['info']>;

describe('+ Add (actions/steering.ts addDefaultIntervention)', () => {
  beforeEach(() => useStore.setState({ vectors: [], interventions: [], selectedIntervention: null }));

  it('starts at the default hook with the vector built there, not an empty vector', () => {
    const info = INFO;
    useStore.setState({ info, vectors: [vec('caa', 'blocks.3.hook_resid_post'), vec('other', 'blocks.1.hook_resid_post')] });
    addDefaultIntervention();
    expect(useStore.getState().interventions[0]).toMatchObject({ hook: 'blocks.3.hook_resid_post', positions: 'all', vectorId: 'caa' });
  });

  it('made before any vector exists, picks up the vector built afterwards (the library is followed, not copied once)', () => {
    const info = INFO;
    useStore.setState({ info });
    addDefaultIntervention();
    expect(useStore.getState().interventions[0].vectorId).toBeNull();
    const { id: _id, name: _n, ...built } = vec('x', 'blocks.3.hook_resid_post');
    const entry = useStore.getState().addVector(built, 'CAA happy vs sad');
    expect(useStore.getState().interventions[0]).toMatchObject({ hook: 'blocks.3.hook_resid_post', vectorId: entry.id });
  });

  it('keeps a vector already chosen, and does not take one of the wrong width', () => {
    const info = INFO;
    useStore.setState({ info, vectors: [vec('first', 'blocks.3.hook_resid_post')] });
    addDefaultIntervention();
    useStore.setState({ vectors: [] });
    addDefaultIntervention();
    const { id: _id, name: _n, ...narrow } = vec('n', 'blocks.3.hook_resid_post', 32);
    useStore.getState().addVector(narrow, 'too narrow');
    const [a, b] = useStore.getState().interventions;
    expect(a.vectorId).toBe('first');
    expect(b.vectorId).toBeNull();
  });
});
