// @vitest-environment happy-dom
/**
 * The dose–response view while a sweep runs (trials watched ~40 s of a view that said nothing): it
 * says the sweep is running and how many forward passes are done, from the job's steps the worker
 * reports, in place of the "run the sweep" placeholder; nothing of it shows once the job ends or
 * while another job runs.
 */
import { act, createElement } from 'react';
import { describe, expect, it, vi } from 'vitest';
import { domPerTest } from './dom';

vi.mock('virtual:bundled-models', () => ({ default: ['stories260K'] }));
const { useStore } = await import('../../app/store');
const { DoseResponseView } = await import('../../app/views/DoseResponseView');

const dom = domPerTest(useStore);

const $ = (id: string) => dom.host.querySelector(`[data-testid="${id}"]`);

describe('a running sweep in its own view', () => {
  it('says how far it got, step by step, instead of the placeholder; gone when it ends', () => {
    act(() => dom.root.render(createElement(DoseResponseView)));
    expect($('sweep-running')).toBeNull();
    expect(dom.host.querySelector('.placeholder')?.textContent).toContain('run the sweep');
    const s = useStore.getState();
    act(() => s.setJob({ kind: 'sweep', label: 'Dose–response sweep', startedAt: 0, cancellable: true }));
    expect($('sweep-running')?.textContent).toContain('Running the sweep: starting');
    act(() => s.setJobSteps({ done: 28, total: 200 }));
    expect($('sweep-running')?.textContent).toContain('28 of 200 forward passes');
    expect(dom.host.querySelector('.placeholder')).toBeNull();
    act(() => s.setJobSteps({ done: 29, total: 200 }));
    expect($('sweep-running')?.textContent).toContain('29 of 200 forward passes');
    act(() => s.setJob(null));
    expect($('sweep-running')).toBeNull();
    expect(dom.host.querySelector('.placeholder')).not.toBeNull();
  });

  it('another job (an analysis) is not taken for a sweep', () => {
    act(() => dom.root.render(createElement(DoseResponseView)));
    act(() => useStore.getState().setJob({ kind: 'analyse', label: 'Analysing the prompt', startedAt: 0, cancellable: false }));
    expect($('sweep-running')).toBeNull();
  });
});
