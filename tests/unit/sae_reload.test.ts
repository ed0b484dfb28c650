import { beforeEach, describe, expect, it, vi } from 'vitest';

/**
 * A reload of the same model (another weight storage) keeps its SAEs (actions/sae_reload.ts): the
 * worker unloads them with the model, so the page reads each again from its source, and the feature
 * interventions and the active SAE follow it to its new id; one that cannot be read again is named
 * in a notice and its interventions are switched off. Runs the page's actions against a stand-in
 * worker that records its calls.
 */
const calls: { method: string; args: unknown[] }[] = [];
let saeCount = 0;
let saeFails = false;
const fakeWorker = new Proxy({}, {
  get: (_t, method: string) => {
    if (method === 'then') return undefined;
    return async (...args: unknown[]) => {
      calls.push({ method, args });
      if (method === 'load') return { label: 'stories260K', hasChatTemplate: false, nLayers: 5, dModel: 64, hookNames: ['blocks.2.hook_resid_post'] };
      if (method === 'loadSae') {
        if (saeFails) throw new Error('HTTP 404 from the SAE server');
        return { id: `sae${++saeCount}`, label: 'relu SAE', cfg: { hookName: 'blocks.2.hook_resid_post' } };
      }
      return undefined;
    };
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
const { loadSae, placeFeature } = await import('../../app/actions/sae');

const STORIES = { kind: 'url' as const, url: 'models/stories260K/', label: 'stories260K' };
const SAE = { kind: 'url' as const, url: 'https://example.org/sae/', label: 'relu SAE' };

beforeEach(async () => {
  calls.length = 0;
  saeFails = false;
  useStore.setState({ interventions: [], saes: [], activeSae: null, experimentNotice: null, weightDtype: 'f32', lastLoad: null });
  await loadModel(STORIES);
  await loadSae(SAE, 'blocks.2.hook_resid_post');
  placeFeature('add', 7, 4, 'all');
});

const saeLoads = () => calls.filter((c) => c.method === 'loadSae');

describe('reloading the same model with other weights', () => {
  it('reads the SAE again from its source, and the feature intervention and the active SAE follow its new id', async () => {
    const before = useStore.getState().activeSae!;
    useStore.getState().setWeightDtype('q8_0');
    expect(await loadModel(STORIES)).toBe(true);
    expect(saeLoads()).toHaveLength(2);
    expect(saeLoads()[1].args).toEqual([SAE, 'blocks.2.hook_resid_post']);
    const s = useStore.getState();
    expect(s.saes).toHaveLength(1);
    expect(s.activeSae).not.toBe(before);
    expect(s.interventions[0]).toMatchObject({ enabled: true, saeFeature: { sae: s.activeSae, feature: 7 } });
    expect(s.experimentNotice).toBeNull();
  });

  it('says so when the SAE cannot be read again, and switches its feature intervention off', async () => {
    saeFails = true;
    await loadModel(STORIES, { weightDtype: 'q8_0' });
    const s = useStore.getState();
    expect(s.saes).toHaveLength(0);
    expect(s.interventions[0].enabled).toBe(false);
    expect(s.experimentNotice?.what).toContain('unloaded an SAE: relu SAE');
  });
});

it('loading another model does not read the SAE again', async () => {
  await loadModel({ kind: 'url', url: 'models/aidreams260K/', label: 'aidreams260K' });
  expect(saeLoads()).toHaveLength(1);
  expect(useStore.getState().saes).toHaveLength(0);
});
