import * as fs from 'node:fs';
import { describe, expect, it } from 'vitest';
import { hfToGguf } from '../../tools/gguf_write';
import { CpuBackend } from '../../workers/engine/backend/cpu';
import { ropeRowOrder } from '../../workers/engine/io/gguf';
import { MemoryFiles } from '../../workers/engine/io/model_files';
import { loadTransformer, type WeightDtype } from '../../workers/engine/model/load';
import { runCaptured } from '../model_run';
import { maxDiff, realModel } from '../reference_math';
import { readReference, sharedPath } from '../shared';

/** A model folder's files in memory, with model.gguf in place of config.json + model.safetensors. */
function ggufFolder(dir: string, gguf: Uint8Array): MemoryFiles {
  const files = new Map<string, Uint8Array>();
  for (const f of ['tokenizer.json', 'tokenizer_config.json']) files.set(f, new Uint8Array(fs.readFileSync(`${dir}/${f}`)));
  files.set('model.gguf', gguf);
  return new MemoryFiles('gguf', files);
}

const safetensorsFolder = (dir: string) => {
  const files = new Map<string, Uint8Array>();
  for (const f of ['config.json', 'model.safetensors', 'tokenizer.json']) files.set(f, new Uint8Array(fs.readFileSync(`${dir}/${f}`)));
  return new MemoryFiles('safetensors', files);
};

async function logits(files: MemoryFiles, ids: number[], weightDtype: WeightDtype = 'f32'): Promise<Float32Array> {
  const b = new CpuBackend();
  const { model } = await loadTransformer(files, b, undefined, { weightDtype });
  const { logits: z } = await runCaptured(b, model, ids, []);
  model.dispose();
  return z;
}

describe('llama.cpp Q/K row order', () => {
  it('one head of width 4: HF rows r0 r1 r2 r3 are stored r0 r2 r1 r3 (reshape(1, 2, 2).swapaxes(1, 2))', () => {
    // perm[i] = the GGUF row holding HF row i
    expect(ropeRowOrder(1, 4)).toEqual([0, 2, 1, 3]);
  });
  it('two heads of width 6: each head interleaves its halves (h·6 + 2j + t)', () => {
    expect(ropeRowOrder(2, 6)).toEqual([0, 2, 4, 1, 3, 5, 6, 8, 10, 7, 9, 11]);
  });
});

describe('GGUF import (tools/gguf_write.ts files, config from the metadata)', () => {
  const dir = sharedPath('fixtures', 'llama-tiny');
  const meta = JSON.parse(fs.readFileSync(`${dir}/reference/meta.json`, 'utf8')) as { sequences: { name: string; input_ids: number[] }[] };
  const seq = meta.sequences[0];

  it.each(['q8_0', 'q4_0'] as const)('llama-tiny (GQA 4/2) as %s: the same logits as its safetensors quantised on load', async (format) => {
    const fromGguf = await logits(ggufFolder(dir, hfToGguf(dir, format)), seq.input_ids);
    const onLoad = await logits(safetensorsFolder(dir), seq.input_ids, format);
    // the same blocks through the same kernel: equal up to summation order (none differs here)
    expect(maxDiff(fromGguf, onLoad)).toBeLessThan(1e-5);
    // and far from float32 (a GGUF loaded as float would sit within 1e-4 of the reference)
    const ref = readReference(`${dir}/reference/${seq.name}.safetensors`).get('logits')!.data;
    expect(maxDiff(fromGguf, ref)).toBeGreaterThan(1e-3);
  });

  it('llama-tiny as F16 (embedding too): the same logits as its safetensors loaded with binary16 matrices', async () => {
    const fromGguf = await logits(ggufFolder(dir, hfToGguf(dir, 'f16', 'f16')), seq.input_ids);
    const half = await logits(safetensorsFolder(dir), seq.input_ids, 'f16');
    expect(maxDiff(fromGguf, half)).toBeLessThan(1e-5);
  });

  it('llama-tiny as F32: the float32 reference logits within 1e-4 (names, permutation and config all right)', async () => {
    const z = await logits(ggufFolder(dir, hfToGguf(dir, 'f32')), seq.input_ids);
    expect(maxDiff(z, readReference(`${dir}/reference/${seq.name}.safetensors`).get('logits')!.data)).toBeLessThan(1e-4);
  });

  it('stories260K (GQA 8/4, d_head 8, tied) as F32 matches its reference; as Q8_0 stays within the Q8_0 error', async () => {
    const m = realModel('stories260K');
    const p = m.ref.prompts[0];
    const ids = p.sequence_ids.slice(0, p.n_positions);
    const ref = m.arrays(p).get('logits')!.data;
    expect(maxDiff(await logits(ggufFolder(m.dir, hfToGguf(m.dir, 'f32')), ids), ref)).toBeLessThan(1e-4);
    // down_proj (rows of 172) stays F32 in the file; quant_weights.test.ts measures ≤ 0.25 with every linear weight quantised
    const q8 = maxDiff(await logits(ggufFolder(m.dir, hfToGguf(m.dir, 'q8_0')), ids), ref);
    expect(q8).toBeGreaterThan(1e-3);
    expect(q8).toBeLessThan(0.5);
  });
});
