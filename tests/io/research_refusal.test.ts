import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { DeviceLimits } from '../../workers/engine/model/estimate';
import { formatBytes } from '../../workers/engine/io/bytes';
import { filesFor } from '../../workers/sources';
import { startMockHub, writeSparseModel, type MockHub } from '../../tools/mock-hub';
import { RESEARCH_CONFIGS, researchTensors, type ResearchModel } from '../../tools/research_configs';
import { researchFolder } from '../../tools/research_storage';

/**
 * Research-size models over budget are refused through the worker's own path (workers/sources.ts
 * filesFor with the device's limits, as the app's load does) before any weight byte is requested,
 * and the refusal gives the numbers: weights, KV cache, activations and the budget. The checkpoints
 * are the real models' tensor lists in BF16 as sparse files (headers only, no disk); the expected
 * numbers are computed here from the config alone, by the definitions in model/estimate.ts's
 * docstrings (float32 weights: 4 bytes per parameter; K and V float32 for min(4096,
 * max_position_embeddings) positions; activations 4·T·(6·d_model + 3·d_mlp + n_heads·T + d_vocab)
 * with T = min(context, 512)).
 */

const GiB = 2 ** 30;
/** SwiftShader's buffer limits (../shared/TESTING.md) with a 4 GiB memory budget. */
const LIMITED: DeviceLimits = { maxBufferSize: 2 * GiB, maxStorageBufferBindingSize: GiB, memoryBudget: 4 * GiB, device: 'the test adapter' };

let hub: MockHub;
let tmp: string;
beforeAll(async () => {
  tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'bp-research-refusal-'));
  const repos = Object.fromEntries((['llama-3.2-1b', 'gemma-3-1b'] as const).map((m) => [`research/${m}`, { revisions: { main: writeSparseModel(path.join(tmp, m), { ...RESEARCH_CONFIGS[m] }, researchTensors(m, 'BF16')) } }]));
  repos['research/smollm2-135m-q4_0'] = { revisions: { main: researchFolder('smollm2-135m', 'gguf-q4_0') } };
  hub = await startMockHub({ repos });
});
afterAll(async () => {
  await hub.close();
  fs.rmSync(tmp, { recursive: true, force: true });
});

/** Parameters of the model from its config: embedding (tied), per layer attention, MLP and norms, final norm. */
function parameters(m: ResearchModel): number {
  const c = RESEARCH_CONFIGS[m] as Record<string, unknown>;
  const D = Number(c.hidden_size), F = Number(c.intermediate_size), hd = Number(c.head_dim), H = Number(c.num_attention_heads), K = Number(c.num_key_value_heads);
  const gemma = c.model_type === 'gemma3_text';
  const layer = D * H * hd * 2 + 2 * D * K * hd + 3 * D * F + (gemma ? 4 : 2) * D + (gemma ? 2 * hd : 0);
  return Number(c.vocab_size) * D + Number(c.num_hidden_layers) * layer + D;
}

/** The numbers the refusal must show for float32 weights and the default 4096-token context. */
function expectedParts(m: ResearchModel): { weights: string; kv: string; activations: string; total: number } {
  const c = RESEARCH_CONFIGS[m] as Record<string, unknown>;
  const ctx = Math.min(4096, Number(c.max_position_embeddings)), T = Math.min(ctx, 512);
  const weights = 4 * parameters(m);
  const kv = 2 * Number(c.num_hidden_layers) * ctx * Number(c.num_key_value_heads) * Number(c.head_dim) * 4;
  const act = 4 * T * (6 * Number(c.hidden_size) + 3 * Number(c.intermediate_size) + Number(c.num_attention_heads) * T + Number(c.vocab_size));
  return { weights: formatBytes(weights), kv: formatBytes(kv), activations: formatBytes(act), total: weights + kv + act };
}

/** Requests the mock Hub saw while `fn` ran. */
async function logged<T>(fn: () => Promise<T>): Promise<{ value: T; log: MockHub['log'] }> {
  const from = hub.log.length;
  const value = await fn();
  return { value, log: hub.log.slice(from) };
}

/** No request read a safetensors file beyond its header (8-byte length + JSON). */
const headersOnly = (log: MockHub['log']) => log.every((r) => !/\.safetensors(\?|$)/.test(r.url) || r.method === 'HEAD' || (r.range !== undefined && r.bytes <= 64 * 1024));

describe('research-size models over budget are refused before download (the worker path)', () => {
  it.each(['llama-3.2-1b', 'gemma-3-1b'] as const)('%s in float32 on a 4 GiB budget: refused with weights, KV cache, activations and the limit; no weight byte fetched', async (m) => {
    const src = { kind: 'hub' as const, repo: `research/${m}`, endpoint: hub.url };
    const want = expectedParts(m);
    expect(want.total, 'the case is over the budget by its own numbers').toBeGreaterThan(LIMITED.memoryBudget);
    const { value: err, log } = await logged(() => filesFor(src, { limits: LIMITED, cache: null, weightDtype: 'f32' }).then(() => null, (e: unknown) => e as Error));
    expect(err, 'the load was refused').toBeInstanceOf(Error);
    const c = RESEARCH_CONFIGS[m];
    expect(err!.message).toBe(`${new URL(hub.url).host}/research/${m}@main needs ${formatBytes(want.total)} of GPU memory (weights ${want.weights} as f32, KV cache ${want.kv} for 4096 tokens (of max_position_embeddings ${c.max_position_embeddings}), activations ${want.activations}); the test adapter allows 4 GiB`);
    expect(log.some((r) => r.url.endsWith('/config.json')), 'it read the config').toBe(true);
    expect(log.some((r) => /\.safetensors/.test(r.url) && r.range !== undefined), 'it read the headers').toBe(true);
    expect(headersOnly(log), JSON.stringify(log)).toBe(true);
  });

  it('the same checkpoints in binary16 fit the 4 GiB budget: the refusal above is the budget, not the model', async () => {
    for (const m of ['llama-3.2-1b', 'gemma-3-1b'] as const) {
      const { log } = await logged(() => filesFor({ kind: 'hub', repo: `research/${m}`, endpoint: hub.url }, { limits: LIMITED, cache: null, weightDtype: 'f16' }));
      expect(headersOnly(log)).toBe(true);
    }
  });

  it('a GGUF repo (model.gguf, no config.json: the config is in its metadata) is not refused by the header estimate, and nothing of it is downloaded yet', async () => {
    const { log } = await logged(() => filesFor({ kind: 'hub', repo: 'research/smollm2-135m-q4_0', endpoint: hub.url }, { limits: LIMITED, cache: null }));
    expect(log.filter((r) => r.method === 'GET' && /model\.gguf/.test(r.url)), 'no GET of the GGUF file').toEqual([]);
  });
});
