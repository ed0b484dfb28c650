import { beforeEach, describe, expect, it, vi } from 'vitest';

/**
 * Issue #8 fault 10: a newer request is never dropped silently. The page's actions run against a
 * stand-in worker that serialises calls as the real page does (actions/worker.ts inOrder) and whose
 * analyses, generations and loads finish when the test says so.
 */
type Deferred<T> = { promise: Promise<T>; resolve: (v: T) => void };
const deferred = <T,>(): Deferred<T> => {
  let resolve!: (v: T) => void;
  const promise = new Promise<T>((r) => { resolve = r; });
  return { promise, resolve };
};

const calls: { method: string; arg: unknown; done: Deferred<unknown> }[] = [];
let cancelled = 0;
const fakeWorker = new Proxy({}, {
  get: (_t, method: string) => {
    if (method === 'then') return undefined;
    if (method === 'cancel') return async () => { cancelled++; for (const c of calls) if (c.method === 'generate') c.done.resolve(generation('cancelled')); };
    if (method === 'onDeviceLost') return async () => undefined;
    return (arg: unknown) => {
      const done = deferred<unknown>();
      calls.push({ method, arg, done });
      return done.promise;
    };
  },
});

vi.mock('virtual:bundled-models', () => ({ default: [] }));
vi.mock('../../app/actions/worker', () => {
  let queue: Promise<unknown> = Promise.resolve();
  return {
    worker: () => fakeWorker,
    inOrder: <T,>(call: (w: unknown) => Promise<T>): Promise<T> => {
      const run = queue.then(() => call(fakeWorker));
      queue = run.catch(() => undefined);
      return run;
    },
    messageOf: (e: unknown) => (e instanceof Error ? e.message : String(e)),
  };
});

const { useStore } = await import('../../app/store');
const { analyse } = await import('../../app/actions/analyse');
const { generate } = await import('../../app/actions/generate');
const { loadModel } = await import('../../app/actions/model');
const { analyseAction } = await import('../../app/lib/job_rules');
const { staleParts } = await import('../../app/lib/stale');

function analysis(prompt: string) {
  return { ids: [1, 2], tokens: [prompt.slice(0, 1), ''], nLayers: 1, nHeads: 1, good: {}, bad: {}, lensMargin: new Float32Array(4), finalMargin: new Float32Array(2), sequenceMargin: 0, lensHandle: 1, residNorms: [], massive: [], sinks: [], warnings: [] };
}
function generation(stop: string) {
  return { promptIds: [1], ids: [], margins: [], stop, tokens: [], text: '', warnings: [] };
}
/** Lets queued promise callbacks run. */
const flush = () => new Promise((r) => setTimeout(r, 0));
const pending = (method: string) => calls.filter((c) => c.method === method);
const now = () => {
  const s = useStore.getState();
  return { model: s.modelStatus === 'ready' ? s.modelLabel : null, identity: s.modelStatus === 'ready' ? s.modelIdentity : null, prompt: s.prompt, chatTemplate: s.chatTemplate, system: s.system, tools: s.tools, good: s.good, bad: s.bad, interventions: s.interventions };
};

beforeEach(() => {
  calls.length = 0;
  cancelled = 0;
  useStore.setState({ modelStatus: 'ready', modelLabel: 'stories260K', job: null, queued: null, result: null, gen: null, interventions: [], failure: null });
  useStore.getState().setPrompt('Lily gave the ball to');
  useStore.getState().setFuture('good', { mode: 'text', value: ' Tom' });
  useStore.getState().setFuture('bad', { mode: 'text', value: ' Lily' });
});

