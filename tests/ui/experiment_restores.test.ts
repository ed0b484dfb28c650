// @vitest-environment happy-dom
/**
 * Nothing a user set is lost or silently changed (issue 29): leaving poster mode, a batch row's
 * "Back to my experiment", the Patching and Batch examples. Restores go through lib/experiment_state.ts
 * capture/apply; the reruns a restore starts (Analyse, Generate, the sweep, a capture) are stubbed,
 * and the worker is a stand-in that records the SAE loads.
 */
import { beforeEach, describe, expect, it, vi } from 'vitest';
import { EVERY_FIELD, SAE_ID } from '../unit/experiment_fixture';

vi.mock('virtual:bundled-models', () => ({ default: ['stories260K'] }));
vi.mock('../../app/actions/analyse', async (orig) => ({ ...(await orig<object>()), analyse: vi.fn(async () => undefined) }));
vi.mock('../../app/actions/generate', async (orig) => ({ ...(await orig<object>()), generate: vi.fn(async () => undefined) }));
vi.mock('../../app/actions/sweep', async (orig) => ({ ...(await orig<object>()), runSweep: vi.fn(async () => undefined) }));
vi.mock('../../app/actions/activations', async (orig) => ({ ...(await orig<object>()), captureActivations: vi.fn(async () => undefined) }));
const saeLoads: unknown[][] = [];
const fakeWorker = new Proxy({}, {
  get: (_t, method: string) => {
    if (method === 'then') return undefined;
    return async (...args: unknown[]) => {
      if (method === 'loadSae') { saeLoads.push(args); return { id: `reloaded-${saeLoads.length}`, label: 'relu SAE', cfg: { hookName: 'blocks.2.hook_resid_post' } }; }
      return undefined;
    };
  },
});
vi.mock('../../app/actions/worker', () => ({
  worker: () => fakeWorker,
  inOrder: <T,>(call: (w: unknown) => Promise<T>): Promise<T> => call(fakeWorker),
  messageOf: (e: unknown) => (e instanceof Error ? e.message : String(e)),
}));

const { useStore } = await import('../../app/store');
const { currentExperiment, holdForPoster, releasePosterHold, restoreExperiment } = await import('../../app/actions/experiment');
const { backToExperiment, loadExample, openRow } = await import('../../app/actions/batch');
const { pickExamplePair } = await import('../../app/actions/patching');
const initial = useStore.getState();

/** The fixture's experiment on a ready stories260K, its SAE opened from a local folder (as the SAE view's picker does) and still loaded. */
function openEveryKind(): void {
  useStore.setState(initial, true);
  // promptTokens: what the (stubbed) Analyse of the restore would give, so the saved token selection fits
  useStore.setState({ ...EVERY_FIELD, modelStatus: 'ready', modelLabel: 'stories260K', promptTokens: { ids: [1, 2, 3, 4, 5], tokens: ['a', 'b', 'c', 'd', 'e'] }, saeOrigins: { [SAE_ID]: { kind: 'local', name: 'stories260K-blocks.2.hook_resid_post-relu (local folder)' } } });
  saeLoads.length = 0;
}

/** A deck slide: another prompt, other futures, one plain intervention, no vectors. */
const SLIDE = { ...currentExperimentOf({ prompt: 'Once upon a time', interventions: [], vectors: [], saes: [], saeOrigins: {}, view: 'generation' as const }) };
function currentExperimentOf(patch: Partial<ReturnType<typeof useStore.getState>>) {
  useStore.setState(initial, true);
  useStore.setState({ ...EVERY_FIELD, ...patch });
  const e = currentExperiment();
  return { ...e, title: 'A deck slide', interventions: [{ ...e.interventions[0] ?? {}, enabled: true, hook: 'blocks.1.hook_resid_post', type: 'ablate' as const, dose: 0, rotateBy: 'theta' as const, mode: 'zero' as const, vector: null, source: '', sae: null, head: null, positions: 'all' as const, steps: null }] };
}

