import { beforeEach, describe, expect, it } from 'vitest';
import { useStore } from '../../app/store';
import type { InterventionDraft } from '../../app/store/steering';
import type { SweepDisplay } from '../../app/store/results';
import type { BranchTree } from '../../workers/protocol';
import { appliedInterventions } from '../../app/lib/specs';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { loadStaleness, loadStaleText, loadedNow, modelIdentity, reloadedSince } from '../../app/lib/model_identity';
import { pairStaleParts, setStaleParts, staleParts, staleText, steeringName, steeringNow, type Current, type PairNow, type PairRun } from '../../app/lib/stale';
import { windowApplied } from '../../app/actions/window';
import { futureKey } from '../../app/lib/futures';
import { placeFromSweep } from '../../app/actions/steering';
import { openPatchCell } from '../../app/actions/patching';

/**
 * When a result on display stops answering the experiment as edited, how its interventions are
 * named after the list changes, and where a dose–response point goes when it is picked.
 */
const draft = (patch: Partial<InterventionDraft>): InterventionDraft => ({
  id: 1, enabled: true, hook: 'blocks.3.hook_resid_post', type: 'add', dose: 4, rotateBy: 'theta', mode: 'project',
  vectorId: 'v1', source: '', head: null, positions: [4], steps: null, ...patch,
});
const now = (patch: Partial<Current> = {}): Current => ({
  model: 'stories260K', identity: 'stories260K · float32 · WebGPU', prompt: 'Lily gave the ball to', chatTemplate: false, system: undefined, tools: [],
  good: { mode: 'text', value: ' Tom' }, bad: { mode: 'text', value: ' Lily' }, interventions: [draft({})], ...patch,
});
/** An analysis of now() under its interventions. */
const analysed = () => ({ modelLabel: 'stories260K', computedWith: 'stories260K · float32 · WebGPU', prompt: 'Lily gave the ball to', chatTemplate: false, system: undefined, tools: [], good: now().good, bad: now().bad, steering: appliedInterventions(now().interventions) });

describe('a result is stale when the experiment differs from what was analysed', () => {
  it('nothing changed: up to date', () => {
    expect(staleParts(analysed(), now())).toEqual([]);
  });

  it('each edit names its part: prompt (or chat template), futures, interventions, model', () => {
    expect(staleParts(analysed(), now({ prompt: 'Once upon' }))).toEqual(['prompt']);
    expect(staleParts(analysed(), now({ chatTemplate: true }))).toEqual(['prompt']);
    expect(staleParts(analysed(), now({ bad: { mode: 'ids', value: ' Lily' } }))).toEqual(['futures']);
    expect(staleParts(analysed(), now({ interventions: [draft({ dose: 8 })] }))).toEqual(['interventions']);
    expect(staleParts(analysed(), now({ interventions: [draft({ enabled: false })] }))).toEqual(['interventions']);
    expect(staleParts(analysed(), now({ interventions: [draft({}), draft({ id: 2 })] }))).toEqual(['interventions']);
    expect(staleParts(analysed(), now({ model: null }))).toEqual(['model']);
    expect(staleParts(analysed(), now({ model: null, identity: null }))).toEqual(['model']);
    expect(staleParts(analysed(), now({ model: 'aidreams260K', prompt: 'x', good: { mode: 'text', value: ' a' } }))).toEqual(['model', 'prompt', 'futures']);
  });

  it('the same settings under another id, or a switched-off extra one, are not a change', () => {
    expect(staleParts(analysed(), now({ interventions: [draft({ id: 9 })] }))).toEqual([]);
    expect(staleParts(analysed(), now({ interventions: [draft({}), draft({ id: 2, enabled: false })] }))).toEqual([]);
  });

  it('the label lists the parts in words, leaving the model to its own line', () => {
    expect(staleText(['prompt'])).toBe('the prompt changed');
    expect(staleText(['model', 'prompt', 'futures', 'interventions'])).toBe('the prompt, the futures and the interventions changed');
    expect(staleText(['model'])).toBe('');
  });

  it('chips resolved for one prompt and text are out of date for another', () => {
    const p = { prompt: 'Lily gave the ball to', chatTemplate: false };
    expect(futureKey(p, { mode: 'text', value: ' Tom' })).toBe(futureKey({ ...p }, { mode: 'text', value: ' Tom' }));
    expect(futureKey(p, { mode: 'text', value: ' Tom' })).not.toBe(futureKey({ ...p, prompt: 'Once' }, { mode: 'text', value: ' Tom' }));
    expect(futureKey(p, { mode: 'text', value: ' Tom' })).not.toBe(futureKey(p, { mode: 'text', value: ' Tom|' }));
    expect(futureKey(p, { mode: 'text', value: '1' })).not.toBe(futureKey(p, { mode: 'ids', value: '1' }));
  });
});

