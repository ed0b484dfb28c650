import * as fs from 'node:fs';
import * as path from 'node:path';
import * as Comlink from 'comlink';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { InferenceApi, LoadProgress, ModelSource, Progress, TokenEvent } from '../../workers/protocol';
import { defaultRepos, startMockHub, type MockHub } from '../../tools/mock-hub';
import { MemoryCacheStorage } from '../io/memory_cache';
import { F32_TOL, logSoftmax, maxDiff, realModel } from '../reference_math';
import { inProcessWorker, type Posted } from './in_process';
import { contextMessage } from '../../workers/engine/model/transformer';

/**
 * The worker protocol (workers/protocol.ts InferenceApi) through Comlink over a MessageChannel:
 * every method, progress callbacks (Comlink.proxy), cancel, transferables (the worker's buffers
 * are detached after the reply) and errors crossing the boundary with their messages and names.
 * Values are checked against the stories260K references where they are numbers.
 */
const m = realModel('stories260K');
const [A, B] = m.ref.prompts;
const FILES = ['config.json', 'tokenizer.json', 'tokenizer_config.json', 'model.safetensors'];
const filesSource = (dir: string, names = FILES): ModelSource => ({
  kind: 'files', label: path.basename(dir),
  files: names.map((f) => ({ path: `${path.basename(dir)}/${f}`, file: new Blob([fs.readFileSync(path.join(dir, f))]) })),
});

let api: Comlink.Remote<InferenceApi>;
let posted: Posted[];
let close: () => void;
let hub: MockHub;
const storage = new MemoryCacheStorage();
beforeAll(async () => {
  (globalThis as unknown as { caches: CacheStorage }).caches = storage.asCacheStorage();
  hub = await startMockHub({ repos: defaultRepos() });
  ({ api, posted, close } = await inProcessWorker());
}, 60_000); // importing the whole worker takes over 10 s on a loaded 2-core machine
afterAll(async () => {
  close();
  await hub.close();
  delete (globalThis as unknown as { caches?: CacheStorage }).caches;
});

/** The transfer list of the last reply the worker posted. */
const lastTransfer = () => posted[posted.length - 1].transfer as ArrayBuffer[];

describe('before a model is loaded', () => {
  it('status says nothing is loaded; model calls reject with the readable message across the boundary', async () => {
    expect(await api.status()).toEqual({ loaded: false, deviceLost: null });
    await expect(api.analyse({ prompt: 'x', good: { text: ' a' }, bad: { text: ' b' } })).rejects.toThrow('no model is loaded: pick one first');
    await expect(api.tokenize({ prompt: 'x' })).rejects.toThrow('no model is loaded');
  });

  it('a folder without config.json fails to load with the reason; the worker stays usable', async () => {
    await expect(api.load(filesSource(m.dir, ['tokenizer.json', 'model.safetensors']), 'cpu')).rejects.toThrow(/config\.json/);
    expect(await api.status()).toEqual({ loaded: false, deviceLost: null });
  });
});

