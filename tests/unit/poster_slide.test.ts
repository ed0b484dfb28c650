import { beforeEach, describe, expect, it, vi } from 'vitest';
import type { AnalysisResult, GenerationResult, SweepDisplay } from '../../app/store/results';
import type { InterventionDraft } from '../../app/store/steering';

/**
 * Poster mode's first slide (app/actions/poster_slide.ts): entering it reruns exactly what the open
 * view shows and no longer answers the experiment as edited — the analysis when the model load,
 * prompt, futures or interventions changed since it (lib/stale.ts), a generation or a sweep by their
 * own inputs — and nothing that is up to date (trials saw slide 1 show an analysis of another load).
 */
const runs = vi.hoisted(() => [] as string[]);
vi.mock('../../app/actions/analyse', () => ({ analyse: async () => { runs.push('analyse'); } }));
vi.mock('../../app/actions/generate', () => ({ generate: async () => { runs.push('generate'); } }));
vi.mock('../../app/actions/sweep', () => ({ runSweep: async () => { runs.push('sweep'); } }));
vi.mock('../../app/actions/activations', () => ({ captureActivations: async () => { runs.push('capture'); } }));

const { useStore } = await import('../../app/store');
const { refreshOwnSlide, slideStaleness } = await import('../../app/actions/poster_slide');

const F32 = 'stories260K · float32 · WebGPU', Q8 = 'stories260K · Q8_0 · CPU';
const PROMPT = 'The little girl felt very';
const good = { mode: 'text' as const, value: ' happy' }, bad = { mode: 'text' as const, value: ' sad' };
const draft: InterventionDraft = { id: 1, enabled: true, hook: 'blocks.3.hook_resid_post', type: 'add', dose: 4, rotateBy: 'theta', mode: 'project', vectorId: 'v1', source: '', head: null, positions: 'all', steps: null };
const initial = useStore.getState();

/** The analysis on display, computed with `computedWith` for PROMPT, the futures and `steering`. */
const result = (computedWith: string, steering: InterventionDraft[] = []): AnalysisResult => ({
  analysis: {} as AnalysisResult['analysis'], modelLabel: 'stories260K', computedWith, prompt: PROMPT, chatTemplate: false, system: undefined, tools: [],
  good, bad, steering: steering.map((d, i) => ({ n: i + 1, draft: d })), baseline: null,
});
const generation = (computedWith: string, prompt = PROMPT): GenerationResult => ({
  modelLabel: 'stories260K', computedWith, prompt, chatTemplate: false, system: undefined, tools: [], maxNewTokens: 8, steering: [], events: [], final: null, steered: null,
});
const sweep = (computedWith: string): SweepDisplay => ({
  result: {} as SweepDisplay['result'], modelLabel: 'stories260K', computedWith, prompt: PROMPT, good: good.value, bad: bad.value,
  type: 'add', vectorId: 'v1', vectorName: 'CAA', pickedId: null,
});

beforeEach(() => {
  runs.length = 0;
  useStore.setState(initial, true);
  useStore.setState({ modelStatus: 'ready', modelLabel: 'stories260K', modelIdentity: F32, prompt: PROMPT, chatTemplate: false, good, bad, interventions: [], view: 'margins' });
});

describe('poster mode\'s first slide answers the experiment as edited', () => {
  it('an up-to-date analysis is left alone; a missing one is run', async () => {
    useStore.setState({ result: result(F32) });
    expect(slideStaleness(useStore.getState())).toEqual({ analysis: false, view: false });
    await refreshOwnSlide();
    expect(runs).toEqual([]);
    useStore.setState({ result: null });
    await refreshOwnSlide();
    expect(runs).toEqual(['analyse']);
  });

  it('reruns the analysis after a reload with other weights, an edited future, or an intervention added since', async () => {
    for (const edit of [{ modelIdentity: Q8 }, { bad: { mode: 'text' as const, value: ' angry' } }, { interventions: [draft] }]) {
      runs.length = 0;
      useStore.setState({ modelIdentity: F32, bad, interventions: [], result: result(F32) });
      useStore.setState(edit);
      await refreshOwnSlide();
      expect(runs, JSON.stringify(edit)).toEqual(['analyse']);
    }
    // …and not when the analysis was computed under that intervention
    runs.length = 0;
    useStore.setState({ bad, interventions: [draft], result: result(F32, [draft]) });
    await refreshOwnSlide();
    expect(runs).toEqual([]);
  });

  it('on the generation view a generation of another load or prompt is run again; an up-to-date one is not', async () => {
    useStore.setState({ view: 'generation', result: result(F32), gen: generation(F32) });
    await refreshOwnSlide();
    expect(runs).toEqual([]);
    useStore.setState({ modelIdentity: Q8, result: result(Q8), gen: generation(F32) });
    await refreshOwnSlide();
    expect(runs).toEqual(['generate']);
    runs.length = 0;
    useStore.setState({ gen: generation(Q8, 'Once upon a time') });
    await refreshOwnSlide();
    expect(runs).toEqual(['generate']);
  });

  it('on the dose–response view a sweep of another load is run again when a vector is picked', async () => {
    useStore.setState({ view: 'dose', result: result(Q8), modelIdentity: Q8, sweep: sweep(F32), sweepSettings: { ...initial.sweepSettings, vectorId: 'v1' } });
    await refreshOwnSlide();
    expect(runs).toEqual(['sweep']);
    runs.length = 0;
    useStore.setState({ sweep: sweep(Q8) });
    await refreshOwnSlide();
    expect(runs).toEqual([]);
  });

  it('runs nothing while no model is ready (the view\'s stale line says what changed)', async () => {
    useStore.setState({ modelStatus: 'loading', result: null });
    await refreshOwnSlide();
    expect(runs).toEqual([]);
  });
});