describe('a result is stale when the same model is loaded again with other weights or on another backend', () => {
  // the fresh-user trial: analysed with float32 on WebGPU, then CPU + Q8_0 loaded: +4.0573 stayed unmarked
  const f32 = modelIdentity('stories260K', { weights: { dtype: 'f32', description: 'float32' }, backend: { kind: 'webgpu', description: '' } });
  const q8cpu = modelIdentity('stories260K', { weights: { dtype: 'q8_0', description: 'Q8_0 linear weights' }, backend: { kind: 'cpu', description: '' } });
  const f32cpu = modelIdentity('stories260K', { weights: { dtype: 'f32', description: 'float32' }, backend: { kind: 'cpu', description: '' } });

  it('the identity names the model, its weight storage and its backend', () => {
    expect(f32).toBe('stories260K · float32 · WebGPU');
    expect(q8cpu).toBe('stories260K · Q8_0 · CPU');
  });

  it("another storage or backend is the 'load' part; the same load again (a fresh device) is not", () => {
    const r = { ...analysed(), computedWith: f32 };
    expect(staleParts(r, now({ identity: f32 }))).toEqual([]);
    expect(staleParts(r, now({ identity: q8cpu }))).toEqual(['load']);
    expect(staleParts(r, now({ identity: f32cpu }))).toEqual(['load']);
    expect(staleParts(r, now({ identity: q8cpu, prompt: 'Once upon' }))).toEqual(['load', 'prompt']);
    // another model is the 'model' part (it says more than 'load'); no model ready: 'model' too
    expect(staleParts(r, now({ model: 'aidreams260K', identity: 'aidreams260K · float32 · WebGPU' }))).toEqual(['model']);
    expect(staleParts(r, now({ model: null, identity: null }))).toEqual(['model']);
    expect(staleText(['load'])).toBe('');
    expect(reloadedSince(f32, 'stories260K', { label: 'stories260K', identity: null })).toBe(false);
    // a job queued while a load ran (identity unknown, '') runs after that load in the worker: not stale (the concurrency e2e)
    expect(reloadedSince('', 'stories260K', { label: 'stories260K', identity: q8cpu })).toBe(false);
  });
});

