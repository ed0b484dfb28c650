import { beforeAll, describe, expect, it } from 'vitest';
import { specInterventions } from '../../workers/engine/studies/resolve_interventions';
import { parseSpec, type InterventionSpec } from '../../workers/engine/steering/spec';
import { maxDiff, sparseLayerByHand } from './moe_reference';
import { moeFixture } from './moe_fixture';

/**
 * Routing patching (steering/spec.ts patch_route at blocks.{l}.mlp.hook_expert_indices): another
 * run's chosen experts imposed on this run. Patching a run's own routing into itself changes
 * nothing (exactly); patching the clean prompt's routing into the corrupted run equals a
 * hand-written recomputation of that layer (tests/moe/moe_reference.ts: the clean run's experts,
 * weighted by the corrupted run's own router p at the corrupted input); positions outside the
 * selector are untouched; bad specs are refused with what and why.
 */
describe.each(['mixtral', 'qwen2_moe', 'olmoe'] as const)('%s-tiny routing patching', (arch) => {
  const f = moeFixture(arch);
  const clean = 'The dog ran to the car', corrupt = 'A dog ran to the car';
  let ids: number[], cleanIds: number[];
  const idx = (l: number) => `blocks.${l}.mlp.hook_expert_indices`;
  const ivs = (specs: InterventionSpec[]) => specInterventions(f.engine, { prompt: corrupt }, { specs });
  beforeAll(() => {
    ids = f.engine.encodePrompt({ prompt: corrupt });
    cleanIds = f.engine.encodePrompt({ prompt: clean });
  });

  it("patching a run's own routing into itself changes nothing, exactly (every sparse layer, every position)", async () => {
    const base = await f.engine.run(ids, {});
    const sparse = f.engine.spec.moe!.sparse.flatMap((s, l) => (s ? [l] : []));
    const own = await ivs(sparse.map((l) => ({ hook: idx(l), type: 'patch_route' as const, source: corrupt })));
    expect(own).toHaveLength(sparse.length);
    expect((await f.engine.run(ids, { interventions: own })).logits).toEqual(base.logits);
  });

  it("the clean prompt's routing patched into the corrupted run equals the layer recomputed by hand", async () => {
    const hooks = [idx(f.L), `blocks.${f.L}.ln2.hook_normalized`, `blocks.${f.L}.hook_resid_mid`, `blocks.${f.L}.hook_resid_post`];
    const c = await f.engine.run(cleanIds, { capture: [idx(f.L)] });
    const base = await f.engine.run(ids, { capture: hooks });
    const cleanIdx = c.captured.get(idx(f.L))!, ownIdx = base.captured.get(idx(f.L))!;
    const T = ids.length;
    const differs = Array.from({ length: T }, (_, t) => t).filter((t) => [0, 1].some((j) => j < f.k && !Array.from(ownIdx.subarray(t * f.k, (t + 1) * f.k)).includes(cleanIdx[t * f.k + j])));
    expect(differs.length).toBeGreaterThan(0); // the two prompts route differently somewhere: the patch has work to do
    const patched = await f.engine.run(ids, { capture: hooks, interventions: await ivs([{ hook: idx(f.L), type: 'patch_route', source: clean }]) });
    expect(Array.from(patched.captured.get(idx(f.L))!)).toEqual(Array.from(cleanIdx));
    const x = base.captured.get(`blocks.${f.L}.ln2.hook_normalized`)!, mid = base.captured.get(`blocks.${f.L}.hook_resid_mid`)!;
    const got = patched.captured.get(`blocks.${f.L}.hook_resid_post`)!;
    for (let t = 0; t < T; t++) {
      const y = await sparseLayerByHand(f.b, f.engine.spec.moe!, f.engine.model.weights.blocks[f.L].moe!, x.subarray(t * f.d, (t + 1) * f.d), Array.from(cleanIdx.subarray(t * f.k, (t + 1) * f.k)));
      expect(maxDiff(got.subarray(t * f.d, (t + 1) * f.d), Array.from(mid.subarray(t * f.d, (t + 1) * f.d), (v, i) => v + y[i])), `position ${t}`).toBeLessThan(1e-5);
    }
    expect(maxDiff(patched.logits, base.logits)).toBeGreaterThan(1e-4);
  });

  it('acts only at its positions: rows outside the selector keep the corrupted routing and values', async () => {
    const c = await f.engine.run(cleanIds, { capture: [idx(f.L)] });
    const base = await f.engine.run(ids, { capture: [idx(f.L), `blocks.${f.L}.hook_resid_post`] });
    const p = ids.length - 1;
    const run = await f.engine.run(ids, { capture: [idx(f.L), `blocks.${f.L}.hook_resid_post`], interventions: await ivs([{ hook: idx(f.L), type: 'patch_route', source: clean, positions: [p] }]) });
    const got = run.captured.get(idx(f.L))!, own = base.captured.get(idx(f.L))!, src = c.captured.get(idx(f.L))!;
    for (let t = 0; t < ids.length; t++) expect(Array.from(got.subarray(t * f.k, (t + 1) * f.k))).toEqual(Array.from((t === p ? src : own).subarray(t * f.k, (t + 1) * f.k)));
    const r = run.captured.get(`blocks.${f.L}.hook_resid_post`)!, r0 = base.captured.get(`blocks.${f.L}.hook_resid_post`)!;
    expect(r.subarray(0, p * f.d)).toEqual(r0.subarray(0, p * f.d));
  });

  it('refuses a source of another length, the wrong hook, rows that are not k distinct expert ids, and keys it does not take', async () => {
    await expect(ivs([{ hook: idx(f.L), type: 'patch_route', source: 'The cat' }])).rejects.toThrow(/routing patching needs prompts of equal token length/);
    await expect(ivs([{ hook: `blocks.${f.L}.mlp.hook_router_logits`, type: 'patch_route', source: clean }])).rejects.toThrow(/patch_route acts at blocks\.\{l\}\.mlp\.hook_expert_indices/);
    const rows = (r: number[]) => Array.from({ length: ids.length }, () => r);
    await expect(ivs([{ hook: idx(f.L), type: 'patch_route', vector: rows([0]) }])).rejects.toThrow(`must be a row of k = ${f.k} expert ids`);
    await expect(ivs([{ hook: idx(f.L), type: 'patch_route', vector: rows([0, f.engine.spec.moe!.nExperts]) }])).rejects.toThrow(/expert ids are whole numbers/);
    await expect(ivs([{ hook: idx(f.L), type: 'patch_route', vector: rows([1, 1]) }])).rejects.toThrow(/lists an expert twice/);
    await expect(ivs([{ hook: idx(f.L), type: 'patch_route', vector: rows([0, 1]).slice(0, 2) }])).rejects.toThrow(/source has 2 positions/);
    expect(() => parseSpec({ hook: idx(f.L), type: 'patch_route' })).toThrow(/exactly one of "source"/);
    expect(() => parseSpec({ hook: idx(f.L), type: 'patch_route', source: clean, alpha: 1 })).toThrow(/"alpha" does not apply/);
  });
});
