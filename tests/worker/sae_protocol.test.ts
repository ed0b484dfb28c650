import * as fs from 'node:fs';
import * as path from 'node:path';
import * as Comlink from 'comlink';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { InferenceApi, ModelSource, SaeSource } from '../../workers/protocol';
import { sharedPath } from '../shared';
import { SAE_DIRS } from '../sae/sae_files';
import { inProcessWorker } from './in_process';

/**
 * The SAE methods of the worker protocol through Comlink: load from picked files, analyse, open a
 * feature, SAE specs in analyse, refusal of an SAE that does not fit (the worker stays usable), and
 * SAEs unloaded with the model.
 */
const MODEL = sharedPath('models', 'stories260K');
const files = (dir: string, names: string[], replace: Record<string, string> = {}) => names.map((f) => ({ path: `${path.basename(dir)}/${f}`, file: new Blob([replace[f] ?? fs.readFileSync(path.join(dir, f))]) }));
const model: ModelSource = { kind: 'files', label: 'stories260K', files: files(MODEL, ['config.json', 'tokenizer.json', 'tokenizer_config.json', 'model.safetensors']) };
const relu: SaeSource = { kind: 'files', label: 'relu SAE', files: files(SAE_DIRS.relu, ['cfg.json', 'sae_weights.safetensors']) };
const PROMPT = 'Lily and Tom went to the park. Lily gave the ball to';

let api: Comlink.Remote<InferenceApi>;
let close: () => void;
beforeAll(async () => {
  ({ api, close } = await inProcessWorker());
  await api.load(model, 'cpu');
}, 120_000);
afterAll(() => close?.());

describe('SAE methods of the worker', () => {
  it('loads picked SAELens files, reads the reference L0, opens a feature and steers by its id', async () => {
    const info = await api.loadSae(relu);
    expect(info.cfg).toMatchObject({ architecture: 'standard', hookName: 'blocks.2.hook_resid_post', dIn: 64, dSae: 256 });
    const ref = JSON.parse(fs.readFileSync(path.join(SAE_DIRS.relu, 'reference.json'), 'utf8')).prompts.find((p: { key: string }) => p.key === 'lily_tom_ball');
    const a = await api.analyseSae(info.id, { prompt: PROMPT, topK: 4, pinned: [54], good: { text: ' Tom' }, bad: { text: ' Lily' } });
    expect(Array.from(a.l0)).toEqual(ref.positions.map((p: { l0: number }) => p.l0));
    expect(a.margin!.attributions.length).toBeGreaterThan(0);
    const v = new Float32Array(64).fill(1);
    const f = await api.saeFeature(info.id, 54, [{ name: 'ones', vector: v }]);
    expect(f.lensTokens).toHaveLength(10);
    expect(f.cosines[0].name).toBe('ones');
    const steered = await api.analyse({ prompt: PROMPT, good: { text: ' Tom' }, bad: { text: ' Lily' }, specs: [{ hook: 'blocks.2.hook_resid_post', type: 'sae_clamp', sae: info.id, feature: a.margin!.attributions[0].feature, value: 0 }] });
    const plain = await api.analyse({ prompt: PROMPT, good: { text: ' Tom' }, bad: { text: ' Lily' } });
    const T = plain.ids.length;
    expect(steered.finalMargin[T - 1] - plain.finalMargin[T - 1]).toBeCloseTo(a.margin!.attributions[0].ablationDelta!, 4);
  });

  it('an SAE whose d_in does not fit is refused with the reason and the worker stays usable; a new model unloads SAEs', async () => {
    const cfg = JSON.parse(fs.readFileSync(path.join(SAE_DIRS.relu, 'cfg.json'), 'utf8'));
    const bad: SaeSource = { kind: 'files', label: 'wrong hook', files: files(SAE_DIRS.relu, ['cfg.json', 'sae_weights.safetensors'], { 'cfg.json': JSON.stringify({ ...cfg, hook_name: 'blocks.1.mlp.hook_post' }) }) };
    await expect(api.loadSae(bad)).rejects.toThrow('has d_in = 64, but blocks.1.mlp.hook_post is [pos, d_mlp] = 172 wide');
    const ok = await api.loadSae(relu);
    expect((await api.analyseSae(ok.id, { prompt: 'Once upon a time' })).ids).toEqual([1, 403, 407, 261, 378]);
    await api.load(model, 'cpu');
    await expect(api.analyseSae(ok.id, { prompt: 'Once upon a time' })).rejects.toThrow(`SAE "${ok.id}" is not loaded`);
  });
});