describe('the chat turn (template, system prompt, tools) is part of the prompt a result read', () => {
  const TOOL = { type: 'function' as const, function: { name: 'lookup', parameters: { type: 'object', properties: {} } } };
  const turn = { chatTemplate: true, system: 'Be brief.', tools: [TOOL] };
  const ran = () => ({ ...analysed(), ...turn });
  const pairRan = (): PairRun => ({ modelLabel: 'stories260K', computedWith: 'stories260K · float32 · WebGPU', clean: 'a', corrupt: 'b', ...turn, good: now().good, bad: now().bad });
  const pairAt = (patch: Partial<PairNow>): PairNow => ({ model: 'stories260K', identity: 'stories260K · float32 · WebGPU', clean: 'a', corrupt: 'b', ...turn, good: now().good, bad: now().bad, windowSteering: [], ...patch });

  it('a system prompt or tools edited, added or removed makes an analysis and a pair run stale ("prompt")', () => {
    expect(staleParts(ran(), now(turn))).toEqual([]);
    for (const edit of [{ system: 'Answer in French.' }, { system: undefined }, { tools: [] }, { tools: [TOOL, { ...TOOL, function: { name: 'send' } }] }, { enableThinking: false }, { enableThinking: true }]) {
      expect(staleParts(ran(), now({ ...turn, ...edit })), JSON.stringify(edit)).toEqual(['prompt']);
      expect(pairStaleParts(pairRan(), pairAt(edit)), JSON.stringify(edit)).toEqual(['prompt']);
    }
    expect(pairStaleParts(pairRan(), pairAt({}))).toEqual([]);
  });

  it('an empty system prompt is none, and with the template off in both the system prompt and tools are not read', () => {
    expect(staleParts({ ...ran(), system: undefined }, now({ ...turn, system: '' }))).toEqual([]);
    const off = { chatTemplate: false, system: 'Be brief.', tools: [TOOL] };
    expect(staleParts({ ...analysed(), ...off }, now({ chatTemplate: false, system: undefined, tools: [] }))).toEqual([]);
  });

  it('a probe run over a labelled set: a prompt of either class or the chat turn', () => {
    const probeRan = { modelLabel: 'stories260K', computedWith: 'stories260K · float32 · WebGPU', positive: ['x', 'y'], negative: ['z'], ...turn };
    const at = (patch: object = {}) => ({ model: 'stories260K', identity: 'stories260K · float32 · WebGPU', positive: ['x', 'y'], negative: ['z'], ...turn, ...patch });
    expect(setStaleParts(probeRan, at())).toEqual([]);
    expect(setStaleParts(probeRan, at({ tools: [] }))).toEqual(['prompt']);
    expect(setStaleParts(probeRan, at({ system: 'other' }))).toEqual(['prompt']);
    expect(setStaleParts(probeRan, at({ negative: ['z', 'w'] }))).toEqual(['prompt']);
    expect(setStaleParts(probeRan, at({ identity: 'stories260K · Q8_0 · CPU' }))).toEqual(['load']);
  });

  it('opening a patch cell makes the grid\'s chat turn the experiment\'s, with its patched prompt', () => {
    useStore.setState({ prompt: 'other', chatTemplate: false, system: undefined, tools: [], interventions: [] });
    useStore.getState().setPatching({ ...pairRan(), result: { direction: 'denoise', hookTemplate: 'blocks.{l}.hook_resid_pre', columns: 'position' } as never });
    const opened = openPatchCell(1, 0);
    expect(opened?.promptChanged).toBe(true);
    const s = useStore.getState();
    expect({ prompt: s.prompt, chatTemplate: s.chatTemplate, system: s.system, tools: s.tools }).toEqual({ prompt: 'b', ...turn });
    expect(s.interventions.at(-1)).toMatchObject({ type: 'patch', hook: 'blocks.1.hook_resid_pre', source: 'a', positions: [0] });
    expect(openPatchCell(1, 0)?.promptChanged).toBe(false);
  });
});

