import * as fs from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CpuBackend } from '../../workers/engine/backend/cpu';
import { NodeFiles } from '../../workers/engine/io/node_files';
import { loadTransformer } from '../../workers/engine/model/load';
import { assertHook, hookNames } from '../../workers/engine/model/hooks';
import type { Transformer } from '../../workers/engine/model/transformer';
import { sharedPath } from '../shared';
import { runCaptured } from '../model_run';
import { expertOutput, maxDiff } from './moe_reference';

/**
 * Per-expert output hooks `blocks.{l}.mlp.experts.{e}.hook_out` [pos, d_model] (model/moe.ts) on
 * the MoE fixtures (CPU): each is weight · expert_e(x) on the rows that chose e (checked against a
 * hand-run expert, tests/moe/moe_reference.ts) and 0 elsewhere; their sum over experts is
 * hook_mlp_out (no shared expert in mixtral / olmoe); zeroing one expert at one position changes
 * hook_mlp_out by exactly that row and the logits of no other position (the last layer).
 */
describe.each(['mixtral', 'olmoe'])('%s-tiny per-expert output hooks', (arch) => {
  const dir = sharedPath('fixtures-moe', `${arch}-tiny`);
  const meta = JSON.parse(fs.readFileSync(`${dir}/reference/meta.json`, 'utf8')) as { sequences: { input_ids: number[] }[] };
  const ids = meta.sequences[0].input_ids;
  const S = ids.length;
  const b = new CpuBackend();
  let model: Transformer;
  let base: Awaited<ReturnType<typeof runCaptured>>;
  let L: number, E: number, k: number, d: number;
  const out = (e: number) => `blocks.${L}.mlp.experts.${e}.hook_out`;

  beforeAll(async () => {
    model = (await loadTransformer(new NodeFiles(dir), b)).model;
    L = model.spec.nLayers - 1;
    ({ nExperts: E, topK: k } = model.spec.moe!);
    d = model.spec.dModel;
    const hooks = [`blocks.${L}.hook_mlp_out`, `blocks.${L}.ln2.hook_normalized`, `blocks.${L}.mlp.hook_expert_indices`, `blocks.${L}.mlp.hook_expert_weights`];
    base = await runCaptured(b, model, ids, [...hooks, ...Array.from({ length: E }, (_, e) => out(e))]);
  });
  afterAll(() => b.dispose());

  it('are listed for the sparse layers, each expert, and refuse an expert that does not exist', () => {
    expect(hookNames(model.spec)).toContain(out(E - 1));
    expect(() => assertHook(model.spec, `blocks.${L}.mlp.experts.${E}.hook_out`)).toThrow(/expert 4 does not exist/);
  });

  it('carry weight · expert(x) on the rows that chose the expert and 0 on the others', async () => {
    const idx = base.captured.get(`blocks.${L}.mlp.hook_expert_indices`)!, wts = base.captured.get(`blocks.${L}.mlp.hook_expert_weights`)!;
    const x = base.captured.get(`blocks.${L}.ln2.hook_normalized`)!;
    const mw = model.weights.blocks[L].moe!;
    for (let e = 0; e < E; e++) {
      const y = base.captured.get(out(e))!;
      for (let p = 0; p < S; p++) {
        const j = Array.from(idx.subarray(p * k, (p + 1) * k)).indexOf(e);
        const row = y.subarray(p * d, (p + 1) * d);
        if (j < 0) { expect(row.every((v) => v === 0)).toBe(true); continue; }
        const byHand = (await expertOutput(b, mw.experts[e], x.subarray(p * d, (p + 1) * d))).map((v) => v * wts[p * k + j]);
        expect(maxDiff(row, byHand)).toBeLessThan(1e-5);
      }
    }
  });

  it('sum over experts to hook_mlp_out', () => {
    const sum = new Float64Array(S * d);
    for (let e = 0; e < E; e++) base.captured.get(out(e))!.forEach((v, i) => { sum[i] += v; });
    expect(maxDiff(sum, base.captured.get(`blocks.${L}.hook_mlp_out`)!)).toBeLessThan(1e-6);
  });

  it('zeroing one expert at one position removes exactly its row from hook_mlp_out and touches no other position', async () => {
    const idx = base.captured.get(`blocks.${L}.mlp.hook_expert_indices`)!;
    const p = 2, e = idx[p * k];
    const run = await runCaptured(b, model, ids, [`blocks.${L}.hook_mlp_out`], [{ hook: out(e), op: { kind: 'set', v: new Float32Array(d) }, positions: [p] }]);
    const before = base.captured.get(`blocks.${L}.hook_mlp_out`)!, after = run.captured.get(`blocks.${L}.hook_mlp_out`)!;
    const contribution = base.captured.get(out(e))!.subarray(p * d, (p + 1) * d);
    const expected = Array.from(before.subarray(p * d, (p + 1) * d), (v, i) => v - contribution[i]);
    expect(maxDiff(after.subarray(p * d, (p + 1) * d), expected)).toBeLessThan(1e-6);
    expect(maxDiff(contribution, new Float32Array(d))).toBeGreaterThan(1e-3); // the patch did something
    const V = model.spec.dVocab;
    for (let q = 0; q < S; q++) {
      if (q === p) continue;
      expect(after.subarray(q * d, (q + 1) * d)).toEqual(before.subarray(q * d, (q + 1) * d));
      expect(run.logits.subarray(q * V, (q + 1) * V)).toEqual(base.logits.subarray(q * V, (q + 1) * V));
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
