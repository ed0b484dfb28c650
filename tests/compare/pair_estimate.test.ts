import { describe, expect, it } from 'vitest';
import { judgePair, type DeviceLimits, type MemoryEstimate } from '../../workers/engine/model/estimate';

/** Model A and model B side by side share one memory budget (model/estimate.ts judgePair). */
const est = (label: string, totalBytes: number, largest = 1024): MemoryEstimate => ({
  label, modelType: 'llama', params: 0, paramsByDtype: {}, weightBytes: totalBytes, weightDtype: 'f32', kvCacheBytes: 0, activationBytes: 0, totalBytes,
  nCtx: 512, contextLength: 512, largest: { name: 'w', shape: [1], bytes: largest }, largestUnsplittable: { name: 'w', shape: [1], bytes: largest }, shards: [],
});
const MiB = 2 ** 20;
const limits: DeviceLimits = { maxBufferSize: 64 * MiB, maxStorageBufferBindingSize: 64 * MiB, memoryBudget: 100 * MiB, device: 'this GPU (test)' };

describe('judgePair: two models against one budget', () => {
  it('fits when the sum fits; the reason names both needs and the budget', () => {
    const v = judgePair(est('base', 40 * MiB), est('tuned', 50 * MiB), limits, 'B');
    expect(v.fits).toBe(true);
    expect(v.reason).toBe('both fit: model A base 40 MiB + model B tuned 50 MiB = 90 MiB of 100 MiB on this GPU (test)');
  });

  it('refuses B when each fits alone but not both, with the numbers and what to do', () => {
    const v = judgePair(est('base', 60 * MiB), est('tuned', 60 * MiB), limits, 'B');
    expect(v.fits).toBe(false);
    expect(v.estimate.label).toBe('tuned');
    expect(v.reason).toMatch(/^models A and B together do not fit: model A base 60 MiB \+ model B tuned 60 MiB = 120 MiB; this GPU \(test\) allows 100 MiB\. Load a smaller model B/);
  });

  it('refuses a new model A beside a loaded B, naming B to unload', () => {
    const v = judgePair(est('big', 70 * MiB), est('tuned', 60 * MiB), limits, 'A');
    expect(v.fits).toBe(false);
    expect(v.estimate.label).toBe('big');
    expect(v.reason).toMatch(/Unload model B \(tuned\) first/);
  });

  it('judges the added model alone when the other is unknown, and a buffer too large before the sum', () => {
    expect(judgePair(null, est('tuned', 60 * MiB), limits, 'B').fits).toBe(true);
    const v = judgePair(est('base', 1 * MiB), est('tuned', 2 * MiB, 65 * MiB), limits, 'B');
    expect(v.fits).toBe(false);
    expect(v.reason).toMatch(/larger than maxStorageBufferBindingSize 64 MiB/);
  });
});
