import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CpuBackend } from '../../workers/engine/backend/cpu';
import { openCheckpoint } from '../../workers/engine/io/checkpoint';
import { NodeFiles } from '../../workers/engine/io/node_files';
import { decodeTensor, parseSafetensors, type SafetensorsDtype } from '../../workers/engine/io/safetensors';
import { loadTransformer } from '../../workers/engine/model/load';
import { encodeSafetensors, type TensorToWrite } from '../../tools/safetensors_write';
import { runCaptured } from '../model_run';
import { maxAbsDiff, sharedPath } from '../shared';

/**
 * Checkpoint layouts and dtypes the loader must accept, built on the fly from the fixtures in a
 * temp dir: the same tensors split over two shards with model.safetensors.index.json, and F16 /
 * BF16 copies (widened to float32 on load).
 */

const FIXTURES = ['gpt2', 'gpt_neox', 'llama', 'llama3', 'mistral', 'qwen2', 'qwen3', 'gemma2', 'phi3'];
const SIDE_FILES = ['config.json', 'generation_config.json', 'tokenizer.json', 'tokenizer_config.json'];
/** DESIGN.md §5: f16 weights keep logits within 5e-2 of f32. */
const F16_TOL = 5e-2;
/**
 * BF16 keeps 8 significant bits to F16's 11: its unit roundoff (2^-8) is 8× F16's (2^-11), and the
 * logit error, first order in the weight rounding, scales with it.
 */
const BF16_TOL = 8 * F16_TOL;

let tmp: string;
beforeAll(() => { tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'bp-ckpt-')); });
afterAll(() => fs.rmSync(tmp, { recursive: true, force: true }));

/** Every tensor of a fixture's model.safetensors, in file order, decoded to float32. */
function fixtureTensors(arch: string): { name: string; shape: number[]; data: Float32Array }[] {
  const bytes = new Uint8Array(fs.readFileSync(sharedPath('fixtures', `${arch}-tiny`, 'model.safetensors')));
  const h = parseSafetensors(bytes);
  return [...h.tensors.values()].sort((a, b) => a.begin - b.begin)
    .map((e) => ({ name: e.name, shape: e.shape, data: decodeTensor(bytes.subarray(h.dataStart + e.begin, h.dataStart + e.end), e.dtype) }));
}

/** A model folder with the fixture's config and tokenizer and the given checkpoint files. */
function folder(name: string, arch: string, files: Record<string, Uint8Array | string>): string {
  const dir = path.join(tmp, name);
  fs.mkdirSync(dir);
  for (const f of SIDE_FILES) fs.copyFileSync(sharedPath('fixtures', `${arch}-tiny`, f), path.join(dir, f));
  for (const [f, body] of Object.entries(files)) fs.writeFileSync(path.join(dir, f), body);
  return dir;
}

/** Logits [T, V] of seq0 through the model in `dir` on the CPU backend. */
async function seq0Logits(dir: string, arch: string): Promise<Float32Array> {
  const meta = JSON.parse(fs.readFileSync(sharedPath('fixtures', `${arch}-tiny`, 'reference', 'meta.json'), 'utf8'));
  const b = new CpuBackend();
  const { model } = await loadTransformer(new NodeFiles(dir), b);
  const { logits } = await runCaptured(b, model, meta.sequences[0].input_ids, []);
  b.dispose();
  return logits;
}

const withDtype = (ts: ReturnType<typeof fixtureTensors>, dtype: SafetensorsDtype): TensorToWrite[] => ts.map((t) => ({ ...t, dtype }));

/** Largest logit difference per fixture and dtype, printed for the report. */
const measured: Record<string, Record<string, string>> = {};
afterAll(() => console.table(measured));

describe.each(FIXTURES)('%s-tiny', (arch) => {
  it('split over two shards with an index: same tensors, bit-identical logits', async () => {
    const ts = fixtureTensors(arch);
    const half = Math.ceil(ts.length / 2);
    const [a, b] = [ts.slice(0, half), ts.slice(half)];
    const shard = (i: number) => `model-0000${i}-of-00002.safetensors`;
    const weightMap = Object.fromEntries([...a.map((t) => [t.name, shard(1)]), ...b.map((t) => [t.name, shard(2)])]);
    const index = { metadata: { total_size: ts.reduce((s, t) => s + t.data.length * 4, 0) }, weight_map: weightMap };
    const dir = folder(`${arch}-sharded`, arch, {
      [shard(1)]: encodeSafetensors(withDtype(a, 'F32')),
      [shard(2)]: encodeSafetensors(withDtype(b, 'F32')),
      'model.safetensors.index.json': JSON.stringify(index),
    });
    const src = await openCheckpoint(new NodeFiles(dir));
    expect(src.names().sort()).toEqual(ts.map((t) => t.name).sort());
    expect(await seq0Logits(dir, arch)).toEqual(await seq0Logits(sharedPath('fixtures', `${arch}-tiny`), arch));
  });

  it.each([['F16', F16_TOL], ['BF16', BF16_TOL]] as const)('%s weights load; logits within %s of float32', async (dtype, tol) => {
    const ts = fixtureTensors(arch);
    const dir = folder(`${arch}-${dtype}`, arch, { 'model.safetensors': encodeSafetensors(withDtype(ts, dtype)) });
    const header = parseSafetensors(new Uint8Array(fs.readFileSync(path.join(dir, 'model.safetensors'))));
    expect([...header.tensors.values()].every((e) => e.dtype === dtype)).toBe(true);
    const got = await seq0Logits(dir, arch);
    const f32 = await seq0Logits(sharedPath('fixtures', `${arch}-tiny`), arch);
    const diff = maxAbsDiff(got, f32);
    (measured[arch] ??= {})[dtype] = diff.toExponential(2);
    expect(diff).toBeGreaterThan(0); // the weights really were rounded
    expect(diff).toBeLessThan(tol);
  });
});

it('a shard that lacks a tensor its index names is refused, naming both', async () => {
  const ts = fixtureTensors('llama');
  const dir = folder('bad-index', 'llama', {
    'model-00001-of-00001.safetensors': encodeSafetensors(withDtype(ts.slice(1), 'F32')),
    'model-00002-of-00002.safetensors': encodeSafetensors(withDtype(ts.slice(0, 1), 'F32')),
    'model.safetensors.index.json': JSON.stringify({ weight_map: Object.fromEntries(ts.map((t) => [t.name, 'model-00001-of-00001.safetensors'])) }),
  });
  // The index puts every tensor in shard 1, but shard 1 lacks the first tensor (it is in shard 2, which the index never names).
  await expect(openCheckpoint(new NodeFiles(dir))).rejects.toThrow(`index says "${ts[0].name}" is in model-00001-of-00001.safetensors, but it is not there`);
});
