// @vitest-environment happy-dom
/**
 * Feedback that was missing or wrong (issue 29 item 8): a restored SAE feature intervention whose
 * SAE is not loaded says to load its SAE (not "no vector yet: build or import one in Vectors"); the
 * notice naming SAE interventions left off goes once they are all deleted; the empty states of
 * Dose–response, Probes and Batch change once the vector is picked / the example is loaded.
 * (The SAE view's "Added #n" beside Steer/Clamp and the fork points' branch and split charts are
 * checked in e2e/sae.spec.ts and e2e/branches.spec.ts.)
 */
import { act, createElement } from 'react';
import { describe, expect, it, vi } from 'vitest';
import { domPerTest } from './dom';

vi.mock('virtual:bundled-models', () => ({ default: ['stories260K'] }));

const { useStore } = await import('../../app/store');
const { InterventionList } = await import('../../app/components/InterventionList');
const { DoseResponseView } = await import('../../app/views/DoseResponseView');
const { BatchView } = await import('../../app/views/BatchView');
const dom = domPerTest(useStore);

const SAE = { source: { kind: 'hub' as const, repo: 'jbloom/stories-saes', path: 'L2', revision: 'main' }, hook: 'blocks.2.hook_resid_post', label: 'stories L2 SAE' };
const pendingClamp = { enabled: false, hook: 'blocks.2.hook_resid_post', type: 'sae_clamp' as const, dose: 5, rotateBy: 'theta' as const, mode: 'project' as const, vectorId: null, source: '', head: null, positions: 'all' as const, steps: null, saePending: { sae: SAE as never, feature: 17 } };
const pendingSteer = { ...pendingClamp, type: 'add' as const, dose: 4 };

describe('feedback', () => {
  it('a restored SAE intervention waiting for its SAE says to load its SAE, not that it has no vector', () => {
    useStore.getState().addIntervention(pendingClamp);
    useStore.getState().addIntervention(pendingSteer);
    act(() => dom.root.render(createElement(InterventionList)));
    const text = dom.host.textContent ?? '';
    expect(text).not.toContain('no vector yet');
    expect(dom.host.querySelector('[data-testid="intervention-1-sae-pending"]')?.textContent).toContain('load its SAE');
    expect(dom.host.querySelector('[data-testid="intervention-2-sae-pending"]')?.textContent).toContain('stories L2 SAE');
  });

  it('the notice about SAE interventions left off goes when the interventions it names are deleted', () => {
    const a = useStore.getState().addIntervention(pendingClamp);
    const b = useStore.getState().addIntervention(pendingSteer);
    const keep = useStore.getState().addIntervention({ ...pendingSteer, saePending: undefined, type: 'ablate', mode: 'zero' });
    useStore.getState().setExperimentNotice({ what: 'Some SAE feature interventions are switched off', why: '#1, #2: …', interventions: [a, b] });
    useStore.getState().removeIntervention(a);
    expect(useStore.getState().experimentNotice).not.toBeNull(); // #2 is still named
    useStore.getState().removeIntervention(b);
    expect(useStore.getState().experimentNotice).toBeNull();
    expect(useStore.getState().interventions.map((d) => d.id)).toEqual([keep]);
    // a notice about something else stays
    useStore.getState().setExperimentNotice({ what: 'This link could not be opened', why: 'damaged' });
    useStore.getState().removeIntervention(keep);
    expect(useStore.getState().experimentNotice).not.toBeNull();
  });

  it('Dose–response no longer asks to pick a vector once one is picked', () => {
    act(() => dom.root.render(createElement(DoseResponseView)));
    expect(dom.host.textContent).toContain('Pick a vector and run the sweep');
    act(() => useStore.getState().setSweepSettings({ vectorId: 'v1' }));
    expect(dom.host.textContent).not.toContain('Pick a vector');
    expect(dom.host.querySelector('[data-testid="sweep-empty"]')?.textContent).toMatch(/^Run the sweep/);
  });

  it('Batch no longer asks to load an example once one is loaded', () => {
    act(() => dom.root.render(createElement(BatchView)));
    expect(dom.host.textContent).toContain('Load an example');
    act(() => useStore.getState().setBatchExample({ template: '{"prompt": "{a}", "good": " x", "bad": " y"}', values: 'a\nb\n', valuesName: 'distractors.csv', x: 'a', y: 'final_margin' }));
    expect(dom.host.textContent).not.toContain('Load an example');
    expect(dom.host.querySelector('[data-testid="batch-empty"]')?.textContent).toContain('Run the batch over distractors.csv');
  });

  it('Probes no longer asks to load an example once the prompts are loaded', async () => {
    const { ProbeView } = await import('../../app/views/ProbeView');
    useStore.setState({ probeSettings: { ...useStore.getState().probeSettings, source: 'example', positive: 'a\nb', negative: 'c\nd' } });
    act(() => dom.root.render(createElement(ProbeView)));
    expect(dom.host.querySelector('[data-testid="probe-empty"]')?.textContent).toMatch(/^Run the probes/);
  });
});
