// @vitest-environment happy-dom
/**
 * Every view in the registry (app/views/registry.ts) reopens where it was saved: the experiment link
 * and the experiment file written on that view, read back and restored, show the same view (issue
 * 22: a hand-kept list of restorable views had drifted, and an experiment saved on the Patching,
 * Report or SAE tab reopened on the margin heatmap). The reruns a restore starts (Analyse, Generate,
 * the sweep, a capture) are stubbed: only which view the store ends on is checked.
 */
import { beforeEach, describe, expect, it, vi } from 'vitest';

vi.mock('virtual:bundled-models', () => ({ default: ['stories260K'] }));
vi.mock('../../app/actions/analyse', async (orig) => ({ ...(await orig<object>()), analyse: vi.fn(async () => undefined) }));
vi.mock('../../app/actions/generate', async (orig) => ({ ...(await orig<object>()), generate: vi.fn(async () => undefined) }));
vi.mock('../../app/actions/sweep', async (orig) => ({ ...(await orig<object>()), runSweep: vi.fn(async () => undefined) }));
vi.mock('../../app/actions/activations', async (orig) => ({ ...(await orig<object>()), captureActivations: vi.fn(async () => undefined) }));
// the file saved is caught here instead of downloaded
const saved: Blob[] = [];
vi.mock('../../app/lib/export', async (orig) => ({ ...(await orig<object>()), download: vi.fn((_name: string, blob: Blob) => { saved.push(blob); }) }));

const { useStore } = await import('../../app/store');
const { VIEWS } = await import('../../app/views/registry');
const { experimentLink, openExperimentFile, restoreExperiment, saveExperimentFile } = await import('../../app/actions/experiment');
const { experimentFromHash } = await import('../../app/lib/experiment_state');

const initial = useStore.getState();
/** Another view than `name`, to restore over. */
const other = (name: string) => (name === 'margins' ? 'sinks' : 'margins');

describe('every registered view round-trips through an experiment link and an experiment file', () => {
  beforeEach(() => {
    useStore.setState(initial, true);
    // the experiment's model is the one loaded, so a restore loads nothing
    useStore.setState({ modelStatus: 'ready', modelLabel: 'stories260K', lastLoad: { source: { kind: 'url', url: 'http://localhost/models/stories260K/', label: 'stories260K' }, options: {} } });
    saved.length = 0;
  });

  it('the registry names each view once, with a title, a component and a job', () => {
    expect(new Set(VIEWS.map((v) => v.name)).size).toBe(VIEWS.length);
    for (const v of VIEWS) {
      expect(v.title, v.name).not.toBe('');
      expect(typeof v.component, v.name).toBe('function');
      expect(v.job.length, v.name).toBeGreaterThan(0);
    }
  });

  for (const v of VIEWS) {
    const reopensOn = v.restorable ? v.name : 'margins';
    it(`${v.name}: a link saved on it reopens on ${reopensOn}`, async () => {
      useStore.getState().setView(v.name);
      const { url } = experimentLink();
      useStore.getState().setView(other(v.name));
      const e = experimentFromHash(new URL(url).hash);
      expect(e?.view.name).toBe(v.name);
      await restoreExperiment(e!, 'link');
      expect(useStore.getState().view).toBe(reopensOn);
    });

    it(`${v.name}: a file saved on it reopens on ${reopensOn}`, async () => {
      useStore.getState().setView(v.name);
      saveExperimentFile();
      expect(saved).toHaveLength(1);
      useStore.getState().setView(other(v.name));
      await openExperimentFile(new File([await saved[0].text()], 'experiment.json', { type: 'application/json' }));
      expect(useStore.getState().experimentNotice).toBeNull();
      expect(useStore.getState().view).toBe(reopensOn);
    });
  }
});
