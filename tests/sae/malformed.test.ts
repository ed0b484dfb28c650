import * as fs from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CpuBackend } from '../../workers/engine/backend/cpu';
import { Engine } from '../../workers/engine/engine';
import { MemoryFiles } from '../../workers/engine/io/model_files';
import { NodeFiles } from '../../workers/engine/io/node_files';
import { readSae } from '../../workers/engine/sae/files';
import { Sae } from '../../workers/engine/sae/sae';
import { encodeSafetensors } from '../../tools/safetensors_write';
import { readReference, sharedPath } from '../shared';
import { folderWith, npzFromSafetensors, SAE_DIRS } from './sae_files';

/**
 * Malformed SAE files give a clear message naming the file, the tensor or key, and what was
 * expected: wrong shapes, missing tensors, unknown architecture, a d_in or hook the model does not
 * have, broken cfg.json / safetensors / npz.
 */
const DIR = SAE_DIRS.jumprelu;
const cfg = JSON.parse(fs.readFileSync(`${DIR}/cfg.json`, 'utf8')) as Record<string, unknown>;
const tensors = readReference(`${DIR}/sae_weights.safetensors`);

/** sae_weights.safetensors with some tensors replaced (null = left out). */
function weightsWith(changes: Record<string, { data: Float32Array; shape: number[] } | null>): Uint8Array {
  const list = [...tensors].flatMap(([name, t]) => {
    const c = name in changes ? changes[name] : t;
    return c ? [{ name, shape: c.shape, data: c.data, dtype: 'F32' as const }] : [];
  });
  return encodeSafetensors(list, {});
}
const cfgWith = (patch: Record<string, unknown>) => JSON.stringify({ ...cfg, ...patch });

let e: Engine;
beforeAll(async () => { e = await Engine.load(new NodeFiles(sharedPath('models', 'stories260K')), new CpuBackend()); });
afterAll(() => e.dispose());

describe('malformed SAE files', () => {
  const cases: [string, Record<string, Uint8Array | string | null>, string][] = [
    ['W_enc of the wrong shape', { 'sae_weights.safetensors': weightsWith({ W_enc: { data: new Float32Array(64 * 255), shape: [64, 255] } }) }, '"W_enc" has shape [64, 255], expected [64, 256] (d_in = 64, d_sae = 256)'],
    ['W_dec transposed', { 'sae_weights.safetensors': weightsWith({ W_dec: { data: tensors.get('W_dec')!.data, shape: [64, 256] } }) }, '"W_dec" has shape [64, 256], expected [256, 64]'],
    ['a JumpReLU without threshold', { 'sae_weights.safetensors': weightsWith({ threshold: null }) }, 'has no tensor "threshold" (it holds W_dec, W_enc, b_dec, b_enc); a jumprelu SAE needs W_enc, W_dec, b_enc, b_dec, threshold'],
    ['NaN in b_enc', { 'sae_weights.safetensors': weightsWith({ b_enc: { data: Float32Array.from({ length: 256 }, (_, i) => (i === 7 ? NaN : 0)), shape: [256] } }) }, '"b_enc"[7] is NaN; SAE weights must be finite'],
    ['an unknown architecture', { 'cfg.json': cfgWith({ architecture: 'gated' }) }, 'architecture "gated" is not supported (supported: standard, jumprelu, topk)'],
    ['a topk SAE without k', { 'cfg.json': cfgWith({ architecture: 'topk' }) }, 'a topk SAE needs a positive integer k'],
    ['normalize_activations other than none', { 'cfg.json': cfgWith({ normalize_activations: 'layer_norm' }) }, 'normalize_activations "layer_norm" is not supported'],
    ['cfg.json without hook_name', { 'cfg.json': cfgWith({ hook_name: undefined }) }, '"hook_name" is missing'],
    ['cfg.json that is not JSON', { 'cfg.json': '{"d_in": 64,' }, 'cfg.json is not valid JSON'],
    ['a truncated safetensors file', { 'sae_weights.safetensors': fs.readFileSync(`${DIR}/sae_weights.safetensors`).subarray(0, 5000) }, 'truncated'],
    ['neither layout', { 'sae_weights.safetensors': null, 'params.npz': null }, 'no SAE found — expected cfg.json + sae_weights.safetensors (SAELens) or params.npz (Gemma Scope)'],
    ['a params.npz that is not a zip', { 'sae_weights.safetensors': null, 'params.npz': 'not a zip' }, 'params.npz: not a valid .npz (zip) file'],
    ['a params.npz without W_dec', { 'sae_weights.safetensors': null, 'params.npz': npzFromSafetensors(`${DIR}/sae_weights.safetensors`, { W_dec: 'decoder' }) }, 'has no tensor "W_dec" (it holds decoder, W_enc, b_dec, b_enc, threshold)'],
  ];
  for (const [what, changes, message] of cases) {
    it(`${what}: "${message.slice(0, 60)}…"`, async () => {
      await expect(readSae(folderWith(DIR, changes))).rejects.toThrow(message);
    });
  }

  it('a Gemma Scope npz alone, with no cfg.json and no Gemma Scope path, asks for the hook', async () => {
    const files = new MemoryFiles('bare', new Map([['params.npz', fs.readFileSync(`${DIR}/params.npz`)]]));
    await expect(readSae(files, 'params.npz')).rejects.toThrow('has no config naming its hook (Gemma Scope ships none); give the hook, e.g. blocks.12.hook_resid_post');
  });

  it('an SAE whose d_in or hook the model does not have is refused when attached', async () => {
    const wide = await readSae(folderWith(DIR, { 'cfg.json': cfgWith({ d_in: 128 }), 'sae_weights.safetensors': weightsWith({ W_enc: { data: new Float32Array(128 * 256), shape: [128, 256] }, W_dec: { data: new Float32Array(256 * 128), shape: [256, 128] }, b_dec: { data: new Float32Array(128), shape: [128] } }) }));
    expect(() => new Sae(e.backend, wide, e.spec)).toThrow('has d_in = 128, but blocks.2.hook_resid_post is [pos, d_model] = 64 wide in this model');
    const deep = await readSae(folderWith(DIR, { 'cfg.json': cfgWith({ hook_name: 'blocks.9.hook_resid_post' }) }));
    expect(() => new Sae(e.backend, deep, e.spec)).toThrow('reads blocks.9.hook_resid_post, which this model cannot give it: hook "blocks.9.hook_resid_post": layer 9 does not exist (the model has layers 0..4)');
    const mlp = await readSae(folderWith(DIR, { 'cfg.json': cfgWith({ hook_name: 'blocks.1.mlp.hook_post' }) }));
    expect(() => new Sae(e.backend, mlp, e.spec)).toThrow('has d_in = 64, but blocks.1.mlp.hook_post is [pos, d_mlp] = 172 wide');
  });
});
