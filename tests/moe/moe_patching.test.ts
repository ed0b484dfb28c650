import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CpuBackend } from '../../workers/engine/backend/cpu';
import { Engine } from '../../workers/engine/engine';
import { NodeFiles } from '../../workers/engine/io/node_files';
import { patchingGrid } from '../../workers/engine/studies/patching';
import { sharedPath } from '../shared';

/**
 * The MoE fixtures join activation patching (studies/patching.ts): patching every position of
 * resid_pre at a layer is the source run (r = 1), with the routing recomputed downstream; the
 * mlp_out grid (the sparse MLP's output, hook_mlp_out) runs with finite recoveries.
 */
describe.each(['mixtral', 'qwen2_moe', 'olmoe'])('%s-tiny patching', (arch) => {
  const b = new CpuBackend();
  let e: Engine;
  beforeAll(async () => { e = await Engine.load(new NodeFiles(sharedPath('fixtures-moe', `${arch}-tiny`)), b); });
  afterAll(() => b.dispose());
  const req = { clean: 'The cat sat on the mat', corrupt: 'The hat sat on the mat', good: { ids: [[17]] }, bad: { ids: [[42]] } };

  it('resid_pre at every layer patched whole is the clean run (r = 1 within 1e-5); the mlp_out grid runs', async () => {
    const r = await patchingGrid(e, { ...req, hook: 'resid_pre' });
    expect(r.cleanIds.length).toBe(r.corruptIds.length);
    for (let l = 0; l < r.nLayers; l++) expect(Math.abs(r.layerRecovery[l] - 1)).toBeLessThanOrEqual(1e-5);
    const m = await patchingGrid(e, { ...req, hook: 'mlp_out' });
    expect([...m.recovery, ...m.layerRecovery].every(Number.isFinite)).toBe(true);
    expect(Math.max(...m.recovery.map(Math.abs))).toBeGreaterThan(0); // the sparse MLP's output carries part of the gap
  });
});
