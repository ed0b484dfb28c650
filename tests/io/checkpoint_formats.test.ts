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
import { maxAbsDiff, readReference, sharedPath } from '../shared';
import { F32_TOL } from '../reference_math';

/**
 * Checkpoint layouts and dtypes the loader must accept, built on the fly from the fixtures in a
 * temp dir: the same tensors split over two shards with model.safetensors.index.json, and F16 /
 * BF16 copies (widened to float32 on load).
 */

const FIXTURES = ['gpt2', 'gpt_neox', 'llama', 'llama3', 'mistral', 'qwen2', 'qwen3', 'gemma2', 'phi3'];
const SIDE_FILES = ['config.json', 'generation_config.json', 'tokenizer.json', 'tokenizer_config.json'];
/**
 * Unit roundoff u = 2^-p of each storage format (p significant bits: binary16 11, bfloat16 8).
 * Tolerance against the float32 REFERENCE logits (HF transformers' own output, not the engine's
 * f32 run): F32_TOL for the float32 arithmetic, plus a first-order rounding bound. Rounding a
 * tensor to the format changes each weight by at most u relative, so each of the N rounded
 * tensors on the path moves the logits by at most about u · max|z| (norms keep activations at the
 * logits' scale); with no cancellation assumed the N contributions add:
 *   tol = F32_TOL + N · u · max|z_ref|,   N = tensors in the checkpoint.
 * (Measured on the fixtures: 2.6–5.8 · u · max|z_ref|, well inside N = 21–40.)
 */
const UNIT_ROUNDOFF = { F16: 2 ** -11, BF16: 2 ** -8 } as const;

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

  it.each(['F16', 'BF16'] as const)('%s weights load; logits within F32_TOL + N·u·max|z| of the float32 reference logits', async (dtype) => {
    const ts = fixtureTensors(arch);
    const dir = folder(`${arch}-${dtype}`, arch, { 'model.safetensors': encodeSafetensors(withDtype(ts, dtype)) });
    const header = parseSafetensors(new Uint8Array(fs.readFileSync(path.join(dir, 'model.safetensors'))));
    expect([...header.tensors.values()].every((e) => e.dtype === dtype)).toBe(true);
    const got = await seq0Logits(dir, arch);
    const ref = readReference(sharedPath('fixtures', `${arch}-tiny`, 'reference', 'seq0.safetensors')).get('logits')!.data;
    const maxLogit = ref.reduce((m, x) => Math.max(m, Math.abs(x)), 0);
    const tol = F32_TOL + ts.length * UNIT_ROUNDOFF[dtype] * maxLogit;
    const diff = maxAbsDiff(got, ref);
    (measured[arch] ??= {})[dtype] = `${diff.toExponential(2)} (tol ${tol.toExponential(1)})`;
    expect(maxAbsDiff(got, await seq0Logits(sharedPath('fixtures', `${arch}-tiny`), arch))).toBeGreaterThan(0); // the weights really were rounded
    expect(diff).toBeLessThan(tol);
  });
});

it('every get() decodes a new array from the file (the CPU backend keeps it as the tensor, Backend.adopt): writing one changes no other', async () => {
  const ts = fixtureTensors('llama');
  const dir = folder('fresh-arrays', 'llama', { 'model.safetensors': encodeSafetensors(withDtype(ts, 'BF16')) });
  const bytes = new Uint8Array(fs.readFileSync(path.join(dir, 'model.safetensors')));
  const header = parseSafetensors(bytes);
  const src = await openCheckpoint(new NodeFiles(dir));
  expect(src.freshArrays).toBe(true);
  for (const t of ts) {
    // the file's BF16 halves, widened here bit by bit: each is the high half of a float32 word
    const e = header.tensors.get(t.name)!, dv = new DataView(bytes.buffer, header.dataStart + e.begin, e.end - e.begin);
    const want = new Float32Array(new Uint32Array(t.data.length).map((_, i) => dv.getUint16(2 * i, true) << 16).buffer);
    const first = src.get(t.name).data;
    expect(Buffer.compare(Buffer.from(first.buffer), Buffer.from(want.buffer)), t.name).toBe(0);
    first.fill(NaN);
    const second = src.get(t.name).data;
    expect(second).not.toBe(first);
    expect(Buffer.compare(Buffer.from(second.buffer), Buffer.from(want.buffer)), t.name).toBe(0);
  }
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
