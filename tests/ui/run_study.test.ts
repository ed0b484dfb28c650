// @vitest-environment happy-dom
/**
 * The generic study action (app/actions/study.ts runStudy) and slice (store/studies.ts): a study of
 * the table runs as a job of its own kind, its progress reaches the progress bar's steps, and its
 * result lands in studies[name] with the request and the model load it answers (useStudy's
 * staleness reads them); a failure shows in the banner and keeps the result on display.
 */
import { act, createElement } from 'react';
import { describe, expect, it, vi } from 'vitest';
import { domPerTest } from './dom';
import type { Progress } from '../../workers/protocol';

vi.mock('virtual:bundled-models', () => ({ default: ['stories260K'] }));
const seen: { kind: string | undefined; steps: unknown }[] = [];
const worker = {
  probe: vi.fn(async (req: { positive: string[] }, onProgress: (p: Progress) => void) => {
    const { useStore } = await import('../../app/store');
    onProgress({ done: 1, total: 2 });
    await new Promise((r) => setTimeout(r, 10)); // the progress callback is quiet: let it land
    seen.push({ kind: useStore.getState().job?.kind, steps: useStore.getState().jobSteps });
    if (req.positive[0] === 'fail') throw new Error('a probe set needs 2 prompts per class');
    return { accuracy: [0.5, 1] };
  }),
};
vi.mock('../../app/actions/worker', async (orig) => ({ ...(await orig<object>()), inOrder: (call: (w: unknown) => Promise<unknown>) => call(worker) }));

const { useStore } = await import('../../app/store');
const { runStudy } = await import('../../app/actions/study');
const { useStudy } = await import('../../app/components/useStudy');
const dom = domPerTest(useStore);

describe('runStudy', () => {
  it('runs the study as a job of its kind and keeps result, request and load in studies[name]', async () => {
    useStore.setState({ modelLabel: 'stories260K', modelIdentity: 'stories260K · float32 · CPU', modelStatus: 'ready' });
    const req = { positive: ['a', 'b'], negative: ['c', 'd'] };
    const r = await runStudy('probe', req, { label: 'Probing', what: 'Could not probe' });
    expect(r).toEqual({ accuracy: [0.5, 1] });
    expect(seen[0]).toEqual({ kind: 'probe', steps: { done: 1, total: 2 } });
    expect(useStore.getState().job).toBeNull();
    expect(useStore.getState().studies.probe).toEqual({ request: req, result: { accuracy: [0.5, 1] }, modelLabel: 'stories260K', computedWith: 'stories260K · float32 · CPU' });
  });

  it('a failure shows in the banner and leaves the result on display', async () => {
    await runStudy('probe', { positive: ['a', 'b'], negative: ['c', 'd'] }, { label: 'Probing', what: 'Could not probe' });
    const r = await runStudy('probe', { positive: ['fail'], negative: [] }, { label: 'Probing', what: 'Could not probe' });
    expect(r).toBeNull();
    expect(useStore.getState().failure).toMatchObject({ what: 'Could not probe', why: 'a probe set needs 2 prompts per class' });
    expect(useStore.getState().studies.probe?.result).toEqual({ accuracy: [0.5, 1] });
  });

  it('useStudy: the result with what makes it stale (another request, another load)', async () => {
    useStore.setState({ modelLabel: 'stories260K', modelIdentity: 'stories260K · float32 · CPU', modelStatus: 'ready' });
    const req = { positive: ['a', 'b'], negative: ['c', 'd'] };
    await runStudy('probe', req, { label: 'Probing', what: 'Could not probe' });
    let stale: string | null = 'unset';
    const Probe = ({ now }: { now: typeof req }) => { stale = useStudy('probe', now).stale; return null; };
    act(() => dom.root.render(createElement(Probe, { now: req })));
    expect(stale).toBeNull();
    act(() => dom.root.render(createElement(Probe, { now: { ...req, negative: ['c'] } })));
    expect(stale).toBe('request');
    act(() => useStore.setState({ modelIdentity: 'stories260K · Q8_0 · CPU' }));
    expect(stale).toBe('load');
  });
});