describe('Analyse while an analysis runs, after a prompt edit', () => {
  it('is queued (visible in the store), then runs on the edited prompt; each result carries its prompt', async () => {
    const first = analyse();
    await flush();
    expect(useStore.getState().job?.kind).toBe('analyse');
    useStore.getState().setPrompt('Tom gave the ball to');
    expect(analyseAction(useStore.getState().job, true)).toBe('queue');
    const second = analyse();
    const third = analyse(); // a further click keeps the one queued run
    expect(useStore.getState().queued?.label).toBe('Analyse');
    expect(pending('analyse')).toHaveLength(1);
    expect((pending('analyse')[0].arg as { prompt: string }).prompt).toBe('Lily gave the ball to');

    pending('analyse')[0].done.resolve(analysis('Lily gave the ball to'));
    await first;
    // the first result is on display, labelled with the prompt it was computed for: stale for the edited prompt
    expect(useStore.getState().result?.prompt).toBe('Lily gave the ball to');
    expect(staleParts(useStore.getState().result!, now())).toEqual(['prompt']);
    await flush();
    // the queued analysis has started, on the edited prompt
    expect(useStore.getState().queued).toBeNull();
    expect(useStore.getState().job?.kind).toBe('analyse');
    expect(pending('analyse')).toHaveLength(2);
    expect((pending('analyse')[1].arg as { prompt: string }).prompt).toBe('Tom gave the ball to');
    pending('analyse')[1].done.resolve(analysis('Tom gave the ball to'));
    await Promise.all([second, third]);
    expect(useStore.getState().result?.prompt).toBe('Tom gave the ball to');
    expect(staleParts(useStore.getState().result!, now())).toEqual([]);
    expect(useStore.getState().job).toBeNull();
    expect(pending('analyse')).toHaveLength(2);
  });

  it('queued behind a generation, it runs when the generation ends', async () => {
    useStore.setState({ generation: { ...useStore.getState().generation, maxNewTokens: 50 } });
    const gen = generate();
    await flush();
    expect(useStore.getState().job?.kind).toBe('generate');
    const a = analyse();
    expect(useStore.getState().queued?.label).toBe('Analyse');
    expect(pending('analyse')).toHaveLength(0);
    pending('generate')[0].done.resolve(generation('length'));
    await gen;
    await flush();
    expect(pending('analyse')).toHaveLength(1);
    pending('analyse')[0].done.resolve(analysis('Lily gave the ball to'));
    await a;
    expect(useStore.getState().result?.prompt).toBe('Lily gave the ball to');
  });
});

describe('loading a model while a generation runs', () => {
  it('cancels the generation at once; the model shows as loading, so Generate and Analyse stay disabled until it is ready', async () => {
    const gen = generate();
    await flush();
    expect(useStore.getState().job?.kind).toBe('generate');
    const load = loadModel({ kind: 'url', url: 'http://x/models/other/', label: 'other' });
    expect(cancelled).toBe(1);
    expect(useStore.getState().job?.kind).toBe('load');
    expect(useStore.getState().modelStatus).toBe('loading');
    await gen; // the generation ended as cancelled
    await flush();
    // its end did not clear the load's mark: Generate (disabled={!!job || !ready}) and Analyse stay disabled
    expect(useStore.getState().job?.kind).toBe('load');
    expect(analyseAction(useStore.getState().job, useStore.getState().modelStatus === 'ready')).toBe('unavailable');
    expect(useStore.getState().failure).toBeNull();
    expect(pending('load')).toHaveLength(1);
    pending('load')[0].done.resolve({ label: 'other', hasChatTemplate: false });
    expect(await load).toBe(true);
    expect(useStore.getState().job).toBeNull();
    expect(useStore.getState().modelStatus).toBe('ready');
  });
});

describe('a model load started while another load runs', () => {
  it('cancels the earlier one and ignores its outcome: the newest load decides what is loaded, never two racing', async () => {
    const first = loadModel({ kind: 'url', url: 'http://x/models/first/', label: 'first' });
    await flush();
    expect(cancelled).toBe(0);
    const second = loadModel({ kind: 'url', url: 'http://x/models/second/', label: 'second' });
    expect(cancelled).toBe(1);
    // The earlier load ends anyway (past the point a cancel can stop it): nothing of it reaches the store.
    pending('load')[0].done.resolve({ label: 'first', hasChatTemplate: false });
    expect(await first).toBe(false);
    expect(useStore.getState().modelStatus).toBe('loading');
    expect(useStore.getState().modelLabel).toBe('second');
    expect(useStore.getState().job?.kind).toBe('load');
    await flush();
    expect(pending('load')).toHaveLength(2);
    pending('load')[1].done.resolve({ label: 'second', hasChatTemplate: false });
    expect(await second).toBe(true);
    expect(useStore.getState().modelStatus).toBe('ready');
    expect(useStore.getState().info).toMatchObject({ label: 'second' });
    expect(useStore.getState().job).toBeNull();
  });
});

describe('why a button is disabled while a job runs (lib/job_rules.ts waitingFor)', () => {
  it('names the running job, and Cancel where the job can be cancelled; nothing when idle', async () => {
    const { waitingFor } = await import('../../app/lib/job_rules');
    expect(waitingFor(null)).toBeUndefined();
    expect(waitingFor({ kind: 'analyse', label: 'Analyse', startedAt: 0, cancellable: false })).toBe('waiting for: Analyse');
    expect(waitingFor({ kind: 'report', label: 'Decision-point report', startedAt: 0, cancellable: true })).toBe('waiting for: Decision-point report (Cancel it in the progress bar)');
  });
});
