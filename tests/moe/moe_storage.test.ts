import * as fs from 'node:fs';
import { describe, expect, it } from 'vitest';
import { CpuBackend } from '../../workers/engine/backend/cpu';
import { quantBytes } from '../../workers/engine/backend/quant';
import { NodeFiles } from '../../workers/engine/io/node_files';
import { parseSafetensors } from '../../workers/engine/io/safetensors';
import { estimateModel } from '../../workers/engine/model/estimate';
import { loadTransformer } from '../../workers/engine/model/load';
import { quantisedTensor } from '../../workers/engine/model/quant_storage';
import { weightTensors } from '../../workers/engine/model/transformer';
import { maxAbsDiff, readReference, sharedPath } from '../shared';
import { runCaptured } from '../model_run';

/**
 * Experts counted in loading, the memory estimate and quantised storage: every expert tensor of the
 * checkpoint is read (the load refuses unread tensors) and uploaded once; the estimate counts every
 * expert's parameters; q8_0 stores each expert's projections quantised and the routers float32.
 */
describe.each(['mixtral', 'qwen2_moe', 'olmoe'])('%s-tiny storage', (arch) => {
  const dir = sharedPath('fixtures-moe', `${arch}-tiny`);
  const header = parseSafetensors(new Uint8Array(fs.readFileSync(`${dir}/model.safetensors`)), 'model.safetensors');
  const tensors = [...header.tensors.entries()].map(([name, e]) => ({ name, shape: e.shape, count: e.shape.reduce((a, b) => a * b, 1) }));

  it('the estimate counts every expert: params = the checkpoint\'s elements; q8_0 bytes quantise experts, keep routers float32', async () => {
    const total = tensors.reduce((a, t) => a + t.count, 0);
    const est = await estimateModel(new NodeFiles(dir));
    expect(est.params).toBe(total);
    expect(est.weightBytes).toBe(4 * total);
    const q = await estimateModel(new NodeFiles(dir), { weightDtype: 'q8_0' });
    const routers = tensors.filter((t) => /\.(gate|shared_expert_gate)\.weight$/.test(t.name) && !t.name.includes('gate_proj'));
    expect(routers.length).toBeGreaterThan(0);
    for (const r of routers) expect(quantisedTensor(r.name, r.shape)).toBe(false);
    const experts = tensors.filter((t) => /experts\.\d+\./.test(t.name));
    expect(experts.length).toBe(3 * 4 * (arch === 'qwen2_moe' ? 2 : 3));
    for (const e of experts) expect(quantisedTensor(e.name, e.shape)).toBe(true);
    const expected = tensors.reduce((a, t) => a + (quantisedTensor(t.name, t.shape) ? quantBytes('q8_0', t.shape[0], t.shape[1]) : 4 * t.count), 0);
    expect(q.weightBytes).toBe(expected);
  });

  it('loads every tensor once (uploaded elements = the checkpoint\'s), leaks no tensor in a forward, and runs under q8_0 close to float32', async () => {
    const b = new CpuBackend();
    const { model } = await loadTransformer(new NodeFiles(dir), b);
    const uploaded = [...weightTensors(model.weights)].reduce((a, t) => a + t.size, 0);
    expect(uploaded).toBe(tensors.reduce((a, t) => a + t.count, 0));
    const live = b.liveTensors();
    await runCaptured(b, model, [1, 2, 3, 4, 5, 6, 7], []);
    expect(b.liveTensors()).toBe(live); // the sparse MLP releases every intermediate
    const q = await loadTransformer(new NodeFiles(dir), b, undefined, { weightDtype: 'q8_0' });
    const meta = JSON.parse(fs.readFileSync(`${dir}/reference/meta.json`, 'utf8')) as { sequences: { input_ids: number[] }[] };
    const ref = readReference(`${dir}/reference/seq0.safetensors`).get('logits')!.data;
    const { logits } = await runCaptured(b, q.model, meta.sequences[0].input_ids, []);
    const err = maxAbsDiff(logits, ref);
    expect(err).toBeGreaterThan(0);
    expect(err).toBeLessThan(0.5); // quantisation error, and a token whose router sits near a tie may switch experts
    b.dispose();
  });
});
