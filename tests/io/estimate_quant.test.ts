import { describe, expect, it } from 'vitest';
import { estimateModel } from '../../workers/engine/model/estimate';
import { NodeFiles } from '../../workers/engine/io/node_files';
import { readReference, sharedPath } from '../shared';

/**
 * The memory estimate of a quantised load, from the format's definition: a [rows, cols] linear
 * weight takes rows·⌈cols/32⌉ blocks of 32 quants (Q8_0: 32 bytes, Q4_0: 16) and one binary16
 * scale each, in u32 words (quants 8 / 4 words per block, scales two per word); embedding tables
 * and 1-D tensors stay 4 bytes per value.
 */
describe('estimateModel with quantised storage', () => {
  const dir = sharedPath('models', 'stories260K');
  const tensors = readReference(`${dir}/model.safetensors`);
  it.each([['q8_0', 8], ['q4_0', 4]] as const)('%s: linear weights at their block size, the rest float32', async (format, quantWords) => {
    let want = 0;
    for (const [name, t] of tensors) {
      if (t.shape.length === 2 && !/embed_tokens|lm_head/.test(name)) {
        const blocks = t.shape[0] * Math.ceil(t.shape[1] / 32);
        want += 4 * (blocks * quantWords + Math.ceil(blocks / 2));
      } else want += 4 * t.data.length;
    }
    const e = await estimateModel(new NodeFiles(dir), { weightDtype: format });
    const f32 = await estimateModel(new NodeFiles(dir));
    expect(e.weightDtype).toBe(format);
    expect(e.weightBytes).toBe(want);
    expect(e.weightBytes).toBeLessThan(f32.weightBytes);
    expect(e.totalBytes - e.weightBytes).toBe(f32.totalBytes - f32.weightBytes);
  });
});
