import * as fs from 'node:fs';
import { describe, expect, it } from 'vitest';
import { CpuBackend } from '../../workers/engine/backend/cpu';
import { gemmaScopeSite, neuronpediaUrl, parseSaeLensConfig } from '../../workers/engine/sae/config';
import { readSae } from '../../workers/engine/sae/files';
import { Sae } from '../../workers/engine/sae/sae';
import { saeActivationCpu } from '../../workers/engine/ops/sae_act.cpu';
import { readReference } from '../shared';
import { folderWith, SAE_DIRS } from './sae_files';

/** Config layouts (SAELens 5 TopK, 6.x TopK, Gemma Scope paths) and the activation rules by hand. */
describe('SAE configs and activations', () => {
  const flat = JSON.parse(fs.readFileSync(`${SAE_DIRS.relu}/cfg.json`, 'utf8')) as Record<string, unknown>;

  it('a SAELens 5 TopK (architecture standard, activation_fn_str topk, kwargs k) and a 6.x topk with k read alike', () => {
    const v5 = parseSaeLensConfig({ ...flat, activation_fn_str: 'topk', activation_fn_kwargs: { k: 4 } });
    expect(v5).toMatchObject({ architecture: 'topk', k: 4, applyBDecToInput: true, layout: 'sae_lens' });
    const v6 = parseSaeLensConfig({ d_in: 64, d_sae: 256, architecture: 'topk', k: 4, apply_b_dec_to_input: true, normalize_activations: 'none', metadata: { hook_name: 'blocks.2.hook_resid_post' } });
    expect(v6).toMatchObject({ architecture: 'topk', k: 4, hookName: 'blocks.2.hook_resid_post', layout: 'sae_lens_v6' });
  });

  it('Gemma Scope Hub paths give the hook and the Neuronpedia id; SAELens neuronpedia_id gives the link', () => {
    expect(gemmaScopeSite('google/gemma-scope-2b-pt-res/layer_12/width_16k/average_l0_82/params.npz')).toEqual({ hookName: 'blocks.12.hook_resid_post', neuronpediaId: 'gemma-2-2b/12-gemmascope-res-16k' });
    expect(gemmaScopeSite('google/gemma-scope-9b-pt-att/layer_3/width_131k/average_l0_20')?.hookName).toBe('blocks.3.attn.hook_z');
    expect(gemmaScopeSite('someone/my-sae/layer_3')).toBeNull();
    const cfg = parseSaeLensConfig({ ...flat, neuronpedia_id: 'gpt2-small/8-res-jb' });
    expect(neuronpediaUrl(cfg, 1234)).toBe('https://www.neuronpedia.org/gpt2-small/8-res-jb/1234');
    expect(neuronpediaUrl(parseSaeLensConfig(flat), 3)).toBeUndefined();
  });

  it('JumpReLU keeps pre > θ strictly; TopK keeps the k largest positive values (ties with the k-th all kept)', () => {
    expect(Array.from(saeActivationCpu(Float32Array.of(3, -1, 2, 5, 0.5), Float32Array.of(3, 0, 1, 0, 0.4), 0))).toEqual([0, 0, 2, 5, 0.5]);
    expect(Array.from(saeActivationCpu(Float32Array.of(3, -1, 2, 5, 0.5), new Float32Array(5), 2))).toEqual([3, 0, 0, 5, 0]);
    expect(Array.from(saeActivationCpu(Float32Array.of(1, 2, 2, 0), new Float32Array(4), 2))).toEqual([0, 2, 2, 0]);
    expect(Array.from(saeActivationCpu(Float32Array.of(-1, 0.5, -2), new Float32Array(3), 2))).toEqual([0, 0.5, 0]);
  });

  it('the ReLU fixture read as a TopK SAE (k = 4) keeps, per position, the 4 largest of the reference feature_acts', async () => {
    const ref = readReference(`${SAE_DIRS.relu}/reference.safetensors`);
    const w = await readSae(folderWith(SAE_DIRS.relu, { 'cfg.json': JSON.stringify({ ...flat, activation_fn_str: 'topk', activation_fn_kwargs: { k: 4 } }) }));
    const b = new CpuBackend();
    const sae = new Sae(b, w);
    const x = b.upload(ref.get('lily_tom_ball.sae_in')!.data, [21, 64]);
    const f = await b.read(sae.encode(x).acts);
    const want = ref.get('lily_tom_ball.feature_acts')!.data;
    for (let t = 0; t < 21; t++) {
      const row = Array.from(want.subarray(t * 256, (t + 1) * 256));
      const kth = [...row].sort((p, q) => q - p)[3];
      const got = f.subarray(t * 256, (t + 1) * 256);
      row.forEach((v, i) => expect(Math.abs(got[i] - (v >= kth && v > 0 ? v : 0)), `position ${t} feature ${i}`).toBeLessThanOrEqual(1e-5));
    }
  });
});
