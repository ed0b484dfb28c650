import * as fs from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CpuBackend } from '../../workers/engine/backend/cpu';
import { Engine } from '../../workers/engine/engine';
import { NodeFiles } from '../../workers/engine/io/node_files';
import { MemoryFiles } from '../../workers/engine/io/model_files';
import { readSae } from '../../workers/engine/sae/files';
import { Sae } from '../../workers/engine/sae/sae';
import { maxAbsDiff, readReference, sharedPath } from '../shared';
import { folderWith, npzFromSafetensors, SAE_DIRS } from './sae_files';

/**
 * Both SAEs of ../shared/saes against their golden arrays (README there: float64 from the float32
 * weights; a float32 forward should agree to about 1e-4), on the CPU backend: the SAE attached at
 * blocks.2.hook_resid_post of stories260K, its hook_sae_acts_post and hook_sae_recons.
 */
const TOL = 1e-4;
const HOOK = 'blocks.2.hook_resid_post';

interface RefPrompt { key: string; prompt: string; input_ids: number[]; positions: { l0: number; mse: number; top16_indices: number[] }[] }

let e: Engine;
beforeAll(async () => {
  e = await Engine.load(new NodeFiles(sharedPath('models', 'stories260K')), new CpuBackend());
});
afterAll(() => e.dispose());

const rows = (flat: Float32Array, w: number) => Array.from({ length: flat.length / w }, (_, t) => flat.subarray(t * w, (t + 1) * w));

describe.each(['relu', 'jumprelu'] as const)('%s SAE', (kind) => {
  const dir = SAE_DIRS[kind];
  const ref = JSON.parse(fs.readFileSync(`${dir}/reference.json`, 'utf8')) as { prompts: RefPrompt[] };
  const arrays = readReference(`${dir}/reference.safetensors`);

  it('SAELens folder: cfg.json (flat 5.x layout) gives the architecture, widths, hook and b_dec convention of the README', async () => {
    const w = await readSae(new NodeFiles(dir));
    expect(w.cfg).toMatchObject({ architecture: kind === 'relu' ? 'standard' : 'jumprelu', dIn: 64, dSae: 256, hookName: HOOK, applyBDecToInput: kind === 'relu', layout: 'sae_lens' });
    expect(w.threshold !== undefined).toBe(kind === 'jumprelu');
  });

  it('the SAELens 6.x cfg layout (fields under "metadata") reads as the same configuration', async () => {
    const v6 = fs.readFileSync(`${dir}/cfg.sae_lens_v6.json`, 'utf8');
    const flat = await readSae(new NodeFiles(dir));
    const nested = await readSae(folderWith(dir, { 'cfg.json': v6 }));
    expect({ ...nested.cfg, layout: 'x' }).toEqual({ ...flat.cfg, layout: 'x' });
    expect(nested.cfg.layout).toBe('sae_lens_v6');
  });

  for (const p of ref.prompts) {
    it(`${p.key}: hook_sae_acts_post and hook_sae_recons at ${HOOK} match feature_acts and sae_out within 1e-4, with the reference L0 at every position`, async () => {
      const sae = new Sae(e.backend, await readSae(new NodeFiles(dir)), e.spec);
      const ids = e.encodePrompt({ prompt: p.prompt });
      expect(ids).toEqual(p.input_ids);
      const { captured } = await e.run(ids, { capture: [HOOK, `${HOOK}.hook_sae_acts_post`, `${HOOK}.hook_sae_recons`, `${HOOK}.hook_sae_acts_pre`], saes: [{ sae }] });
      sae.release();
      const acts = captured.get(`${HOOK}.hook_sae_acts_post`)!;
      expect(maxAbsDiff(captured.get(HOOK)!, arrays.get(`${p.key}.sae_in`)!.data)).toBeLessThanOrEqual(TOL);
      expect(maxAbsDiff(captured.get(`${HOOK}.hook_sae_acts_pre`)!, arrays.get(`${p.key}.hidden_pre`)!.data)).toBeLessThanOrEqual(TOL);
      expect(maxAbsDiff(acts, arrays.get(`${p.key}.feature_acts`)!.data)).toBeLessThanOrEqual(TOL);
      expect(maxAbsDiff(captured.get(`${HOOK}.hook_sae_recons`)!, arrays.get(`${p.key}.sae_out`)!.data)).toBeLessThanOrEqual(TOL);
      expect(rows(acts, 256).map((r) => r.filter((v) => v > 0).length)).toEqual(p.positions.map((q) => q.l0));
    });
  }

  it('encoding the reference sae_in directly reproduces feature_acts and sae_out to 1e-5 (the formulas, without the forward pass)', async () => {
    const b = e.backend;
    const sae = new Sae(b, await readSae(new NodeFiles(dir)));
    for (const p of ref.prompts) {
      const x = b.upload(arrays.get(`${p.key}.sae_in`)!.data, [p.input_ids.length, 64]);
      const { pre, acts } = sae.encode(x);
      const recons = sae.decode(acts);
      expect(maxAbsDiff(await b.read(acts), arrays.get(`${p.key}.feature_acts`)!.data)).toBeLessThanOrEqual(1e-5);
      expect(maxAbsDiff(await b.read(recons), arrays.get(`${p.key}.sae_out`)!.data)).toBeLessThanOrEqual(1e-5);
      for (const t of [x, pre, acts, recons]) b.release(t);
    }
    sae.release();
  });
});

describe('Gemma Scope params.npz', () => {
  const dir = SAE_DIRS.jumprelu;
  const arrays = readReference(`${dir}/reference.safetensors`);
  const key = 'lily_tom_ball';

  async function actsOf(files: MemoryFiles | NodeFiles, path = '', hook?: string): Promise<Float32Array> {
    const b = e.backend;
    const sae = new Sae(b, await readSae(files, path, { hook }), e.spec);
    const x = b.upload(arrays.get(`${key}.sae_in`)!.data, [21, 64]);
    const { pre, acts } = sae.encode(x);
    const out = await b.read(acts);
    for (const t of [x, pre, acts]) b.release(t);
    sae.release();
    return out;
  }

  it('an npz built now (fflate) from the SAELens folder\'s tensors gives activations identical to the folder', async () => {
    const npz = npzFromSafetensors(`${dir}/sae_weights.safetensors`);
    const files = new MemoryFiles('built npz', new Map([['params.npz', npz]]));
    const w = await readSae(files, 'params.npz', { hook: HOOK });
    expect(w.cfg).toMatchObject({ architecture: 'jumprelu', applyBDecToInput: false, dIn: 64, dSae: 256, hookName: HOOK, layout: 'gemma_scope' });
    const fromNpz = await actsOf(files, 'params.npz', HOOK);
    const fromFolder = await actsOf(new NodeFiles(dir));
    expect(maxAbsDiff(fromNpz, fromFolder)).toBe(0);
    expect(maxAbsDiff(fromNpz, arrays.get(`${key}.feature_acts`)!.data)).toBeLessThanOrEqual(1e-5);
  });

  it('the shared params.npz reads its hook from the cfg.json beside it and gives the same activations', async () => {
    const onlyNpz = folderWith(dir, { 'sae_weights.safetensors': null });
    const w = await readSae(onlyNpz);
    expect(w.cfg.layout).toBe('gemma_scope');
    expect(w.cfg.hookName).toBe(HOOK);
    expect(maxAbsDiff(await actsOf(onlyNpz), await actsOf(new NodeFiles(dir)))).toBe(0);
  });
});
