import { describe, expect, it } from 'vitest';
import { CpuBackend } from '../../workers/engine/backend/cpu';
import { NodeFiles } from '../../workers/engine/io/node_files';
import { loadTransformer } from '../../workers/engine/model/load';
import { assertHook, hookNames } from '../../workers/engine/model/hooks';
import { sharedPath } from '../shared';
import { runCaptured } from '../model_run';
import { expertOutput, maxDiff } from './moe_reference';
import { moeFixture } from './moe_fixture';

/**
 * Per-expert output hooks `blocks.{l}.mlp.experts.{e}.hook_out` [pos, d_model] (model/moe.ts) on
 * the MoE fixtures (CPU): each is weight · expert_e(x) on the rows that chose e (checked against a
 * hand-run expert, tests/moe/moe_reference.ts) and 0 elsewhere; their sum over experts is
 * hook_mlp_out (no shared expert in mixtral / olmoe); zeroing one expert at one position changes
 * hook_mlp_out by exactly that row and the logits of no other position (the last layer).
 */
describe.each(['mixtral', 'olmoe'] as const)('%s-tiny per-expert output hooks', (arch) => {
  const out = (e: number, L = f.L) => `blocks.${L}.mlp.experts.${e}.hook_out`;
  const f = moeFixture(arch, (L, E) => [`blocks.${L}.hook_mlp_out`, `blocks.${L}.ln2.hook_normalized`, `blocks.${L}.mlp.hook_expert_indices`, `blocks.${L}.mlp.hook_expert_weights`, ...Array.from({ length: E }, (_, e) => out(e, L))]);

  it('are listed for the sparse layers, each expert, and refuse an expert that does not exist', () => {
    expect(hookNames(f.model.spec)).toContain(out(f.E - 1));
    expect(() => assertHook(f.model.spec, `blocks.${f.L}.mlp.experts.${f.E}.hook_out`)).toThrow(/expert 4 does not exist/);
  });

  it('carry weight · expert(x) on the rows that chose the expert and 0 on the others', async () => {
    const idx = f.base.captured.get(`blocks.${f.L}.mlp.hook_expert_indices`)!, wts = f.base.captured.get(`blocks.${f.L}.mlp.hook_expert_weights`)!;
    const x = f.base.captured.get(`blocks.${f.L}.ln2.hook_normalized`)!;
    const mw = f.model.weights.blocks[f.L].moe!;
    for (let e = 0; e < f.E; e++) {
      const y = f.base.captured.get(out(e))!;
      for (let p = 0; p < f.S; p++) {
        const j = Array.from(idx.subarray(p * f.k, (p + 1) * f.k)).indexOf(e);
        const row = y.subarray(p * f.d, (p + 1) * f.d);
        if (j < 0) { expect(row.every((v) => v === 0)).toBe(true); continue; }
        const byHand = (await expertOutput(f.b, mw.experts[e], x.subarray(p * f.d, (p + 1) * f.d))).map((v) => v * wts[p * f.k + j]);
        expect(maxDiff(row, byHand)).toBeLessThan(1e-5);
      }
    }
  });

  it('sum over experts to hook_mlp_out', () => {
    const sum = new Float64Array(f.S * f.d);
    for (let e = 0; e < f.E; e++) f.base.captured.get(out(e))!.forEach((v, i) => { sum[i] += v; });
    expect(maxDiff(sum, f.base.captured.get(`blocks.${f.L}.hook_mlp_out`)!)).toBeLessThan(1e-6);
  });

  it('zeroing one expert at one position removes exactly its row from hook_mlp_out and touches no other position', async () => {
    const idx = f.base.captured.get(`blocks.${f.L}.mlp.hook_expert_indices`)!;
    const p = 2, e = idx[p * f.k];
    const run = await runCaptured(f.b, f.model, f.ids, [`blocks.${f.L}.hook_mlp_out`], [{ hook: out(e), op: { kind: 'set', v: new Float32Array(f.d) }, positions: [p] }]);
    const before = f.base.captured.get(`blocks.${f.L}.hook_mlp_out`)!, after = run.captured.get(`blocks.${f.L}.hook_mlp_out`)!;
    const contribution = f.base.captured.get(out(e))!.subarray(p * f.d, (p + 1) * f.d);
    const expected = Array.from(before.subarray(p * f.d, (p + 1) * f.d), (v, i) => v - contribution[i]);
    expect(maxDiff(after.subarray(p * f.d, (p + 1) * f.d), expected)).toBeLessThan(1e-6);
    expect(maxDiff(contribution, new Float32Array(f.d))).toBeGreaterThan(1e-3); // the patch did something
    const V = f.model.spec.dVocab;
    for (let q = 0; q < f.S; q++) {
      if (q === p) continue;
      expect(after.subarray(q * f.d, (q + 1) * f.d)).toEqual(before.subarray(q * f.d, (q + 1) * f.d));
      expect(run.logits.subarray(q * V, (q + 1) * V)).toEqual(f.base.logits.subarray(q * V, (q + 1) * V));
    }
  });
});

describe('qwen2_moe-tiny per-expert output hooks', () => {
  it('are not listed on its dense layer 1', async () => {
    const b = new CpuBackend();
    const { model } = await loadTransformer(new NodeFiles(sharedPath('fixtures-moe', 'qwen2_moe-tiny')), b);
    const names = hookNames(model.spec);
    expect(names).toContain('blocks.0.mlp.experts.0.hook_out');
    expect(names.some((n) => n.startsWith('blocks.1.mlp.experts.'))).toBe(false);
    expect(() => assertHook(model.spec, 'blocks.1.mlp.experts.0.hook_out')).toThrow(/dense layer/);
    b.dispose();
  });
});
