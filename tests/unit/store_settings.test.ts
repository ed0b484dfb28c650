import { describe, expect, it } from 'vitest';
import { useStore } from '../../app/store';

/** Every view's settings setter (store/merge_setter.ts) merges a patch: the fields it does not name are kept, and the rest of the store is untouched. */
describe('settings setters merge a patch into their own settings object', () => {
  it.each([
    ['setPatchingSettings', 'patchingSettings', { hook: 'z' }],
    ['setProbeSettings', 'probeSettings', { folds: 3 }],
    ['setWindowSettings', 'windowSettings', { kMax: '4' }],
    ['setReportSettings', 'reportSettings', { threshold: 0.5 }],
    ['setSweepSettings', 'sweepSettings', { doses: '1,2' }],
    ['setBatchColumns', 'batchColumns', { patchLayer: 2 }],
    ['setForkDraw', 'forkDraw', { temperature: 0.7 }],
    ['setGeneration', 'generation', { maxNewTokens: 7 }],
  ] as const)('%s', (setter, key, patch) => {
    const before = useStore.getState();
    (before[setter] as (p: object) => void)(patch);
    const after = useStore.getState();
    expect(after[key]).toEqual({ ...(before[key] as object), ...patch });
    expect(after[key]).not.toBe(before[key]);
    for (const other of ['patchingSettings', 'probeSettings', 'windowSettings', 'reportSettings', 'sweepSettings', 'batchColumns', 'forkDraw', 'generation'] as const) {
      if (other !== key) expect(after[other]).toBe(before[other]);
    }
  });
});
