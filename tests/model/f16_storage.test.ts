import { describe, expect, it } from 'vitest';
import { CpuBackend } from '../../workers/engine/backend/cpu';
import { loadTransformer } from '../../workers/engine/model/load';
import { memory, modelFiles, tensorsOf, withTensors } from '../hardening/model_variants';

/**
 * The f16 weight storage's bounds (model/load.ts): binary16's largest finite value, 65504 (IEEE 754
 * binary16: (2 − 2⁻¹⁰)·2¹⁵), loads as itself; only 2-D matrices are rounded, 1-D norm weights keep
 * their float32 values (WeightOptions). stories260K's checkpoint, one value changed where stated.
 */
const Q = 'model.layers.0.self_attn.q_proj.weight';

/** Whether x is a binary16 value (normal range): x·2^(10 − ⌊log2|x|⌋) is a whole number. */
const isF16 = (x: number) => x === 0 || Number.isInteger(x * 2 ** (10 - Math.floor(Math.log2(Math.abs(x)))));

describe('f16 storage bounds', () => {
  it('a matrix entry of exactly ±65504 (the largest binary16) loads and reads back unchanged', async () => {
    expect((2 - 2 ** -10) * 2 ** 15).toBe(65504);
    const files = withTensors((ts) => { const q = ts.find((t) => t.name === Q)!; q.data[5] = 65504; q.data[6] = -65504; });
    const b = new CpuBackend();
    const { model } = await loadTransformer(memory(files), b, undefined, { weightDtype: 'f16' });
    const q = await b.read(model.weights.blocks[0].q.w);
    expect([q[5], q[6]]).toEqual([65504, -65504]);
    model.dispose();
  });

  it('a value beyond ±65504 at index 0 is refused like any other index', async () => {
    const files = withTensors((ts) => { ts.find((t) => t.name === Q)!.data[0] = -65600; });
    await expect(loadTransformer(memory(files), new CpuBackend(), undefined, { weightDtype: 'f16' }))
      .rejects.toThrow(`tensor "${Q}" holds -65600 at index 0, beyond the binary16 range ±65504: load it with float32 weights`);
  });

  it('1-D weights (RMSNorm scales) keep their float32 values; a matrix is rounded to binary16', async () => {
    const ts = tensorsOf(modelFiles());
    const norm = ts.find((t) => t.name === 'model.layers.0.input_layernorm.weight')!.data;
    const qf32 = ts.find((t) => t.name === Q)!.data;
    expect(Array.from(norm).some((x) => !isF16(x)), 'the norm holds values binary16 cannot store').toBe(true);
    const b = new CpuBackend();
    const { model } = await loadTransformer(memory(modelFiles()), b, undefined, { weightDtype: 'f16' });
    expect(await b.read(model.weights.blocks[0].ln1.w)).toEqual(Float32Array.from(norm));
    const q = await b.read(model.weights.blocks[0].q.w);
    expect(Array.from(q).every(isF16)).toBe(true);
    expect(Array.from(q).some((x, i) => x !== qf32[i])).toBe(true);
    model.dispose();
  });
});