describe('leaving poster mode puts the experiment back exactly (issue 29 item 1)', () => {
  beforeEach(openEveryKind);

  it('one of every intervention kind (add, add_norm_preserving, rotate, ablate, patch, SAE steer, SAE clamp): the whole experiment after leaving equals the one before entering', async () => {
    const before = currentExperiment();
    const held = holdForPoster();
    expect(held).toEqual(before);
    await restoreExperiment(SLIDE, 'deck', { rerun: false }); // → onto a deck slide
    expect(useStore.getState().prompt).toBe('Once upon a time');
    await releasePosterHold(true); // Esc
    const s = useStore.getState();
    expect(currentExperiment()).toEqual(before);
    // the SAE (still loaded) is not read again, and both feature interventions are on and attached to it
    expect(saeLoads).toEqual([]);
    expect(s.interventions.filter((d) => d.saeFeature).map((d) => [d.type, d.enabled, d.saeFeature!.sae])).toEqual([['add', true, SAE_ID], ['sae_clamp', true, SAE_ID]]);
    expect(s.experimentNotice).toBeNull();
    // every field the library shows, α included
    expect(s.vectors.map((v) => [v.name, v.alpha, v.file])).toEqual([['CAA happy vs sad', 6, undefined], ['girl.npy', -2.5, 'girl.npy']]);
    expect(s.interventions.map((d) => d.enabled)).toEqual(EVERY_FIELD.interventions.map((d) => d.enabled));
  });

  it('the results on display come back too, the very objects, when the same model load is back; a slide\'s results are not left on display marked stale', async () => {
    const mine = { result: { analysis: 'mine' }, gen: { events: [] }, studies: { compare: { result: 'mine' } }, captured: { hook: 'mine' } } as never as Record<string, unknown>;
    useStore.setState({ ...mine, modelIdentity: 'stories260K · f32 · webgpu' });
    holdForPoster();
    await restoreExperiment(SLIDE, 'deck', { rerun: false });
    useStore.setState({ result: { analysis: 'slide' }, gen: null, studies: {}, captured: null } as never); // what the slide's reruns showed
    await releasePosterHold(true);
    const s = useStore.getState() as unknown as Record<string, unknown>;
    for (const k of Object.keys(mine)) expect(s[k], k).toBe(mine[k]);
  });

  it('after a slide that left another model load, the held results are not put back (they answer another model)', async () => {
    useStore.setState({ result: { analysis: 'mine' }, modelIdentity: 'stories260K · f32 · webgpu' } as never);
    holdForPoster();
    await restoreExperiment(SLIDE, 'deck', { rerun: false });
    useStore.setState({ result: { analysis: 'slide' }, modelIdentity: 'stories260K · q8_0 · webgpu' } as never);
    await releasePosterHold(true);
    expect((useStore.getState().result as unknown as { analysis: string }).analysis).toBe('slide');
  });
});

describe('a batch row does not replace the experiment irrecoverably (item 5)', () => {
  beforeEach(openEveryKind);

  it('opening rows replaces the prompt and futures; "Back to my experiment" restores the experiment before the first row exactly', async () => {
    const before = currentExperiment();
    const row = (i: number) => ({ index: i, prompt: `Row ${i} prompt`, good: ' a', bad: ' b', vars: {}, metrics: {} }) as unknown as Parameters<typeof openRow>[0];
    await openRow(row(0));
    await openRow(row(1));
    const s = useStore.getState();
    expect([s.prompt, s.good.value, s.bad.value, s.view]).toEqual(['Row 1 prompt', ' a', ' b', 'margins']);
    expect(s.batchReturn).toEqual(before);
    await backToExperiment();
    expect(currentExperiment()).toEqual(before);
    expect(useStore.getState().batchReturn).toBeNull();
    expect(useStore.getState().experimentNotice).toBeNull();
  });
});

