import * as fs from 'node:fs';
import { describe, expect, it } from 'vitest';
import type { Tensor } from '../../workers/engine/backend/backend';
import { NodeFiles } from '../../workers/engine/io/node_files';
import { parseSafetensors } from '../../workers/engine/io/safetensors';
import { estimateModel } from '../../workers/engine/model/estimate';
import { loadTransformer, type WeightDtype } from '../../workers/engine/model/load';
import { weightTensors } from '../../workers/engine/model/transformer';
import { sharedPath } from '../shared';
import { nodeBackend } from '../gpu/node_webgpu';
import { unavailable } from '../gpu/lavapipe_suite';

/**
 * The memory estimate counts every expert: for each MoE fixture and each storage, the estimate's
 * weight bytes equal a sum computed here from the checkpoint header with this test's own rules —
 * ggml blocks of 32 values take 34 bytes (Q8_0: a binary16 scale + 32 int8) or 18 (Q4_0: a scale +
 * 16 bytes of nibbles), rows padded to whole blocks, for every block projection (attention q/k/v/o, each expert's and the shared
 * expert's gate/up/down, a dense layer's MLP), float32 for embeddings, routers, norms; f16: 2 bytes
 * per element of every matrix — and the expert tensors' part of it is the expected count of expert
 * matrices times their size. On the Node WebGPU adapter the bytes the load actually stores
 * (every weight buffer's size, split parts summed) equal the estimate too.
 */
const why = await unavailable([]);
const FIXTURES = ['mixtral', 'qwen2_moe', 'olmoe'];
const DTYPES: WeightDtype[] = ['f32', 'f16', 'q8_0', 'q4_0'];
const BLOCK_BYTES: Record<string, number> = { q8_0: 34, q4_0: 18 };
const PROJECTION = /(self_attn\.[qkvo]_proj|experts\.\d+\.(w[123]|gate_proj|up_proj|down_proj)|shared_expert\.(gate|up|down)_proj|mlp\.(gate|up|down)_proj)\.weight$/;
const EXPERT = /experts\.\d+\./;

function header(arch: string) {
  const dir = sharedPath('fixtures-moe', `${arch}-tiny`);
  const h = parseSafetensors(new Uint8Array(fs.readFileSync(`${dir}/model.safetensors`)), 'model.safetensors');
  return { dir, tensors: [...h.tensors.entries()].map(([name, e]) => ({ name, shape: e.shape })) };
}

/**
 * A [rows, cols] matrix as ggml blocks: each row padded to whole blocks of 32 (qwen2_moe's shared
 * down_proj has rows of 48), each block's quants (32 bytes Q8_0, 16 Q4_0) and its binary16 scale, the
 * scales packed two to a 32-bit word after the quants (backend/quant.ts layout).
 */
function blockBytes(rows: number, cols: number, dtype: WeightDtype): number {
  const blocks = rows * Math.ceil(cols / 32);
  return blocks * (BLOCK_BYTES[dtype] - 2) + 4 * Math.ceil(blocks / 2);
}

/** Stored bytes of one tensor under `dtype` by this test's rules. */
function bytesOf(t: { name: string; shape: number[] }, dtype: WeightDtype): number {
  const count = t.shape.reduce((a, b) => a * b, 1);
  if (t.shape.length === 2 && dtype in BLOCK_BYTES && PROJECTION.test(t.name)) return blockBytes(t.shape[0], t.shape[1], dtype);
  return t.shape.length === 2 && dtype === 'f16' ? 2 * count : 4 * count;
}

/** Bytes a WebGPU tensor's buffers hold for its values (GpuTensor.bytes; a ChunkedTensor's parts summed). */
function stored(t: Tensor): number {
  const c = t as { bytes?: number; parts?: { bytes: number }[] };
  return c.parts ? c.parts.reduce((a, p) => a + p.bytes, 0) : c.bytes!;
}

describe.each(FIXTURES)('%s-tiny: experts in the memory estimate', (arch) => {
  const { dir, tensors } = header(arch);
  const experts = tensors.filter((t) => EXPERT.test(t.name));
  const config = JSON.parse(fs.readFileSync(`${dir}/config.json`, 'utf8')) as Record<string, number>;
  const nExperts = config.num_local_experts ?? config.num_experts;
  const dExpert = config.moe_intermediate_size ?? config.intermediate_size;
  const sparseLayers = arch === 'qwen2_moe' ? 2 : 3;

  it.each(DTYPES)('%s: weight bytes = Σ of every tensor\'s stored size, the experts\' share = n_experts × 3 matrices × layers', async (dtype) => {
    expect(experts.length).toBe(nExperts * 3 * sparseLayers);
    const expertBytes = experts.reduce((a, t) => a + bytesOf(t, dtype), 0);
    const perMatrix = dExpert * config.hidden_size;
    const each = dtype === 'f32' ? 4 * perMatrix : dtype === 'f16' ? 2 * perMatrix : (perMatrix / 32) * BLOCK_BYTES[dtype]; // d_expert, d_model multiples of 32
    expect(expertBytes).toBe(experts.length * each);
    const est = await estimateModel(new NodeFiles(dir), { weightDtype: dtype });
    expect(est.weightBytes).toBe(tensors.reduce((a, t) => a + bytesOf(t, dtype), 0));
  });

  it.skipIf(!!why)(`on the Node WebGPU adapter the load stores exactly the estimated bytes, for every storage${why ? ` (skipped: ${why})` : ''}`, async () => {
    for (const dtype of DTYPES) {
      const b = await nodeBackend();
      try {
        const { model } = await loadTransformer(new NodeFiles(dir), b, undefined, { weightDtype: dtype });
        const loaded = [...weightTensors(model.weights)].reduce((a, t) => a + stored(t), 0);
        expect(loaded, dtype).toBe((await estimateModel(new NodeFiles(dir), { weightDtype: dtype })).weightBytes);
      } finally {
        b.dispose();
      }
    }
  });
});
