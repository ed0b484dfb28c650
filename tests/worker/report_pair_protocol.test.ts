import * as fs from 'node:fs';
import * as path from 'node:path';
import * as Comlink from 'comlink';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { InferenceApi, ModelSource, ReportProgress } from '../../workers/protocol';
import { sharedPath } from '../shared';
import { inProcessWorker } from './in_process';

/**
 * The two-model report and the steering transfer through the worker (the `reportPair` and
 * `steeringTransfer` rows of studies/registry.ts, over Comlink): refused without model B; with
 * stories260K-happy-ft as B, each side of the report is that model's own report (the worker's
 * single-model `report` on a worker whose model A is that model), and the CAA cosine is exactly 1 at
 * blocks 0–2.
 */
const FILES = ['config.json', 'tokenizer.json', 'tokenizer_config.json', 'model.safetensors'];
const filesSource = (name: string): ModelSource => {
  const dir = sharedPath('models', name);
  return { kind: 'files', label: name, files: FILES.map((f) => ({ path: `${name}/${f}`, file: new Blob([fs.readFileSync(path.join(dir, f))]) })) };
};
const REQ = { clean: 'Lucy got a new ball. She was very', corrupt: 'Lucy got a new ball. She saw a', good: { text: ' happy' }, bad: { text: ' sad' } };

let api: Comlink.Remote<InferenceApi>, close: () => void;
beforeAll(async () => {
  ({ api, close } = await inProcessWorker());
  await api.load(filesSource('stories260K'), 'cpu');
}, 120_000);
afterAll(() => close());

describe('reportPair and steeringTransfer in the worker', () => {
  it('refuse without model B; with it, each side is that model\'s report; the CAA vectors agree upstream of block 3', async () => {
    await expect(api.reportPair(REQ)).rejects.toThrow('no model B is loaded');
    await expect(api.steeringTransfer({ prompt: REQ.clean, good: REQ.good, bad: REQ.bad, positive: ['a happy day'], negative: ['a sad day'] })).rejects.toThrow('no model B is loaded');
    await api.loadModelB(filesSource('stories260K-happy-ft'), 'cpu');
    const stages: string[] = [];
    const pair = await api.reportPair(REQ, Comlink.proxy((p: ReportProgress) => { stages.push(p.stage); }));
    const onA = await api.report(REQ);
    expect(pair.a.prompts).toEqual(onA.prompts);
    expect(pair.a.visible).toEqual(onA.visible);
    expect(stages[0]).toMatch(/^A: /);
    expect(stages.at(-1)).toMatch(/^B: /);
    expect(pair.difference.visibleLayer.value).toBe(pair.b.visible.layer! - pair.a.visible.layer!);
    const t = await api.steeringTransfer({ prompt: REQ.clean, good: REQ.good, bad: REQ.bad, positive: ['Lily was very happy.', 'Tom felt so happy.'], negative: ['Lily was very sad.', 'Tom felt so sad.'] });
    expect(Array.from(t.cosine.subarray(0, 3))).toEqual([1, 1, 1]);
    expect(t.cosine[3]).toBeLessThan(1);
    // B's side: the same report with B as the worker's model A
    await api.unloadModelB();
    await api.load(filesSource('stories260K-happy-ft'), 'cpu');
    const onB = await api.report(REQ);
    expect(pair.b.prompts).toEqual(onB.prompts);
    expect(pair.b.causal).toEqual(onB.causal);
  }, 180_000);
});
