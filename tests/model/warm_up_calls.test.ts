import { describe, expect, it } from 'vitest';
import { CpuBackend } from '../../workers/engine/backend/cpu';
import { NodeFiles } from '../../workers/engine/io/node_files';
import { loadTransformer } from '../../workers/engine/model/load';
import { warmUpCalls, warmUpGeneration } from '../../workers/engine/model/warm_up';
import { realModel } from '../reference_math';

/**
 * The pipeline warm-up's rules that need no GPU (workers/engine/model/warm_up.ts): which forward calls
 * it makes, and that on the CPU backend (nothing to compile) it runs none. What it does on WebGPU —
 * no pipeline compiled by the first generation, no number changed — is tests/gpu/warm_up.test.ts.
 */
describe('warm-up forward calls', () => {
  it('cover ≥ 5, 2–4 and 1-row calls and the last cache position, without overlapping, inside the context', () => {
    expect(warmUpCalls(512)).toEqual([[0, 5], [5, 2], [7, 1], [511, 1]]);
    expect(warmUpCalls(9)).toEqual([[0, 5], [5, 2], [7, 1], [8, 1]]); // the last position right after the others
    expect(warmUpCalls(8)).toEqual([[0, 5], [5, 2], [7, 1]]);
    expect(warmUpCalls(6)).toEqual([[0, 5], [5, 1]]);
    expect(warmUpCalls(5)).toEqual([[0, 5]]); // a call that ends exactly at the context fits
    expect(warmUpCalls(3)).toEqual([[0, 2], [2, 1]]);
    expect(warmUpCalls(1)).toEqual([[0, 1]]);
  });

  it('on the CPU backend the warm-up runs nothing: 0 rows, no forward call, no tensor left', async () => {
    const b = new CpuBackend();
    const { model } = await loadTransformer(new NodeFiles(realModel('stories260K').dir), b, undefined, { contextLength: 16 });
    try {
      let calls = 0;
      const forward = model.forward.bind(model);
      model.forward = (...args: Parameters<typeof model.forward>) => { calls++; return forward(...args); };
      const live = b.liveTensors();
      expect(await warmUpGeneration(model, b)).toBe(0);
      expect([calls, b.liveTensors()]).toEqual([0, live]);
    } finally {
      model.dispose();
      b.dispose();
    }
  });
});
