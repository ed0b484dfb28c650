// @vitest-environment happy-dom
/**
 * A vector applied at another layer than the one it was computed at (fresh-user trial t2: a
 * dose–response point at blocks.2 showed a red "CAA … was computed at blocks.3.hook_resid_post.",
 * although the sweep applies the vector at every layer on purpose). The two names of one residual
 * vector are not a mismatch; a real one is information (a hint, not the red note), and a point
 * picked on the sweep's curve says it is the sweep's layer.
 */
import { act, createElement } from 'react';
import { createRoot, type Root } from 'react-dom/client';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import type { ModelInfo } from '../../workers/protocol';
import type { SweepDisplay } from '../../app/store/results';
import { residRow, sameHookPoint } from '../../app/lib/hooks';
import { vectorSiteNote } from '../../app/lib/vector_site';

vi.mock('virtual:bundled-models', () => ({ default: ['stories260K'] }));

const { useStore } = await import('../../app/store');
const { InterventionEditor } = await import('../../app/components/InterventionEditor');
const { placeFromSweep } = await import('../../app/actions/steering');

describe('one point of the forward pass under two names', () => {
  it('blocks.l.hook_resid_post is blocks.{l+1}.hook_resid_pre (residual row l + 1); other hooks are only themselves', () => {
    expect([residRow('blocks.0.hook_resid_pre'), residRow('blocks.2.hook_resid_post'), residRow('blocks.3.hook_resid_pre'), residRow('blocks.2.hook_resid_mid'), residRow('blocks.2.hook_mlp_out')]).toEqual([0, 3, 3, null, null]);
    expect(sameHookPoint('blocks.2.hook_resid_post', 'blocks.3.hook_resid_pre')).toBe(true);
    expect(sameHookPoint('blocks.2.hook_resid_post', 'blocks.2.hook_resid_pre')).toBe(false);
    expect(sameHookPoint('blocks.2.hook_mlp_out', 'blocks.2.hook_mlp_out')).toBe(true);
    expect(sameHookPoint('blocks.2.hook_mlp_out', 'blocks.2.hook_attn_out')).toBe(false);
  });

  it('the note: none at the same point or for a vector that does not say; the sweep\'s layer; else where it was computed and where it acts', () => {
    const caa = { name: 'CAA happy vs sad', hook: 'blocks.3.hook_resid_post' };
    expect(vectorSiteNote(caa, 'blocks.3.hook_resid_post', false)).toBeNull();
    expect(vectorSiteNote(caa, 'blocks.4.hook_resid_pre', false)).toBeNull();
    expect(vectorSiteNote({ name: 'imported', hook: null }, 'blocks.2.hook_resid_post', false)).toBeNull();
    expect(vectorSiteNote(caa, 'blocks.2.hook_resid_post', true)).toBe('blocks.2.hook_resid_post is the layer picked on the dose–response curve; CAA happy vs sad was computed at blocks.3.hook_resid_post.');
    expect(vectorSiteNote(caa, 'blocks.2.hook_resid_post', false)).toMatch(/^CAA happy vs sad was computed at blocks\.3\.hook_resid_post and is applied here at blocks\.2\.hook_resid_post: /);
  });
});

describe('the intervention editor', () => {
  (globalThis as { IS_REACT_ACT_ENVIRONMENT?: boolean }).IS_REACT_ACT_ENVIRONMENT = true;
  const initial = useStore.getState();
  let root: Root;
  let host: HTMLElement;
  const hooks = Array.from({ length: 5 }, (_, l) => [`blocks.${l}.hook_resid_pre`, `blocks.${l}.hook_resid_post`]).flat();
  const info = { label: 'stories260K', nLayers: 5, dModel: 64, dMlp: 172, nHeads: 8, nKvHeads: 4, dHead: 8, hookNames: hooks } as unknown as ModelInfo;
  const sweep: SweepDisplay = {
    result: { layers: [2, 3], doses: [-8, 0, 8], doseKey: 'alpha', hooks: ['blocks.2.hook_resid_post', 'blocks.3.hook_resid_post'], margin: [[0, 0, 0], [0, 0, 0]], kl: [[0, 0, 0], [0, 0, 0]], unsteeredMargin: 0 },
    modelLabel: 'stories260K', computedWith: 'stories260K · float32 · WebGPU', prompt: 'p', good: ' a', bad: ' b', type: 'add', vectorId: 'caa', vectorName: 'CAA happy vs sad', pickedId: null,
  };
  beforeEach(() => {
    useStore.setState(initial, true);
    useStore.setState({
      info, modelStatus: 'ready', modelLabel: 'stories260K', modelIdentity: 'stories260K · float32 · WebGPU',
      vectors: [{ id: 'caa', name: 'CAA happy vs sad', vector: new Float32Array(64), dModel: 64, hook: 'blocks.3.hook_resid_post', model: 'stories260K', provenance: {} as never, createdAt: '' }],
    });
    host = document.createElement('div');
    document.body.append(host);
    root = createRoot(host);
  });
  afterEach(() => {
    act(() => root.unmount());
    host.remove();
  });
  const site = () => host.querySelector('[data-testid="editor-vector-site"]');
  const red = () => [...host.querySelectorAll('[data-testid="editor-note"]')].map((n) => n.textContent ?? '');

  it('a dose–response point at blocks.2 (the trial): the sweep\'s layer, said as a hint, and no red note', () => {
    useStore.getState().setSweep(sweep);
    const placed = placeFromSweep(0, 2);
    expect(placed && 'id' in placed).toBe(true);
    act(() => root.render(createElement(InterventionEditor)));
    expect(site()?.className).toBe('hint');
    expect(site()?.textContent).toContain('the layer picked on the dose–response curve');
    expect(red().filter((t) => t.includes('computed at'))).toEqual([]);
  });

  it('the user moving it to another layer: where it was computed and where it acts, as a hint; at its own layer (either name), nothing', () => {
    const s = useStore.getState();
    const id = s.addIntervention({ enabled: true, hook: 'blocks.1.hook_resid_post', type: 'add', dose: 4, rotateBy: 'theta', mode: 'project', vectorId: 'caa', source: '', head: null, positions: 'all', steps: null });
    act(() => root.render(createElement(InterventionEditor)));
    expect(site()?.className).toBe('hint');
    expect(site()?.textContent).toContain('CAA happy vs sad was computed at blocks.3.hook_resid_post and is applied here at blocks.1.hook_resid_post');
    expect(red().filter((t) => t.includes('computed at'))).toEqual([]);
    act(() => useStore.getState().updateIntervention(id, { hook: 'blocks.4.hook_resid_pre' }));
    expect(site()).toBeNull();
    act(() => useStore.getState().updateIntervention(id, { hook: 'blocks.3.hook_resid_post' }));
    expect(site()).toBeNull();
  });
});
