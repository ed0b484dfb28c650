// @vitest-environment happy-dom
/**
 * Route interventions (ban_experts, force_experts, patch_route) survive the experiment link and the
 * experiment file like every intervention: their expert ids, source prompt, positions and step
 * window come back in the store, and the specs the worker would get (lib/specs.ts) are the ones
 * written. The reruns a restore starts are stubbed.
 */
import { beforeEach, describe, expect, it, vi } from 'vitest';

vi.mock('virtual:bundled-models', () => ({ default: ['stories260K'] }));
vi.mock('../../app/actions/analyse', async (orig) => ({ ...(await orig<object>()), analyse: vi.fn(async () => undefined) }));
vi.mock('../../app/actions/generate', async (orig) => ({ ...(await orig<object>()), generate: vi.fn(async () => undefined) }));
const saved: Blob[] = [];
vi.mock('../../app/lib/export', async (orig) => ({ ...(await orig<object>()), download: vi.fn((_name: string, blob: Blob) => { saved.push(blob); }) }));

const { useStore } = await import('../../app/store');
const { experimentLink, openExperimentFile, restoreExperiment, saveExperimentFile } = await import('../../app/actions/experiment');
const { experimentFromHash } = await import('../../app/lib/experiment_state');
const { specRequest } = await import('../../app/lib/specs');

const initial = useStore.getState();
const DRAFTS = [
  { enabled: true, hook: 'blocks.1.mlp.hook_router_logits', type: 'ban_experts', dose: 0, rotateBy: 'theta', mode: 'zero', vectorId: null, source: '', head: null, positions: [2, 4], steps: { start: 0, end: 3 }, experts: [1, 3] },
  { enabled: true, hook: 'blocks.0.mlp.hook_expert_indices', type: 'force_experts', dose: 0, rotateBy: 'theta', mode: 'zero', vectorId: null, source: '', head: null, positions: 'all', steps: null, experts: [0, 2] },
  { enabled: true, hook: 'blocks.2.mlp.hook_expert_indices', type: 'patch_route', dose: 0, rotateBy: 'theta', mode: 'zero', vectorId: null, source: 'The dog ran to the car', head: null, positions: { start: 1, end: 5 }, steps: { start: 1, end: null } },
] as const;
const SPECS = [
  { hook: 'blocks.1.mlp.hook_router_logits', type: 'ban_experts', positions: [2, 4], experts: [1, 3], steps: { start: 0, end: 3 } },
  { hook: 'blocks.0.mlp.hook_expert_indices', type: 'force_experts', positions: 'all', experts: [0, 2] },
  { hook: 'blocks.2.mlp.hook_expert_indices', type: 'patch_route', positions: { start: 1, end: 5 }, source: 'The dog ran to the car', steps: { start: 1 } },
];

describe('route interventions in experiment links and files', () => {
  beforeEach(() => {
    useStore.setState(initial, true);
    useStore.setState({ modelStatus: 'ready', modelLabel: 'stories260K', lastLoad: { source: { kind: 'url', url: 'http://localhost/models/stories260K/', label: 'stories260K' }, options: {} } });
    for (const d of DRAFTS) useStore.getState().addIntervention(structuredClone(d) as never);
    saved.length = 0;
  });
  const specsNow = () => specRequest(useStore.getState().interventions, []).specs;

  it('the drafts give the specs written', () => {
    expect(specsNow()).toEqual(SPECS);
  });

  it('a link restores them', async () => {
    const { url } = experimentLink();
    useStore.setState({ interventions: [] });
    await restoreExperiment(experimentFromHash(new URL(url).hash)!, 'link');
    expect(specsNow()).toEqual(SPECS);
  });

  it('a file restores them', async () => {
    saveExperimentFile();
    useStore.setState({ interventions: [] });
    await openExperimentFile(new File([await saved[0].text()], 'experiment.json', { type: 'application/json' }));
    expect(useStore.getState().experimentNotice).toBeNull();
    expect(specsNow()).toEqual(SPECS);
  });
});
