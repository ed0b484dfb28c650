import * as fs from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CpuBackend } from '../../workers/engine/backend/cpu';
import { NodeFiles } from '../../workers/engine/io/node_files';
import { loadTransformer } from '../../workers/engine/model/load';
import type { Transformer } from '../../workers/engine/model/transformer';
import { parseSpec, toIntervention } from '../../workers/engine/steering/spec';
import { sharedPath } from '../shared';
import { runCaptured } from '../model_run';
import { maxDiff, routerProbs, sparseLayerByHand } from './moe_reference';

/**
 * Route interventions (steering/spec.ts ban_experts / force_experts / set_expert_weights) on the
 * MoE fixtures: banning an expert that no token chose changes nothing, exactly; banning a chosen one
 * equals a hand-written recomputation of that layer (the next expert at the router's own p,
 * renormalised where the model does, + the shared expert); forcing the router's own top-k changes
 * nothing; forced and set weights are what the hooks carry.
 */
describe.each(['mixtral', 'qwen2_moe', 'olmoe'])('%s-tiny route interventions', (arch) => {
  const dir = sharedPath('fixtures-moe', `${arch}-tiny`);
  const meta = JSON.parse(fs.readFileSync(`${dir}/reference/meta.json`, 'utf8')) as { sequences: { input_ids: number[] }[] };
  const ids = meta.sequences[0].input_ids;
  const S = ids.length;
  const b = new CpuBackend();
  let model: Transformer;
  let base: Awaited<ReturnType<typeof runCaptured>>;
  let L: number, E: number, k: number;
  const hooksOf = (l: number) => [`blocks.${l}.mlp.hook_router_logits`, `blocks.${l}.mlp.hook_expert_indices`, `blocks.${l}.mlp.hook_expert_weights`, `blocks.${l}.ln2.hook_normalized`, `blocks.${l}.hook_resid_mid`, `blocks.${l}.hook_resid_post`];
  const iv = (json: object) => toIntervention(parseSpec(json), model.spec, { nPrompt: S });

  beforeAll(async () => {
    model = (await loadTransformer(new NodeFiles(dir), b)).model;
    L = model.spec.nLayers - 1; // the last layer is sparse in all three
    ({ nExperts: E, topK: k } = model.spec.moe!);
    base = await runCaptured(b, model, ids, hooksOf(L));
  });
  afterAll(() => b.dispose());
  const chosenAt = (p: number) => Array.from(base.captured.get(`blocks.${L}.mlp.hook_expert_indices`)!.subarray(p * k, (p + 1) * k));

  it('banning, at each position, every expert that position did not choose changes nothing (exactly)', async () => {
    for (let e = 0; e < E; e++) {
      const positions = Array.from({ length: S }, (_, p) => p).filter((p) => !chosenAt(p).includes(e));
      if (positions.length === 0) continue;
      const run = await runCaptured(b, model, ids, [], [iv({ hook: `blocks.${L}.mlp.hook_router_logits`, type: 'ban_experts', experts: [e], positions })]);
      expect(run.logits).toEqual(base.logits);
    }
  });

  it('banning a chosen expert at one position equals a hand-written recomputation of that layer', async () => {
    const p = 3, banned = chosenAt(p)[0];
    const run = await runCaptured(b, model, ids, [`blocks.${L}.hook_resid_post`, `blocks.${L}.mlp.hook_expert_indices`], [
      iv({ hook: `blocks.${L}.mlp.hook_router_logits`, type: 'ban_experts', experts: [banned], positions: [p] }),
    ]);
    // by hand: x = ln2 output at p; p = softmax(router·x); the top-k among the others; weights p (renormalised)
    const d = model.spec.dModel;
    const x = base.captured.get(`blocks.${L}.ln2.hook_normalized`)!.subarray(p * d, (p + 1) * d);
    const mw = model.weights.blocks[L].moe!;
    const prob = await routerProbs(b, mw, x);
    const order = prob.map((_, e) => e).filter((e) => e !== banned).sort((a, c) => prob[c] - prob[a]).slice(0, k);
    expect(Array.from(run.captured.get(`blocks.${L}.mlp.hook_expert_indices`)!.subarray(p * k, (p + 1) * k))).toEqual(order);
    const y = await sparseLayerByHand(b, model.spec.moe!, mw, x, order);
    const mid = base.captured.get(`blocks.${L}.hook_resid_mid`)!.subarray(p * d, (p + 1) * d);
    const got = run.captured.get(`blocks.${L}.hook_resid_post`)!;
    expect(maxDiff(got.subarray(p * d, (p + 1) * d), Array.from(mid, (v, i) => v + y[i]))).toBeLessThan(1e-5);
    const before = base.captured.get(`blocks.${L}.hook_resid_post`)!;
    expect(maxDiff(got.subarray(p * d, (p + 1) * d), before.subarray(p * d, (p + 1) * d))).toBeGreaterThan(1e-3); // the ban did act
    for (let r = 0; r < S; r++) if (r !== p) expect(got.subarray(r * d, (r + 1) * d)).toEqual(before.subarray(r * d, (r + 1) * d));
  });

  it("forcing the router's own top-k changes nothing; forcing others weighs them by the router's p; set weights are used as given", async () => {
    const p = 5, own = chosenAt(p);
    const same = await runCaptured(b, model, ids, [], [iv({ hook: `blocks.${L}.mlp.hook_expert_indices`, type: 'force_experts', experts: own, positions: [p] })]);
    expect(same.logits).toEqual(base.logits);
    const others = Array.from({ length: E }, (_, e) => e).filter((e) => !own.includes(e)).slice(0, k);
    const forced = await runCaptured(b, model, ids, [`blocks.${L}.mlp.hook_expert_weights`], [iv({ hook: `blocks.${L}.mlp.hook_expert_indices`, type: 'force_experts', experts: others, positions: [p] })]);
    const lg = Array.from(base.captured.get(`blocks.${L}.mlp.hook_router_logits`)!.subarray(p * E, (p + 1) * E));
    const z = lg.reduce((s, l) => s + Math.exp(l), 0);
    const pr = others.map((e) => Math.exp(lg[e]) / z), tot = pr.reduce((s, v) => s + v, 0);
    const w = forced.captured.get(`blocks.${L}.mlp.hook_expert_weights`)!.subarray(p * k, (p + 1) * k);
    pr.forEach((v, j) => expect(w[j]).toBeCloseTo(model.spec.moe!.normTopk ? v / tot : v, 6));
    expect(maxDiff(forced.logits, base.logits)).toBeGreaterThan(1e-4);
    const own_w = Array.from(base.captured.get(`blocks.${L}.mlp.hook_expert_weights`)!.subarray(p * k, (p + 1) * k));
    const set = await runCaptured(b, model, ids, [], [iv({ hook: `blocks.${L}.mlp.hook_expert_weights`, type: 'set_expert_weights', vector: own_w, positions: [p] })]);
    expect(set.logits).toEqual(base.logits);
  });

  it('refuses a route intervention at the wrong hook, a missing expert, a ban leaving fewer than k, a force of the wrong size, a dense model', () => {
    expect(() => iv({ hook: `blocks.${L}.hook_resid_post`, type: 'ban_experts', experts: [0] })).toThrow(/acts at blocks\.\{l\}\.mlp\.hook_router_logits/);
    expect(() => iv({ hook: `blocks.${L}.mlp.hook_router_logits`, type: 'ban_experts', experts: [E] })).toThrow(`expert ${E} does not exist`);
    expect(() => iv({ hook: `blocks.${L}.mlp.hook_router_logits`, type: 'ban_experts', experts: Array.from({ length: E - k + 1 }, (_, e) => e) })).toThrow(/leaves fewer than/);
    expect(() => iv({ hook: `blocks.${L}.mlp.hook_expert_indices`, type: 'force_experts', experts: [0] })).toThrow(`exactly ${k} experts`);
    expect(() => parseSpec({ hook: `blocks.${L}.mlp.hook_router_logits`, type: 'ban_experts', experts: [1, 1] })).toThrow(/twice/);
    expect(() => toIntervention(parseSpec({ hook: 'blocks.0.mlp.hook_router_logits', type: 'ban_experts', experts: [0] }), { ...model.spec, moe: undefined }, { nPrompt: S })).toThrow(/has none|not computed/);
  });
});

