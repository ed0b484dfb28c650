// @vitest-environment happy-dom
/**
 * Fresh-user trial (trialfix2 1): interventions of the previous model must not steer the next one
 * silently. After a load of another model every enabled intervention whose layer or head that model
 * has not, whose vector's width is not its hook's, or whose vector was built on another model is
 * switched off, its row says why and the notice names it; one that fits and came from the same
 * model stays as it is. Runs actions/model.ts loadModel against a stand-in worker; the model
 * dimensions are the fixtures' config.json values, written out here.
 */
import { act, createElement } from 'react';
import { describe, expect, it, vi } from 'vitest';
import { domPerTest } from './dom';

/** A ModelInfo as the worker sends it, with the residual hooks of each layer and the attention q hook. */
function infoOf(label: string, nLayers: number, dModel: number, nHeads: number) {
  const hookNames = ['hook_embed'];
  for (let l = 0; l < nLayers; l++) hookNames.push(`blocks.${l}.hook_resid_pre`, `blocks.${l}.hook_resid_post`, `blocks.${l}.attn.hook_q`);
  return { label, nLayers, dModel, nHeads, nKvHeads: nHeads / 2, dHead: dModel / nHeads, dMlp: 4 * dModel, hookNames, hasChatTemplate: false, weights: { dtype: 'f32' }, backend: { kind: 'cpu', description: 'CPU' } };
}
const MODELS: Record<string, ReturnType<typeof infoOf>> = {
  stories260K: infoOf('stories260K', 5, 64, 8), // llama2.c stories260K: dim 64, 5 layers, 8 heads
  'qwen2-tiny (local folder)': infoOf('qwen2-tiny (local folder)', 3, 64, 4), // fixtures/qwen2-tiny: hidden 64, 3 layers, 4 heads
  'mixtral-tiny (local folder)': infoOf('mixtral-tiny (local folder)', 3, 64, 4),
  'narrow (local folder)': infoOf('narrow (local folder)', 6, 32, 4),
};
const fakeWorker = new Proxy({}, {
  get: (_t, method: string) => {
    if (method === 'then') return undefined;
    return async (...args: unknown[]) => (method === 'load' ? MODELS[(args[0] as { label: string }).label] : undefined);
  },
});
vi.mock('virtual:bundled-models', () => ({ default: ['stories260K'] }));
vi.mock('../../app/actions/worker', () => ({
  worker: () => fakeWorker,
  inOrder: <T,>(call: (w: unknown) => Promise<T>): Promise<T> => call(fakeWorker),
  messageOf: (e: unknown) => (e instanceof Error ? e.message : String(e)),
}));

const { useStore } = await import('../../app/store');
const { loadModel } = await import('../../app/actions/model');
const { InterventionList } = await import('../../app/components/InterventionList');
const { InterventionEditor } = await import('../../app/components/InterventionEditor');
const dom = domPerTest(useStore);

const STORIES = { kind: 'url' as const, url: 'models/stories260K/', label: 'stories260K' };
const folder = (name: string) => ({ kind: 'files' as const, label: `${name} (local folder)`, files: [] });
const base = { type: 'add' as const, dose: 6, rotateBy: 'theta' as const, mode: 'project' as const, source: '', head: null, positions: 'all' as const, steps: null };

/** stories260K loaded, a CAA vector built on it at blocks.1, #1 its add at blocks.1, #2 a zero ablation at blocks.3 (no vector), #3 a zero ablation at blocks.1. */
async function setUp() {
  expect(await loadModel(STORIES)).toBe(true);
  const s = useStore.getState();
  const v = s.addVector({ vector: new Float32Array(64).fill(0.1), dModel: 64, hook: 'blocks.1.hook_resid_post', model: 'stories260K', provenance: { method: 'caa', position: 'last', positive: [], negative: [] } as never, createdAt: '' }, 'CAA happy/sad');
  const a = s.addIntervention({ ...base, enabled: true, hook: 'blocks.1.hook_resid_post', vectorId: v.id });
  const b = s.addIntervention({ ...base, enabled: true, hook: 'blocks.3.hook_resid_post', type: 'ablate', mode: 'zero', vectorId: null });
  const c = s.addIntervention({ ...base, enabled: true, hook: 'blocks.1.hook_resid_post', type: 'ablate', mode: 'zero', vectorId: null });
  return { v, a, b, c };
}
const byId = (id: number) => useStore.getState().interventions.find((d) => d.id === id)!;

