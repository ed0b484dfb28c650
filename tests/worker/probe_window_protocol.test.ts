import * as fs from 'node:fs';
import * as path from 'node:path';
import * as Comlink from 'comlink';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { InferenceApi, Progress } from '../../workers/protocol';
import { realModel } from '../reference_math';
import { inProcessWorker, type Posted } from './in_process';

/** The worker's probe, interventionWindow and patching methods through Comlink: progress, transferables, specs, cancel. */
const m = realModel('stories260K');
let api: Comlink.Remote<InferenceApi>;
let posted: Posted[];
let close: () => void;
beforeAll(async () => {
  ({ api, posted, close } = await inProcessWorker());
  const files = ['config.json', 'tokenizer.json', 'tokenizer_config.json', 'model.safetensors'];
  await api.load({ kind: 'files', label: 'stories260K', files: files.map((f) => ({ path: `stories260K/${f}`, file: new Blob([fs.readFileSync(path.join(m.dir, f))]) })) }, 'cpu');
}, 120_000);
afterAll(() => close());

const pos = ['Tom ran home. Then', 'Ben sat down. Then', 'Max saw a cat. Then'];
const neg = ['Lily ran home. Then', 'Sue sat down. Then', 'Mia saw a cat. Then'];
const spec = { hook: 'blocks.3.hook_resid_post', type: 'add' as const, vector: Array.from({ length: 64 }, (_, i) => Math.sin(i)), alpha: 4 };

describe('probe and interventionWindow across the worker boundary', () => {
  it('probe reports progress per prompt and layer; the directions (and held-out scores) come back transferred', async () => {
    const seen: Progress[] = [];
    const r = await api.probe({ positive: pos, negative: neg, folds: 3 }, Comlink.proxy((p: Progress) => { seen.push(p); }));
    expect(r.accuracy).toHaveLength(6);
    expect(r.directions[0]).toBeInstanceOf(Float32Array);
    expect(r.directions[0]).toHaveLength(64);
    await expect.poll(() => seen.length).toBe(12);
    expect(seen.at(-1)).toEqual({ done: 12, total: 12 });
    const transfer = posted[posted.length - 1].transfer as ArrayBuffer[];
    expect(transfer.length).toBe(r.directions.length + r.heldOut.length); // the 6 directions, and the 6 held-out score arrays with them
    expect(transfer.every((b) => b.byteLength === 0)).toBe(true); // detached in the worker
  });

  it('interventionWindow resolves the specs (labelled errors) and is cancelled by cancel()', async () => {
    const req = { prompt: 'The little girl felt very', good: { text: ' happy' }, bad: { text: ' sad' }, maxNewTokens: 6 };
    const r = await api.interventionWindow({ ...req, specs: [spec] });
    expect(r.ks).toEqual([0, 1, 2, 3, 4, 5]);
    expect(r.variants[5].ids.slice(0, 5)).toEqual(r.unsteered.ids.slice(0, 5));
    await expect(api.interventionWindow({ ...req })).rejects.toThrow(/needs an intervention/);
    await expect(api.interventionWindow({ ...req, specs: [{ ...spec, hook: 'blocks.9.hook_resid_post' }], specLabels: ['intervention #2'] })).rejects.toThrow(/^intervention #2: .*blocks\.9/);
    const job = api.interventionWindow({ ...req, specs: [spec] }, Comlink.proxy((p: Progress) => { if (p.done === 3) void api.cancel(); }));
    await expect(job).rejects.toMatchObject({ name: 'CancelledError', message: 'cancelled: the intervention window was stopped before it finished' });
    expect(await api.status()).toEqual({ loaded: true, deviceLost: null });
  });

  it('patching: the grid comes back with its three typed arrays transferred; cancel() rejects it with a CancelledError naming the grid', async () => {
    const req = { clean: m.ref.prompts[1].prompt, corrupt: 'Tom and Lily went to the park. Lily gave the ball to', good: { text: ' Tom' }, bad: { text: ' Lily' }, hook: 'resid_pre' as const };
    const r = await api.patching(req);
    expect(r.recovery).toBeInstanceOf(Float32Array);
    const transfer = posted[posted.length - 1].transfer as ArrayBuffer[];
    expect(transfer).toHaveLength(3);
    expect(transfer.every((b) => b.byteLength === 0)).toBe(true);
    const job = api.patching(req, Comlink.proxy((p: Progress) => { if (p.done === 2) void api.cancel(); }));
    await expect(job).rejects.toMatchObject({ name: 'CancelledError', message: 'cancelled: the patching grid was stopped before it finished' });
    expect(await api.status()).toEqual({ loaded: true, deviceLost: null });
  });
});