describe('the Patching example sets its futures too (item 3)', () => {
  it('with the futures left at happy/sad from the steering step, Example sets the pair AND “ Tom” vs “ Lily”, and says so', () => {
    useStore.setState(initial, true);
    useStore.setState({ good: { mode: 'text', value: ' happy' }, bad: { mode: 'text', value: ' sad' } });
    const line = pickExamplePair();
    const s = useStore.getState();
    expect([s.good, s.bad]).toEqual([{ mode: 'text', value: ' Tom' }, { mode: 'text', value: ' Lily' }]);
    expect(s.patchingSettings.clean).toBe('Lily and Tom went to the park. Lily gave the ball to');
    expect(s.patchingSettings.corrupt).toBe('Lily and dad went to the park. Lily gave the ball to');
    expect(line).toContain('futures set to “ Tom” vs “ Lily” (they were “ happy” vs “ sad”)');
  });
});

describe('a Batch example loads in one step (item 11)', () => {
  it('no store state ever holds the example’s template beside other values (or the old plot axis)', async () => {
    useStore.setState(initial, true);
    const files: Record<string, string> = {
      'studies/d.template.json': JSON.stringify({ prompt: 'A {distractors} B', good: ' a', bad: ' b', x: 'distractors', y: 'final_margin' }),
      'studies/d.values.jsonl': '{"distractors": 1}\n{"distractors": 2}\n',
    };
    vi.stubGlobal('fetch', vi.fn(async (url: string) => ({ ok: true, status: 200, text: async () => files[url] })));
    const seen: { template: string; values: string; x: string | null }[] = [];
    const stop = useStore.subscribe((s) => seen.push({ template: s.batchTemplate, values: s.batchValues, x: s.batchX }));
    await loadExample({ id: 'd', title: 'Distractors', template: 'd.template.json', values: 'd.values.jsonl' });
    stop();
    vi.unstubAllGlobals();
    const withTemplate = seen.filter((x) => x.template === files['studies/d.template.json']);
    expect(withTemplate.length).toBeGreaterThan(0);
    for (const x of withTemplate) expect(x).toEqual({ template: files['studies/d.template.json'], values: files['studies/d.values.jsonl'], x: 'distractors' });
    expect(useStore.getState().batchValuesName).toBe('d.values.jsonl');
  });
});

describe('a restored intervention passes the same fit gate as a ticked one (fitapply 1)', () => {
  it('one at a layer the loaded model lacks comes back switched off, its row and the notice saying why; one that fits stays on as saved', async () => {
    const saved = currentExperimentOf({ prompt: 'Once upon a time', vectors: [], saes: [], saeOrigins: {} });
    const fits = saved.interventions[0];
    const e = { ...saved, modelB: undefined, interventions: [fits, { ...fits, hook: 'blocks.7.hook_resid_post' }] };
    useStore.setState(initial, true);
    // stories260K loaded (5 layers: blocks.0..4), as the experiment names it
    const hookNames = Array.from({ length: 5 }, (_, l) => [`blocks.${l}.hook_resid_pre`, `blocks.${l}.hook_resid_post`]).flat();
    useStore.setState({
      modelStatus: 'ready', modelLabel: 'stories260K', lastLoad: EVERY_FIELD.lastLoad,
      info: { label: 'stories260K', nLayers: 5, dModel: 64, nHeads: 8, nKvHeads: 4, dHead: 8, dMlp: 172, hookNames } as never,
    });
    await restoreExperiment(e, 'file');
    const [a, b] = useStore.getState().interventions;
    expect(a).toMatchObject({ hook: 'blocks.1.hook_resid_post', enabled: true });
    expect(b).toMatchObject({ hook: 'blocks.7.hook_resid_post', enabled: false, offReason: 'layer 7 does not exist in stories260K (layers 0..4)' });
    expect(useStore.getState().experimentNotice?.what).toBe('Intervention #2 switched off for stories260K');
  });
});
