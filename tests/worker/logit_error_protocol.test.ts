import * as fs from 'node:fs';
import * as path from 'node:path';
import * as Comlink from 'comlink';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { InferenceApi, ModelSource } from '../../workers/protocol';
import { sharedPath } from '../shared';
import { inProcessWorker } from './in_process';

/**
 * A quantised load in the worker does not run the float32 model (its logit error is measured on
 * demand, measureLogitError), and the error measured then is the Q8_0 one: quantised for real
 * (float32 agrees within 1e-4) and within the ≤ 0.25 that Q8_0 gives stories260K against its
 * float32 references (tests/integration/quant_weights.test.ts); asked again, it is not recomputed.
 */
const MODEL = sharedPath('models', 'stories260K');
const model: ModelSource = { kind: 'files', label: 'stories260K', files: ['config.json', 'tokenizer.json', 'tokenizer_config.json', 'model.safetensors'].map((f) => ({ path: `stories260K/${f}`, file: new Blob([fs.readFileSync(path.join(MODEL, f))]) })) };

let api: Comlink.Remote<InferenceApi>;
let close: () => void;
beforeAll(async () => { ({ api, close } = await inProcessWorker()); }, 120_000);
afterAll(() => close?.());

describe('the logit error of quantised weights, on demand', () => {
  it('a Q8_0 load reports no error yet; measureLogitError measures it once and keeps it', async () => {
    const info = await api.load(model, 'cpu', undefined, { weightDtype: 'q8_0' });
    expect(info.weights).toMatchObject({ dtype: 'q8_0' });
    expect(info.weights!.logitError).toBeUndefined();
    expect(info.weights!.unmeasured).toBeUndefined();
    const e = await api.measureLogitError();
    expect(e.ids.length).toBeGreaterThan(5);
    expect(e.maxAbs).toBeGreaterThan(1e-3);
    expect(e.maxAbs).toBeLessThan(0.25);
    expect(e.lastMaxAbs).toBeLessThanOrEqual(e.maxAbs);
    expect(await api.measureLogitError()).toEqual(e);
  });

  it('float32 weights have nothing to measure: the call says so and the worker stays usable', async () => {
    await api.load(model, 'cpu');
    await expect(api.measureLogitError()).rejects.toThrow('there is no quantisation error to measure');
    expect((await api.tokenize({ prompt: 'Once' })).ids.length).toBeGreaterThan(0);
  });
});