describe('a run on the prompt pair (patching grid, decision-point report) is stale when its own inputs differ', () => {
  const F32 = 'stories260K · float32 · WebGPU';
  /** The fresh-user trial: a grid of the cat/dog pair, futures " mat" vs " dog", float32 on WebGPU. */
  const run = (patch: Partial<PairRun> = {}): PairRun => ({
    modelLabel: 'stories260K', computedWith: F32, clean: 'The cat sat on the mat.', corrupt: 'The cat sat on the dog.', chatTemplate: false, system: undefined, tools: [],
    good: { mode: 'text', value: ' mat' }, bad: { mode: 'text', value: ' dog' }, ...patch,
  });
  const pairNow = (patch: Partial<PairNow> = {}): PairNow => ({
    model: 'stories260K', identity: F32, clean: 'The cat sat on the mat.', corrupt: 'The cat sat on the dog.', chatTemplate: false, system: undefined, tools: [],
    good: { mode: 'text', value: ' mat' }, bad: { mode: 'text', value: ' dog' }, windowSteering: [], ...patch,
  });

  it('nothing changed: up to date, whatever the experiment\'s own prompt is (the pair is the Patching view\'s)', () => {
    expect(pairStaleParts(run(), pairNow())).toEqual([]);
  });

  it('the trial: futures changed to happy/sad and the model reloaded as Q8_0 on the CPU', () => {
    expect(pairStaleParts(run(), pairNow({ identity: 'stories260K · Q8_0 · CPU', good: { mode: 'text', value: ' happy' }, bad: { mode: 'text', value: ' sad' } }))).toEqual(['load', 'futures']);
    expect(staleText(['load', 'futures'], { prompt: 'the prompt pair' })).toBe('the futures changed');
  });

  it('either prompt of the pair or the chat template is the prompt part; a future\'s mode is a change of futures', () => {
    expect(pairStaleParts(run(), pairNow({ corrupt: 'The cat sat on the hat.' }))).toEqual(['prompt']);
    expect(pairStaleParts(run(), pairNow({ clean: 'The dog sat on the mat.' }))).toEqual(['prompt']);
    expect(pairStaleParts(run(), pairNow({ chatTemplate: true }))).toEqual(['prompt']);
    expect(pairStaleParts(run(), pairNow({ bad: { mode: 'ids', value: ' dog' } }))).toEqual(['futures']);
    expect(pairStaleParts(run(), pairNow({ model: 'aidreams260K', identity: 'aidreams260K · float32 · WebGPU' }))).toEqual(['model']);
    expect(staleText(['prompt', 'futures'], { prompt: 'the prompt pair' })).toBe('the prompt pair and the futures changed');
  });

  it('interventions count only for a run whose window switched some on, compared with what its window would switch on now', () => {
    const list = [draft({ id: 1 }), draft({ id: 2, hook: 'blocks.1.hook_resid_post', enabled: false })];
    const ran = run({ windowSteering: windowApplied(list, null) });
    expect(ran.windowSteering?.map((a) => a.n)).toEqual([1]);
    expect(pairStaleParts(ran, pairNow({ windowSteering: windowApplied(list, null) }))).toEqual([]);
    expect(pairStaleParts(ran, pairNow({ windowSteering: windowApplied([draft({ id: 1, dose: 8 }), list[1]], null) }))).toEqual(['interventions']);
    // the Window view's choice of #2 (off in the list) is what a rerun switches on: another intervention
    expect(pairStaleParts(ran, pairNow({ windowSteering: windowApplied(list, 2) }))).toEqual(['interventions']);
    // a patching grid switches none on: the list is not its input
    expect(pairStaleParts(run(), pairNow({ windowSteering: windowApplied(list, null) }))).toEqual([]);
  });
});

describe('a model load drops the branch tree (the worker drops it with its model)', () => {
  const tree = { promptIds: [1, 2], nodes: [{ id: 0, ids: [3] }, { id: 1, ids: [4] }] } as unknown as BranchTree;
  it('clears the tree and its selection, says which load it was of, and forgets that once a new tree is grown', () => {
    const s = () => useStore.getState();
    s().setTree(tree, 1);
    s().dropTree('stories260K · float32 · WebGPU', 'stories260K · Q8_0 · CPU');
    expect(s().tree).toBeNull();
    expect(s().compare).toEqual([]);
    expect(s().droppedTree).toEqual({ was: 'stories260K · float32 · WebGPU', now: 'stories260K · Q8_0 · CPU' });
    s().setTree(tree);
    expect(s().droppedTree).toBeNull();
    // no tree: a load says nothing about one
    s().setTree(null);
    s().dropTree('a', 'b');
    expect(s().droppedTree).toBeNull();
  });
});

