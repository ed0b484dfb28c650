import { describe, expect, it } from 'vitest';
import { SPLIT_TUNING, splitPlan } from '../../workers/engine/ops/attention_split.wgsl';

/**
 * The flash-decoding split rule (ops/attention_split.wgsl.ts, splitPlan): which calls are split and
 * into what chunks, checked against the rule's definition — the chunks cover exactly the keys a
 * query of the call can see, the chunk sizes respect the tuning's bounds, and nothing is split
 * where one workgroup per head already fills the device. (The numerics of the split kernels are
 * checked against the golden references in e2e/harness/flash_numerics.spec.ts.)
 */
const SMOLLM = { nHeads: 9, window: 0 }; // SmolLM-135M: 9 query heads

describe('splitPlan', () => {
  it("'auto' on a GPU: long decode contexts split into whole multiples of 64 keys covering every visible key", () => {
    for (const T of [256, 512, 1000, 2048, 8192, 100_000]) {
      const plan = splitPlan({ ...SMOLLM, n: 1, past: T - 1 }, 'gpu', 'auto')!;
      expect(plan, `T=${T}`).not.toBeNull();
      expect(plan.base).toBe(0);
      expect(plan.chunk % 64).toBe(0);
      expect(plan.chunk).toBeGreaterThanOrEqual(SPLIT_TUNING.gpu.minChunk);
      expect(plan.chunk).toBeLessThanOrEqual(SPLIT_TUNING.gpu.maxChunk);
      expect(plan.chunks * plan.chunk).toBeGreaterThanOrEqual(T);
      expect((plan.chunks - 1) * plan.chunk).toBeLessThan(T);
      // no more chunks than the workgroup target asks for, unless the chunk is at its maximum
      if (plan.chunk < SPLIT_TUNING.gpu.maxChunk) expect(plan.chunks).toBeLessThanOrEqual(Math.ceil(SPLIT_TUNING.gpu.targetUnits(1) / 9));
    }
  });

  it("'auto' leaves short contexts and calls with enough (head, query) pairs to the one-pass kernel", () => {
    // T = past + 1 keys: split from T = 2·minChunk on
    expect(splitPlan({ ...SMOLLM, n: 1, past: 2 * SPLIT_TUNING.gpu.minChunk - 2 }, 'gpu', 'auto')).toBeNull();
    expect(splitPlan({ ...SMOLLM, n: 1, past: 2 * SPLIT_TUNING.gpu.minChunk - 1 }, 'gpu', 'auto')).toEqual({ base: 0, chunk: 128, chunks: 2 });
    expect(splitPlan({ ...SMOLLM, n: 1, past: 2047 }, 'gpu', 'auto')).toEqual({ base: 0, chunk: 128, chunks: 16 });
    // a 64-token prefill at T = 4096 already has 9·64 = 576 ≥ 256 workgroups
    expect(splitPlan({ ...SMOLLM, n: 64, past: 4032 }, 'gpu', 'auto')).toBeNull();
    expect(splitPlan({ nHeads: 32, window: 0, n: 8, past: 4000 }, 'gpu', 'auto')).toBeNull();
  });

  it('a sliding window splits only the keys inside the window', () => {
    const plan = splitPlan({ nHeads: 4, window: 1024, n: 1, past: 5000 }, 'gpu', 'auto')!;
    expect(plan.base).toBe(5000 + 1 - 1024);
    expect(plan.chunks * plan.chunk).toBeGreaterThanOrEqual(1024);
    expect((plan.chunks - 1) * plan.chunk).toBeLessThan(1024);
    // a window shorter than two minimum chunks is not split however long the context
    expect(splitPlan({ nHeads: 4, window: 200, n: 1, past: 5000 }, 'gpu', 'auto')).toBeNull();
  });

  it("'cpu' tuning targets 16 invocations per hardware thread, in chunks of ≥ 64 keys", () => {
    const two = splitPlan({ ...SMOLLM, n: 1, past: 2047 }, 'cpu', 'auto', 2)!;
    const eight = splitPlan({ ...SMOLLM, n: 1, past: 2047 }, 'cpu', 'auto', 8)!;
    expect(two).toEqual({ base: 0, chunk: 512, chunks: 4 }); // ⌈32 / 9⌉ chunks
    expect(eight).toEqual({ base: 0, chunk: 137, chunks: 15 }); // ⌈128 / 9⌉ chunks
    expect(splitPlan({ ...SMOLLM, n: 1, past: 126 }, 'cpu', 'auto', 2)).toBeNull();
    expect(splitPlan({ ...SMOLLM, n: 4, past: 2000 }, 'cpu', 'auto', 2)).toBeNull(); // 36 ≥ 32 invocations
  });

  it("a forced chunk splits whenever the visible keys exceed it; 'off' never splits", () => {
    expect(splitPlan({ nHeads: 4, window: 0, n: 1, past: 11 }, 'gpu', { chunk: 5 })).toEqual({ base: 0, chunk: 5, chunks: 3 });
    expect(splitPlan({ nHeads: 4, window: 0, n: 1, past: 4 }, 'gpu', { chunk: 5 })).toBeNull();
    expect(splitPlan({ nHeads: 4, window: 6, n: 1, past: 20 }, 'cpu', { chunk: 5 })).toEqual({ base: 15, chunk: 5, chunks: 2 });
    expect(splitPlan({ nHeads: 4, window: 0, n: 300, past: 0 }, 'gpu', { chunk: 5 })?.chunks).toBe(60);
    expect(splitPlan({ ...SMOLLM, n: 1, past: 100_000 }, 'gpu', 'off')).toBeNull();
  });

  it('refuses a forced chunk that is not a whole positive number of keys or exceeds the workgroup score array', () => {
    for (const chunk of [0, -3, 2.5, NaN]) expect(() => splitPlan({ ...SMOLLM, n: 1, past: 99 }, 'cpu', { chunk })).toThrow(/whole number of keys/);
    expect(() => splitPlan({ ...SMOLLM, n: 1, past: 99 }, 'gpu', { chunk: SPLIT_TUNING.gpu.maxChunk + 1 })).toThrow(/1\.\.1024/);
    expect(splitPlan({ ...SMOLLM, n: 1, past: 99_999 }, 'cpu', { chunk: 5000 })?.chunks).toBe(20);
  });
});