describe('with stories260K loaded from picked files on the CPU backend', () => {
  const progress: LoadProgress[] = [];
  beforeAll(async () => {
    const info = await api.load(filesSource(m.dir), 'cpu', Comlink.proxy((p: LoadProgress) => { progress.push(p); }));
    expect(info).toMatchObject({ modelType: 'llama', nLayers: m.L, nHeads: m.H, nKvHeads: m.KV, dHead: m.dHead, dModel: m.D, dVocab: m.V, label: 'stories260K', backend: { kind: 'cpu' } });
    expect(info.hookNames).toContain('blocks.4.hook_resid_post');
  });

  it('load reported its stages in order, ending with ready; status says loaded', async () => {
    await new Promise((r) => setTimeout(r, 100)); // progress calls are fire-and-forget messages on the proxy's own port
    const stages = progress.map((p) => p.stage).filter((s, i, all) => s !== all[i - 1]);
    expect(stages).toEqual(['config', 'upload', 'tokenizer', 'ready']); // picked files are in memory: no 'weights' download stage
    expect(await api.status()).toEqual({ loaded: true, deviceLost: null });
  });

  it('tokenize, resolveFuture and tokenStrings give the reference ids and in-context tokens', async () => {
    const t = await api.tokenize({ prompt: B.prompt });
    expect(t.ids).toEqual(B.input_ids);
    expect(t.tokens).toHaveLength(B.n_prompt);
    const f = await api.resolveFuture({ prompt: A.prompt }, { text: ', there|,' });
    expect(f.sequences).toEqual([[432, 383], [432]]);
    expect(f.firstIds).toEqual([432]);
    await expect(api.resolveFuture({ prompt: A.prompt }, { ids: [[9999]] }, 'bad')).rejects.toThrow('the bad future: token id 9999 is outside the vocabulary [0, 512)');
    await api.analyse({ prompt: A.prompt, good: { ids: [[383]] }, bad: { ids: [[432]] } });
    expect(await api.tokenStrings([383, 432])).toEqual([' there', ',']);
  });

  it('a prompt longer than the context still tokenizes for the strip (with the reason runs refuse it), and its futures resolve; analyse refuses it', async () => {
    const long = { prompt: `${B.prompt} `.repeat(Math.ceil(600 / B.n_prompt)) };
    const t = await api.tokenize(long);
    expect(t.ids.length).toBeGreaterThan(512);
    expect(t.tokens).toHaveLength(t.ids.length);
    expect(t.tooLong).toBe(`the prompt: ${contextMessage(t.ids.length, 512, 512)}; shorten it`);
    expect((await api.tokenize({ prompt: B.prompt })).tooLong).toBeUndefined();
    expect((await api.resolveFuture(long, { ids: [[383]] })).firstIds).toEqual([383]);
    await expect(api.analyse({ ...long, good: { ids: [[383]] }, bad: { ids: [[432]] } })).rejects.toThrow(t.tooLong!);
  });

  it('analyse: typed arrays arrive with reference values; their buffers were transferred (detached in the worker)', async () => {
    const a = await api.analyse({ prompt: A.prompt, good: { ids: [[383]] }, bad: { ids: [[432]] } });
    const transfer = lastTransfer();
    expect(transfer.length).toBeGreaterThanOrEqual(5);
    expect(transfer.every((b) => b instanceof ArrayBuffer && b.byteLength === 0)).toBe(true);
    expect(a.lensMargin).toBeInstanceOf(Float32Array);
    const T = A.n_prompt;
    const lp = logSoftmax(m.arrays(A).get('logits')!.data.subarray((T - 1) * m.V, T * m.V));
    expect(Math.abs(a.finalMargin[T - 1] - (lp[383] - lp[432]))).toBeLessThanOrEqual(F32_TOL);
    expect(a.sinks.alpha).toHaveLength(m.L * m.H * T);
  });

  it('analyse transfers the buffer of each of its 12 typed arrays (collected from the result, not listed by hand)', async () => {
    const a = await api.analyse({ prompt: A.prompt, good: { ids: [[383]] }, bad: { ids: [[432]] } });
    const transfer = lastTransfer();
    expect(transfer).toHaveLength(12);
    expect(new Set(transfer).size).toBe(12);
    expect(transfer.every((b) => b instanceof ArrayBuffer && b.byteLength === 0)).toBe(true);
    const arrays = [a.lensMargin, a.finalMargin, a.residNorms, a.massive.value, a.massive.token, a.massive.dim, a.massive.ratio,
      a.sinks.alpha0, a.sinks.alpha, a.sinks.sinkRate, a.sinks.sinkPos, a.sinks.sinkValueNorm];
    expect(arrays.every((x) => x.length > 0)).toBe(true);
  });

  it('pattern(layer, head) of the last analysis is the reference attention [T, T], transferred', async () => {
    const T = A.n_prompt;
    const p = await api.pattern(3, 5);
    expect(lastTransfer().map((b) => b.byteLength)).toEqual([0]);
    const want = Array.from({ length: T * T }, (_, x) => m.attn(m.arrays(A), A, 3, 5, Math.floor(x / T), x % T));
    expect(maxDiff(p, want)).toBeLessThanOrEqual(F32_TOL);
  });

  it('generate streams every token through the proxied callback; the result equals the reference greedy ids', async () => {
    const events: TokenEvent[] = [];
    const g = await api.generate({ prompt: A.prompt, good: { ids: [[383]] }, bad: { ids: [[432]] }, maxNewTokens: 12 }, Comlink.proxy((e: TokenEvent) => { events.push(e); }));
    expect(g.ids).toEqual(A.greedy_ids.slice(0, 12));
    await new Promise((r) => setTimeout(r, 50)); // callbacks are fire-and-forget messages
    expect(events.map((e) => e.id)).toEqual(g.ids);
    expect(g.stop).toBe('length');
  });

  it('cancel() stops a generation between tokens: it resolves with stop = "cancelled" and fewer tokens', async () => {
    let seen = 0;
    const job = api.generate({ prompt: A.prompt, good: { ids: [[383]] }, bad: { ids: [[432]] }, maxNewTokens: 400 }, Comlink.proxy(() => { if (++seen === 3) void api.cancel(); }));
    const g = await job;
    expect(g.stop).toBe('cancelled');
    expect(g.ids.length).toBeGreaterThanOrEqual(3);
    expect(g.ids.length).toBeLessThan(400);
    const n = Math.min(g.ids.length, A.greedy_ids.length);
    expect(g.ids.slice(0, n)).toEqual(A.greedy_ids.slice(0, n));
  });

  it('steeringVector: CAA reports progress per text and returns the difference of the reference residuals, transferred', async () => {
    const calls: [number, number][] = [];
    const v = await api.steeringVector({ method: 'caa', positive: [A.prompt], negative: [B.prompt], hook: 'blocks.1.hook_resid_post' }, Comlink.proxy((p: Progress) => { calls.push([p.done, p.total]); }));
    expect(lastTransfer().map((b) => b.byteLength)).toEqual([0]);
    const want = Array.from(m.resid(m.arrays(A), A, 2, A.n_prompt - 1), (x, i) => x - m.resid(m.arrays(B), B, 2, B.n_prompt - 1)[i]);
    expect(maxDiff(v.vector, want)).toBeLessThanOrEqual(F32_TOL);
    expect(v).toMatchObject({ dModel: m.D, hook: 'blocks.1.hook_resid_post', model: 'stories260K', provenance: { method: 'caa', position: 'last' } });
    await new Promise((r) => setTimeout(r, 50));
    expect(calls).toEqual([[1, 2], [2, 2]]);
    await expect(api.steeringVector({ method: 'actadd', positive: [A.prompt, B.prompt], negative: [B.prompt], hook: 'hook_embed' })).rejects.toThrow('ActAdd takes one positive and one negative text (got 2 and 1)');
  });

  it('exportVector → importVector round-trips values and provenance; a vector of the wrong width is refused by name', async () => {
    const v = await api.steeringVector({ method: 'actadd', positive: [A.prompt], negative: [B.prompt], hook: 'blocks.0.hook_resid_post' });
    const bytes = await api.exportVector('safetensors', v);
    expect(bytes).toBeInstanceOf(Uint8Array);
    const back = await api.importVector('happy.safetensors', bytes);
    expect(Array.from(back.vector)).toEqual(Array.from(v.vector));
    expect(back).toMatchObject({ hook: 'blocks.0.hook_resid_post', file: 'happy.safetensors', provenance: { method: 'actadd' } });
    const npy = await api.exportVector('npy', { ...v, vector: v.vector.slice(0, 10), dModel: 10 });
    await expect(api.importVector('short.npy', npy)).rejects.toThrow('short.npy holds a vector of 10 values, but stories260K has d_model = 64');
  });

  it('sweep reports progress; cancel() rejects it with a CancelledError (name and message cross the boundary)', async () => {
    const req = { prompt: A.prompt, good: { ids: [[383]] }, bad: { ids: [[432]] }, template: { hook: 'blocks.{l}.hook_resid_post', type: 'add' as const, vector: Array(64).fill(0.1) }, layers: [0, 1, 2, 3, 4], doses: [-4, -2, 0, 2, 4] };
    const small = await api.sweep({ ...req, layers: [1], doses: [0, 2] });
    expect(small.kl[0][0]).toBe(0);
    expect(small.margin[0]).toHaveLength(2);
    const seen: Progress[] = [];
    const job = api.sweep(req, Comlink.proxy((p: Progress) => { seen.push(p); if (p.done === 2) void api.cancel(); }));
    await expect(job).rejects.toMatchObject({ name: 'CancelledError', message: 'cancelled: the dose–response sweep was stopped before it finished' });
    expect(seen.length).toBeLessThan(25);
    expect(seen[0]).toEqual({ done: 1, total: 25 });
  });

  it('a bad intervention spec is refused with its label; the model stays loaded', async () => {
    await expect(api.analyse({ prompt: A.prompt, good: { ids: [[383]] }, bad: { ids: [[432]] }, specs: [{ hook: 'blocks.9.hook_resid_post', type: 'add', vector: Array(64).fill(0), alpha: 1 }], specLabels: ['intervention #3'] }))
      .rejects.toThrow(/^intervention #3: .*blocks\.9\.hook_resid_post/);
    expect(await api.status()).toEqual({ loaded: true, deviceLost: null });
  });

  it('a load that fails before the model is freed (a Hub repo that does not exist) keeps the loaded model: analyse still gives the reference margin', async () => {
    await expect(api.load({ kind: 'hub', repo: 'nobody/no-such-model', endpoint: hub.url }, 'cpu')).rejects.toThrow(/no-such-model/);
    expect(await api.status()).toEqual({ loaded: true, deviceLost: null });
    const a = await api.analyse({ prompt: A.prompt, good: { ids: [[383]] }, bad: { ids: [[432]] } });
    const T = A.n_prompt;
    const lp = logSoftmax(m.arrays(A).get('logits')!.data.subarray((T - 1) * m.V, T * m.V));
    expect(Math.abs(a.finalMargin[T - 1] - (lp[383] - lp[432]))).toBeLessThanOrEqual(F32_TOL);
  });

  it('onDeviceLost accepts a proxied callback (the CPU backend never loses its device: it is never called)', async () => {
    let called = false;
    await api.onDeviceLost(Comlink.proxy(() => { called = true; }));
    await api.analyse({ prompt: A.prompt, good: { ids: [[383]] }, bad: { ids: [[432]] } });
    expect(called).toBe(false);
  });
});

describe('Hub models in Cache Storage', () => {
  it('load from a Hub mirror caches the files; cachedModels lists them; deleteCachedModel removes them', async () => {
    const progress: LoadProgress[] = [];
    const info = await api.load({ kind: 'hub', repo: 'fixtures/llama-tiny', endpoint: hub.url }, 'cpu', Comlink.proxy((p: LoadProgress) => { progress.push(p); }));
    await new Promise((r) => setTimeout(r, 100));
    const size = fs.statSync(path.join(m.dir, '..', '..', 'fixtures', 'llama-tiny', 'model.safetensors')).size;
    const weights = progress.filter((p) => p.stage === 'weights');
    expect(weights.length).toBeGreaterThan(0);
    expect(weights[weights.length - 1]).toMatchObject({ loaded: size, total: size });
    expect(progress[progress.length - 1].stage).toBe('ready');
    expect(info).toMatchObject({ modelType: 'llama', nLayers: 3, nHeads: 4, nKvHeads: 2 });
    const cached = await api.cachedModels();
    expect(cached).toHaveLength(1);
    expect(cached[0]).toMatchObject({ repo: 'fixtures/llama-tiny', revision: 'main', endpoint: hub.url });
    expect(cached[0].files.map((f) => f.path)).toEqual(expect.arrayContaining(['config.json', 'model.safetensors']));
    expect(cached[0].files.find((f) => f.path === 'model.safetensors')!.bytes).toBe(size);
    expect(await api.deleteCachedModel('fixtures/llama-tiny', 'main')).toBeGreaterThan(0);
    expect(await api.cachedModels()).toEqual([]);
  });
});