describe('"steered by #n" follows the list as it is now', () => {
  const steering = appliedInterventions([draft({ id: 1 }), draft({ id: 2, hook: 'blocks.1.hook_resid_post' })]);

  it('an intervention moved down the list is named by its new place', () => {
    const list = [draft({ id: 7 }), draft({ id: 1 }), draft({ id: 2, hook: 'blocks.1.hook_resid_post' })];
    expect(steeringNow(steering, list).map((x) => steeringName(x))).toEqual(['#2', '#3']);
  });

  it('removed, edited and switched-off ones say so', () => {
    expect(steeringNow(steering, [draft({ id: 2, hook: 'blocks.1.hook_resid_post' })]).map((x) => steeringName(x))).toEqual(['one since removed', '#1']);
    const edited = steeringNow(steering, [draft({ id: 1, dose: -4 }), draft({ id: 2, hook: 'blocks.1.hook_resid_post', enabled: false })]);
    expect(edited.map((x) => steeringName(x))).toEqual(['#1 (edited since)', '#2 (off now)']);
    expect(edited.map((x) => steeringName(x, true))).toEqual(['#1 edited', '#2 off']);
    expect(steeringName({ n: null, change: 'removed' }, true)).toBe('removed');
  });
});

describe('picking a dose–response point', () => {
  const HOOK3 = 'blocks.3.hook_resid_post', HOOK2 = 'blocks.2.hook_resid_post';
  const sweep = (vectorId = 'v1'): SweepDisplay => ({
    result: { layers: [2, 3], doses: [-8, 0, 8], doseKey: 'alpha', hooks: [HOOK2, HOOK3], margin: [[0, 0, 0], [0, 0, 0]], kl: [[0, 0, 0], [0, 0, 0]], unsteeredMargin: 0 },
    modelLabel: 'stories260K', computedWith: 'stories260K · float32 · CPU', prompt: 'p', good: ' a', bad: ' b', type: 'add', vectorId, vectorName: 'v', pickedId: null,
  });
  // the sweep's load is the one ready now (each case that reloads says so)
  beforeEach(() => useStore.setState({ interventions: [], selectedIntervention: null, sweep: null, modelStatus: 'ready', modelLabel: 'stories260K', modelIdentity: 'stories260K · float32 · CPU' }));
  const list = () => useStore.getState().interventions;
  /** A pick that placed something (not refused as stale). */
  const placed = (li: number, di: number) => {
    const p = placeFromSweep(li, di);
    if (p && 'stale' in p) throw new Error(p.stale);
    return p;
  };

  it('replaces the intervention at that hook with that vector: the dose becomes the measured one, not α1 + α2', () => {
    const s = useStore.getState();
    const other = s.addIntervention({ ...draft({}), hook: 'blocks.0.hook_resid_post', vectorId: 'v2' });
    const mine = s.addIntervention({ ...draft({}), dose: 4, positions: [5], steps: { start: 2, end: null } });
    s.setSweep(sweep());
    expect(placed(1, 2)).toEqual({ id: mine, replaced: true });
    expect(list()).toHaveLength(2);
    expect(list()[1]).toMatchObject({ id: mine, hook: HOOK3, type: 'add', dose: 8, vectorId: 'v1', positions: 'all', steps: null, enabled: true });
    expect(list()[0]).toMatchObject({ id: other, hook: 'blocks.0.hook_resid_post', dose: 4 });
    expect(useStore.getState().selectedIntervention).toBe(mine);
  });

  it('a later pick from the same sweep moves that intervention (another layer, another dose) instead of adding one', () => {
    useStore.getState().setSweep(sweep());
    const first = placed(1, 0);
    expect(first?.replaced).toBe(false);
    expect(placed(0, 2)).toEqual({ id: first?.id, replaced: true });
    expect(list()).toHaveLength(1);
    expect(list()[0]).toMatchObject({ hook: HOOK2, dose: 8 });
  });

  it('with another vector at that hook, the point is added beside it', () => {
    const s = useStore.getState();
    s.addIntervention(draft({ vectorId: 'v2' }));
    s.setSweep(sweep('v1'));
    expect(placed(1, 1)?.replaced).toBe(false);
    expect(list().map((d) => d.vectorId)).toEqual(['v2', 'v1']);
  });

  it('a sweep of another load places nothing and says it is stale: the same model reloaded as Q8_0 on the CPU, another model, none', () => {
    const s = useStore.getState();
    const mine = s.addIntervention({ ...draft({}), dose: 4 });
    s.setSweep(sweep());
    useStore.setState({ modelIdentity: 'stories260K · Q8_0 · CPU' });
    expect(placeFromSweep(1, 2)).toEqual({ stale: 'This sweep is stale — computed with stories260K · float32 · CPU (stories260K · Q8_0 · CPU is loaded now): run the sweep again to pick a dose.' });
    useStore.setState({ modelLabel: 'aidreams260K', modelIdentity: 'aidreams260K · float32 · CPU' });
    expect(placeFromSweep(1, 2)).toEqual({ stale: 'This sweep is stale — computed with the previous model (stories260K; aidreams260K is loaded now): run the sweep again to pick a dose.' });
    useStore.setState({ modelStatus: 'loading', modelLabel: 'stories260K', modelIdentity: null });
    expect(placeFromSweep(1, 2)).toMatchObject({ stale: expect.stringContaining('no model is loaded now') });
    // nothing was placed or edited
    expect(list()).toHaveLength(1);
    expect(list()[0]).toMatchObject({ id: mine, dose: 4, hook: 'blocks.3.hook_resid_post' });
    // the same load again (a fresh device, the same storage and backend): the sweep is current
    useStore.setState({ modelStatus: 'ready', modelIdentity: 'stories260K · float32 · CPU' });
    expect(placeFromSweep(1, 2)).toEqual({ id: mine, replaced: true });
  });
});

