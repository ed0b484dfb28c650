import { describe, expect, it } from 'vitest';
import { parseSpec, toIntervention } from '../../workers/engine/steering/spec';
import { runCaptured } from '../model_run';
import { maxDiff, routerProbs, sparseLayerByHand } from './moe_reference';
import { moeFixture } from './moe_fixture';

/**
 * Route interventions (steering/spec.ts ban_experts / force_experts / set_expert_weights) on the
 * MoE fixtures: banning an expert that no token chose changes nothing, exactly; banning a chosen one
 * equals a hand-written recomputation of that layer (the next expert at the router's own p,
 * renormalised where the model does, + the shared expert); forcing the router's own top-k changes
 * nothing; forced and set weights are what the hooks carry.
 */
describe.each(['mixtral', 'qwen2_moe', 'olmoe'] as const)('%s-tiny route interventions', (arch) => {
  const f = moeFixture(arch, (l) => [`blocks.${l}.mlp.hook_router_logits`, `blocks.${l}.mlp.hook_expert_indices`, `blocks.${l}.mlp.hook_expert_weights`, `blocks.${l}.ln2.hook_normalized`, `blocks.${l}.hook_resid_mid`, `blocks.${l}.hook_resid_post`]);
  const iv = (json: object) => toIntervention(parseSpec(json), f.model.spec, { nPrompt: f.S });
  const chosenAt = (p: number) => Array.from(f.base.captured.get(`blocks.${f.L}.mlp.hook_expert_indices`)!.subarray(p * f.k, (p + 1) * f.k));

  it('banning, at each position, every expert that position did not choose changes nothing (exactly)', async () => {
    for (let e = 0; e < f.E; e++) {
      const positions = Array.from({ length: f.S }, (_, p) => p).filter((p) => !chosenAt(p).includes(e));
      if (positions.length === 0) continue;
      const run = await runCaptured(f.b, f.model, f.ids, [], [iv({ hook: `blocks.${f.L}.mlp.hook_router_logits`, type: 'ban_experts', experts: [e], positions })]);
      expect(run.logits).toEqual(f.base.logits);
    }
  });

  it('banning a chosen expert at one position equals a hand-written recomputation of that layer', async () => {
    const p = 3, banned = chosenAt(p)[0];
    const run = await runCaptured(f.b, f.model, f.ids, [`blocks.${f.L}.hook_resid_post`, `blocks.${f.L}.mlp.hook_expert_indices`], [
      iv({ hook: `blocks.${f.L}.mlp.hook_router_logits`, type: 'ban_experts', experts: [banned], positions: [p] }),
    ]);
    // by hand: x = ln2 output at p; p = softmax(router·x); the top-k among the others; weights p (renormalised)
    const d = f.model.spec.dModel;
    const x = f.base.captured.get(`blocks.${f.L}.ln2.hook_normalized`)!.subarray(p * d, (p + 1) * d);
    const mw = f.model.weights.blocks[f.L].moe!;
    const prob = await routerProbs(f.b, mw, x);
    const order = prob.map((_, e) => e).filter((e) => e !== banned).sort((a, c) => prob[c] - prob[a]).slice(0, f.k);
    expect(Array.from(run.captured.get(`blocks.${f.L}.mlp.hook_expert_indices`)!.subarray(p * f.k, (p + 1) * f.k))).toEqual(order);
    const y = await sparseLayerByHand(f.b, f.model.spec.moe!, mw, x, order);
    const mid = f.base.captured.get(`blocks.${f.L}.hook_resid_mid`)!.subarray(p * d, (p + 1) * d);
    const got = run.captured.get(`blocks.${f.L}.hook_resid_post`)!;
    expect(maxDiff(got.subarray(p * d, (p + 1) * d), Array.from(mid, (v, i) => v + y[i]))).toBeLessThan(1e-5);
    const before = f.base.captured.get(`blocks.${f.L}.hook_resid_post`)!;
    expect(maxDiff(got.subarray(p * d, (p + 1) * d), before.subarray(p * d, (p + 1) * d))).toBeGreaterThan(1e-3); // the ban did act
    for (let r = 0; r < f.S; r++) if (r !== p) expect(got.subarray(r * d, (r + 1) * d)).toEqual(before.subarray(r * d, (r + 1) * d));
  });

  it("forcing the router's own top-k changes nothing; forcing others weighs them by the router's p; set weights are used as given", async () => {
    const p = 5, own = chosenAt(p);
    const same = await runCaptured(f.b, f.model, f.ids, [], [iv({ hook: `blocks.${f.L}.mlp.hook_expert_indices`, type: 'force_experts', experts: own, positions: [p] })]);
    expect(same.logits).toEqual(f.base.logits);
    const others = Array.from({ length: f.E }, (_, e) => e).filter((e) => !own.includes(e)).slice(0, f.k);
    const forced = await runCaptured(f.b, f.model, f.ids, [`blocks.${f.L}.mlp.hook_expert_weights`], [iv({ hook: `blocks.${f.L}.mlp.hook_expert_indices`, type: 'force_experts', experts: others, positions: [p] })]);
    const lg = Array.from(f.base.captured.get(`blocks.${f.L}.mlp.hook_router_logits`)!.subarray(p * f.E, (p + 1) * f.E));
    const z = lg.reduce((s, l) => s + Math.exp(l), 0);
    const pr = others.map((e) => Math.exp(lg[e]) / z), tot = pr.reduce((s, v) => s + v, 0);
    const w = forced.captured.get(`blocks.${f.L}.mlp.hook_expert_weights`)!.subarray(p * f.k, (p + 1) * f.k);
    pr.forEach((v, j) => expect(w[j]).toBeCloseTo(f.model.spec.moe!.normTopk ? v / tot : v, 6));
    expect(maxDiff(forced.logits, f.base.logits)).toBeGreaterThan(1e-4);
    const own_w = Array.from(f.base.captured.get(`blocks.${f.L}.mlp.hook_expert_weights`)!.subarray(p * f.k, (p + 1) * f.k));
    const set = await runCaptured(f.b, f.model, f.ids, [], [iv({ hook: `blocks.${f.L}.mlp.hook_expert_weights`, type: 'set_expert_weights', vector: own_w, positions: [p] })]);
    expect(set.logits).toEqual(f.base.logits);
  });

  it('refuses a route intervention at the wrong hook, a missing expert, a ban leaving fewer than k, a force of the wrong size, a dense model', () => {
    expect(() => iv({ hook: `blocks.${f.L}.hook_resid_post`, type: 'ban_experts', experts: [0] })).toThrow(/acts at blocks\.\{l\}\.mlp\.hook_router_logits/);
    expect(() => iv({ hook: `blocks.${f.L}.mlp.hook_router_logits`, type: 'ban_experts', experts: [f.E] })).toThrow(`expert ${f.E} does not exist`);
    expect(() => iv({ hook: `blocks.${f.L}.mlp.hook_router_logits`, type: 'ban_experts', experts: Array.from({ length: f.E - f.k + 1 }, (_, e) => e) })).toThrow(/leaves fewer than/);
    expect(() => iv({ hook: `blocks.${f.L}.mlp.hook_expert_indices`, type: 'force_experts', experts: [0] })).toThrow(`exactly ${f.k} experts`);
    expect(() => parseSpec({ hook: `blocks.${f.L}.mlp.hook_router_logits`, type: 'ban_experts', experts: [1, 1] })).toThrow(/twice/);
    expect(() => toIntervention(parseSpec({ hook: 'blocks.0.mlp.hook_router_logits', type: 'ban_experts', experts: [0] }), { ...f.model.spec, moe: undefined }, { nPrompt: f.S })).toThrow(/has none|not computed/);
  });
});

