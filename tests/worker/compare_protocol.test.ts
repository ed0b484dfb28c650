import * as fs from 'node:fs';
import * as path from 'node:path';
import * as Comlink from 'comlink';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { InferenceApi, ModelSource, Progress } from '../../workers/protocol';
import { sharedPath } from '../shared';
import { inProcessWorker, type Posted } from './in_process';

/**
 * Model B in the worker (workers/inference.worker.ts loadModelB / unloadModelB / the `compare`
 * study) through Comlink over a MessageChannel: stories260K as A, its block-3-MLP fine-tune as B,
 * the comparison's result crossing the boundary as plain data with its typed arrays transferred,
 * the pair's memory check, a mismatched B (aidreams260K) and unloading.
 */
const FILES = ['config.json', 'tokenizer.json', 'tokenizer_config.json', 'model.safetensors'];
const filesSource = (name: string): ModelSource => {
  const dir = sharedPath('models', name);
  return { kind: 'files', label: name, files: FILES.map((f) => ({ path: `${name}/${f}`, file: new Blob([fs.readFileSync(path.join(dir, f))]) })) };
};
const REQ = { prompt: 'Lucy got a new ball. She was very', good: { text: ' happy' }, bad: { text: ' sad' }, hooks: ['resid_pre', 'mlp_out'] as ('resid_pre' | 'mlp_out')[] };

let api: Comlink.Remote<InferenceApi>;
let posted: Posted[];
let close: () => void;
beforeAll(async () => {
  ({ api, posted, close } = await inProcessWorker());
  await api.load(filesSource('stories260K'), 'cpu');
}, 120_000);
afterAll(() => close());

describe('model B beside model A', () => {
  it('compare before model B is loaded says to load one', async () => {
    expect(await api.modelBInfo()).toBeNull();
    await expect(api.compare(REQ)).rejects.toThrow('no model B is loaded');
  });

  it('a B that does not fit beside A is refused with both models\' needs; none is loaded', async () => {
    // stories260K needs 12.5 MiB on the CPU backend (activations for 512 tokens): a 20 MiB budget holds one, not two
    const err = await api.loadModelB(filesSource('stories260K-happy-ft'), 'cpu', undefined, { memoryBudgetBytes: 20 * 2 ** 20 }).catch((e: Error) => e);
    expect(err).toBeInstanceOf(Error);
    expect((err as Error).name).toBe('ModelTooLargeError');
    expect((err as Error).message).toMatch(/models A and B together do not fit: model A stories260K .* \+ model B stories260K-happy-ft .* = .*allows 20 MiB/);
    expect(await api.modelBInfo()).toBeNull();
  });

  it('loads B, compares on the fine-tune\'s known answer, result as plain data with transferables', async () => {
    const info = await api.loadModelB(filesSource('stories260K-happy-ft'), 'cpu');
    expect(info.label).toBe('stories260K-happy-ft');
    expect((await api.modelBInfo())?.label).toBe('stories260K-happy-ft');
    const progress: Progress[] = [];
    const r = await api.compare(REQ, Comlink.proxy((p: Progress) => { progress.push(p); }));
    expect(r.mismatch).toBeNull();
    expect(r.labelA).toBe('stories260K');
    expect(r.labelB).toBe('stories260K-happy-ft');
    const w = r.weights!;
    for (const m of w.modules) {
      for (let l = 0; l < w.nLayers; l++) {
        const changed = l === 3 && ['gate', 'up', 'down'].includes(m.name);
        if (changed) expect(m.values[l]).toBeGreaterThan(0); else expect(m.values[l]).toBe(0);
      }
    }
    for (const g of w.globals) expect(g.value).toBe(0);
    const mlp = r.crossPatch.find((x) => x.hook === 'mlp_out')!;
    expect(mlp.layerRecovery[3]).toBeCloseTo(1, 5);
    for (let l = 0; l < 3; l++) expect(Math.abs(mlp.layerRecovery[l])).toBeLessThan(1e-6);
    expect(r.crossPatchReverse.map((x) => x.hook)).toEqual(['resid_pre', 'mlp_out']);
    expect(r.sides.aligned).not.toBeNull();
    expect(posted[posted.length - 1].transfer.length).toBeGreaterThan(0);
    await new Promise((res) => setTimeout(res, 100));
    expect(progress.length).toBeGreaterThan(0);
    const last = progress[progress.length - 1];
    expect(last.done).toBe(last.total);
  }, 120_000);

  it('a model A that does not fit beside the loaded B is refused, naming B; A and B stay', async () => {
    const err = await api.load(filesSource('stories260K'), 'cpu', undefined, { memoryBudgetBytes: 20 * 2 ** 20 }).catch((e: Error) => e);
    expect((err as Error).name).toBe('ModelTooLargeError');
    expect((err as Error).message).toMatch(/models A and B together do not fit: .*Unload model B \(stories260K-happy-ft\) first/);
    expect(await api.status()).toEqual({ loaded: true, deviceLost: null });
    expect((await api.modelBInfo())?.label).toBe('stories260K-happy-ft');
  }, 60_000);

  it('loading model A again keeps B; unloading B leaves A', async () => {
    await api.load(filesSource('stories260K'), 'cpu');
    expect((await api.modelBInfo())?.label).toBe('stories260K-happy-ft');
    await api.unloadModelB();
    expect(await api.modelBInfo()).toBeNull();
    expect(await api.status()).toEqual({ loaded: true, deviceLost: null });
    await expect(api.compare(REQ)).rejects.toThrow('no model B is loaded');
  }, 60_000);

  it('a B with another tokenizer gives each model\'s lens, labelled, and what differs', async () => {
    await api.loadModelB(filesSource('aidreams260K'), 'cpu');
    const r = await api.compare(REQ);
    expect(r.mismatch).not.toBeNull();
    expect(r.mismatch!.differences.length).toBeGreaterThan(0);
    expect(r.weights).toBeNull();
    expect(r.crossPatch).toEqual([]);
    expect(r.sides.labelB).toBe('aidreams260K');
    expect(r.sides.a.lensMargin.length).toBe((r.sides.a.nLayers + 1) * r.sides.a.ids.length);
    expect(r.sides.b.lensMargin.length).toBe((r.sides.b.nLayers + 1) * r.sides.b.ids.length);
    await api.unloadModelB();
  }, 60_000);
});