describe('every result names the load it was computed with, read in one place', () => {
  it("currentIdentity is the identity of the load ready now, '' while none is known", async () => {
    const { currentIdentity } = await import('../../app/actions/identity');
    useStore.setState({ modelStatus: 'ready', modelLabel: 'stories260K', modelIdentity: 'stories260K · Q8_0 · CPU' });
    expect(currentIdentity()).toBe('stories260K · Q8_0 · CPU');
    useStore.getState().loadStarted('stories260K', { kind: 'url', url: 'models/stories260K/' }, {});
    expect(currentIdentity()).toBe('');
  });

  it('no action reads the store\'s modelIdentity itself: the nine that store results use currentIdentity', () => {
    const dir = path.join(__dirname, '../../app/actions');
    const users: string[] = [];
    for (const f of fs.readdirSync(dir)) {
      const src = fs.readFileSync(path.join(dir, f), 'utf8');
      if (/computedWith\s*:\s*(?!currentIdentity\(\))[^,}\s]/.test(src)) throw new Error(`${f} computes computedWith itself`);
      if (f !== 'identity.ts' && f !== 'model.ts' && /\bmodelIdentity\b/.test(src)) throw new Error(`${f} reads modelIdentity`);
      if (/currentIdentity\(\)/.test(src) && f !== 'identity.ts') users.push(f);
    }
    expect(users).toEqual(expect.arrayContaining(['analyse.ts', 'batch.ts', 'generate.ts', 'patching.ts', 'probe.ts', 'report.ts', 'sae.ts', 'sweep.ts', 'window.ts']));
  });
});

describe('a batch study records the load its rows were computed with', () => {
  it('startBatchRows keeps it, and the rows are load-stale once the model is loaded again as Q8_0 on the CPU', () => {
    useStore.setState({ modelStatus: 'ready', modelLabel: 'stories260K', modelIdentity: 'stories260K · float32 · WebGPU' });
    const s = useStore.getState();
    s.startBatchRows('stories260K', 'stories260K · float32 · WebGPU', []);
    const b = useStore.getState();
    expect(b.batchComputedWith).toBe('stories260K · float32 · WebGPU');
    expect(loadStaleness(b.batchModel!, b.batchComputedWith, loadedNow(b))).toBeNull();
    useStore.setState({ modelIdentity: 'stories260K · Q8_0 · CPU' });
    const now = useStore.getState();
    expect(loadStaleness(now.batchModel!, now.batchComputedWith, loadedNow(now))).toBe('load');
    expect(loadStaleText(now.batchModel!, now.batchComputedWith, loadedNow(now))).toBe('computed with stories260K · float32 · WebGPU (stories260K · Q8_0 · CPU is loaded now)');
  });
});