describe('interventions after loading another model', () => {
  it('qwen2-tiny (same width): the stories260K vector\'s add is switched off saying where the vector came from; the ablation at blocks.1 is kept on', async () => {
    const { a, b, c } = await setUp();
    expect(await loadModel(folder('qwen2-tiny'))).toBe(true);
    expect(byId(a).enabled).toBe(false);
    expect(byId(a).offReason).toBe('its vector CAA happy/sad was built on stories260K, not qwen2-tiny (local folder)');
    expect(byId(b).enabled).toBe(false); // qwen2-tiny has layers 0..2
    expect(byId(b).offReason).toBe('layer 3 does not exist in qwen2-tiny (local folder) (layers 0..2)');
    expect(byId(c).enabled).toBe(true);
    expect(byId(c).offReason).toBeUndefined();
    expect(useStore.getState().interventions).toHaveLength(3); // nothing removed
    const n = useStore.getState().experimentNotice!;
    expect(n.what).toBe('Interventions #1, #2 switched off for qwen2-tiny (local folder)');
    expect(n.interventions).toEqual([a, b]);
  });

  it('mixtral-tiny: an intervention at blocks.3 is switched off before any run, not refused by Run routes later', async () => {
    const { b } = await setUp();
    expect(await loadModel(folder('mixtral-tiny'))).toBe(true);
    expect(byId(b).enabled).toBe(false);
    expect(byId(b).offReason).toMatch(/^layer 3 does not exist in mixtral-tiny/);
  });

  it('a vector of another width is named with both widths', async () => {
    const { a } = await setUp();
    expect(await loadModel(folder('narrow'))).toBe(true);
    expect(byId(a).offReason).toBe('its vector CAA happy/sad is 64 wide, blocks.1.hook_resid_post of narrow (local folder) takes 32');
  });

  it('the same model loaded again (other weights) keeps every intervention as it was, with no notice', async () => {
    await setUp();
    const before = useStore.getState().interventions;
    useStore.getState().setWeightDtype('q8_0');
    expect(await loadModel(STORIES)).toBe(true);
    expect(useStore.getState().interventions).toEqual(before);
    expect(useStore.getState().experimentNotice).toBeNull();
  });

  it('the editor of one whose layer or head is gone shows its own hook and head, marked as not in this model, never the first of the list (it showed hook_embed)', async () => {
    const { b } = await setUp();
    const h = useStore.getState().addIntervention({ ...base, enabled: true, hook: 'blocks.1.attn.hook_q', type: 'ablate', mode: 'zero', head: 6, vectorId: null });
    await act(async () => { await loadModel(folder('qwen2-tiny')); }); // layers 0..2, heads 0..3
    expect(byId(h).enabled).toBe(false);
    act(() => useStore.getState().selectIntervention(b));
    act(() => dom.root.render(createElement(InterventionEditor)));
    const hook = dom.host.querySelector('[data-testid="editor-hook"]') as HTMLSelectElement;
    expect(hook.value).toBe('blocks.3.hook_resid_post');
    expect(hook.options[hook.selectedIndex].textContent).toBe('blocks.3.hook_resid_post (not in qwen2-tiny (local folder))');
    expect(byId(b).hook).toBe('blocks.3.hook_resid_post'); // nothing set by showing it
    // the head of another: head 6 of stories260K's 8, qwen2-tiny has 4
    act(() => useStore.getState().selectIntervention(h));
    const head = dom.host.querySelector('[data-testid="editor-head"]') as HTMLSelectElement;
    expect((dom.host.querySelector('[data-testid="editor-hook"]') as HTMLSelectElement).value).toBe('blocks.1.attn.hook_q');
    expect(head.value).toBe('6');
    expect(head.options[head.selectedIndex].textContent).toBe('head 6 (not in qwen2-tiny (local folder))');
    expect(byId(h).head).toBe(6);
    // picking a hook of this model replaces it, and the mark goes
    act(() => useStore.getState().selectIntervention(b));
    const again = dom.host.querySelector('[data-testid="editor-hook"]') as HTMLSelectElement;
    act(() => { again.value = 'blocks.2.hook_resid_post'; again.dispatchEvent(new Event('change', { bubbles: true })); });
    expect(byId(b).hook).toBe('blocks.2.hook_resid_post');
    expect(dom.host.querySelector('[data-testid="editor-hook-missing"]')).toBeNull();
  });

  it('the row says why it was switched off; ticking it on a model it does not fit is refused with the reason (fitapply 1)', async () => {
    const { a } = await setUp();
    await act(async () => { await loadModel(folder('qwen2-tiny')); });
    act(() => dom.root.render(createElement(InterventionList)));
    const row = dom.host.querySelector('[data-testid="intervention-1"]')!;
    expect(row.getAttribute('data-enabled')).toBe('false');
    expect(dom.host.querySelector('[data-testid="intervention-1-off-reason"]')?.textContent).toContain('switched off for this model: its vector CAA happy/sad was built on stories260K');
    act(() => (dom.host.querySelector('[data-testid="intervention-1-enabled"]') as HTMLInputElement).click());
    expect(byId(a).enabled).toBe(false);
    expect((dom.host.querySelector('[data-testid="intervention-1-enabled"]') as HTMLInputElement).checked).toBe(false);
    expect(dom.host.querySelector('[data-testid="intervention-1-off-reason"]')?.textContent).toBe(' · cannot be switched on: its vector CAA happy/sad was built on stories260K, not qwen2-tiny (local folder)');
  });

  it('Apply of a vector built on the previous model leaves it off and says why; + Add picks no vector of another model (fitapply 1)', async () => {
    const { v, a } = await setUp();
    useStore.getState().removeIntervention(a);
    expect(await loadModel(folder('qwen2-tiny'))).toBe(true);
    const { applyVector, addDefaultIntervention } = await import('../../app/actions/steering');
    const applied = applyVector(v.id)!;
    expect(byId(applied.id).enabled).toBe(false);
    expect(applied.refused).toBe('its vector CAA happy/sad was built on stories260K, not qwen2-tiny (local folder)');
    expect(byId(applied.id).offReason).toBe(applied.refused);
    addDefaultIntervention();
    const added = useStore.getState().interventions.at(-1)!;
    expect(added.hook).toBe('blocks.1.hook_resid_post'); // qwen2-tiny's 3 layers: the one before the last
    expect(added.vectorId).toBeNull();
    // an edit of an enabled one into a layer the model has not is refused too
    useStore.getState().updateIntervention(added.id, { hook: 'blocks.4.hook_resid_post' });
    expect(byId(added.id).enabled).toBe(false);
    expect(byId(added.id).offReason).toBe('layer 4 does not exist in qwen2-tiny (local folder) (layers 0..2)');
  });

  it('switching back: the reasons and the notice are recomputed for the model loaded now; rows this check switched off are ticked again, one the user switched off stays off (fitapply 2)', async () => {
    const { a, b, c } = await setUp();
    const d = useStore.getState().addIntervention({ ...base, enabled: false, hook: 'blocks.4.hook_resid_post', type: 'ablate', mode: 'zero', vectorId: null });
    expect(await loadModel(folder('qwen2-tiny'))).toBe(true);
    expect(byId(d).offReason).toBeUndefined(); // the user's own unticked row gets no reason
    expect(await loadModel(folder('mixtral-tiny'))).toBe(true);
    // #1's vector is 64 wide and mixtral-tiny is 64 wide too: still built on stories260K, now named for mixtral-tiny
    expect(byId(a).offReason).toBe('its vector CAA happy/sad was built on stories260K, not mixtral-tiny (local folder)');
    expect(byId(b).offReason).toBe('layer 3 does not exist in mixtral-tiny (local folder) (layers 0..2)');
    expect(useStore.getState().experimentNotice!.what).toBe('Interventions #1, #2 switched off for mixtral-tiny (local folder)');
    expect(await loadModel(STORIES)).toBe(true);
    expect(byId(a).enabled).toBe(true);
    expect(byId(a).offReason).toBeUndefined();
    expect(byId(b).enabled).toBe(true);
    expect(byId(b).offReason).toBeUndefined();
    expect(byId(c).enabled).toBe(true);
    expect(byId(d).enabled).toBe(false);
    const n = useStore.getState().experimentNotice!;
    expect(n.what).toBe('Interventions #1, #2 switched on again: they fit stories260K');
    expect(n.what).not.toContain('qwen2');
    expect(n.tone).toBe('info'); // news, not a failure: the info banner, not the red one
    const { ExperimentBar } = await import('../../app/components/ExperimentBar');
    act(() => dom.root.render(createElement(ExperimentBar)));
    expect(dom.host.querySelector('[data-testid="experiment-notice"]')?.getAttribute('data-tone')).toBe('info');
  });

  it('a row the check switched off and the user then unticked is not ticked again; the notice goes when nothing is left to say (fitapply 2)', async () => {
    const { a, b } = await setUp();
    expect(await loadModel(folder('qwen2-tiny'))).toBe(true);
    useStore.getState().updateIntervention(a, { enabled: false, offReason: undefined, autoOff: undefined, refused: undefined });
    useStore.getState().removeIntervention(b);
    expect(await loadModel(STORIES)).toBe(true);
    expect(byId(a).enabled).toBe(false);
    expect(byId(a).offReason).toBeUndefined();
    expect(useStore.getState().experimentNotice).toBeNull();
  });
  it('an SAE feature intervention waiting for its SAE cannot be ticked; loading another model switches off one whose SAE it unloads (fresh-user trial 2, 4)', async () => {
    await setUp();
    const s = useStore.getState();
    const pending = s.addIntervention({ ...base, enabled: false, hook: 'blocks.1.hook_resid_post', vectorId: null, saePending: { sae: { label: 'relu SAE', source: { kind: 'url', url: 'https://example.org/sae/' } } as never, feature: 3 } });
    s.updateIntervention(pending, { enabled: true });
    expect(byId(pending)).toMatchObject({ enabled: false, offReason: 'its SAE relu SAE is not loaded yet: open it in the SAE features view' });
    useStore.setState({ saes: [{ id: 'sae1', label: 'relu SAE', cfg: { hookName: 'blocks.1.hook_resid_post' } } as never] });
    const steer = s.addIntervention({ ...base, enabled: true, hook: 'blocks.1.hook_resid_post', vectorId: null, saeFeature: { sae: 'sae1', feature: 3 } });
    expect(byId(steer).enabled).toBe(true);
    expect(await loadModel(folder('qwen2-tiny'))).toBe(true); // the worker unloads the SAE with stories260K
    expect(byId(steer)).toMatchObject({ enabled: false, offReason: expect.stringMatching(/^its SAE is not loaded \(an SAE is unloaded with the model it was opened for\)/) });
    expect(useStore.getState().experimentNotice!.interventions).toContain(steer);
    // back on stories260K the SAE is still not loaded: it stays off, saying so
    expect(await loadModel(STORIES)).toBe(true);
    expect(byId(steer).enabled).toBe(false);
    expect(byId(steer).offReason).toMatch(/^its SAE is not loaded/);
  });
});
