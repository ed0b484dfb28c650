import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CpuBackend } from '../../workers/engine/backend/cpu';
import { assertFits, estimateModel, formatBytes, judge, ModelTooLargeError, type DeviceLimits } from '../../workers/engine/io/estimate';
import { HubFiles } from '../../workers/engine/io/hub_files';
import { NodeFiles } from '../../workers/engine/io/node_files';
import { loadTransformer } from '../../workers/engine/model/load';
import { filesFor } from '../../workers/sources';
import { defaultRepos, startMockHub, type MockHub } from '../../tools/mock-hub';
import { encodeHeader } from '../../tools/safetensors_write';
import { sharedPath } from '../shared';

/**
 * The pre-download estimate: parameter counts read from safetensors headers only (range
 * requests) equal what the engine actually uploads, and a model too big for the device is refused
 * with a message naming the limit — before a single weight byte is fetched.
 */

const FIXTURES = ['gpt2', 'gpt_neox', 'llama', 'llama3', 'mistral', 'qwen2', 'qwen3', 'gemma2', 'phi3'].map((a) => `fixtures/${a}-tiny`);
const MODELS = ['models/stories260K', 'models/aidreams260K'];
const GiB = 2 ** 30;
/** SwiftShader's limits (../shared/TESTING.md) and an 8 GiB budget. */
const ADAPTER: DeviceLimits = { maxBufferSize: 2 * GiB, maxStorageBufferBindingSize: GiB, memoryBudget: 8 * GiB, device: 'the test adapter' };

let hub: MockHub;
let tmp: string;
beforeAll(async () => {
  tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'bp-estimate-'));
  hub = await startMockHub({ repos: { ...defaultRepos(), 'big/embedding': { revisions: { main: bigEmbeddingModel() } }, 'big/context': { revisions: { main: longContextModel() } } } });
});
afterAll(async () => {
  await hub.close();
  fs.rmSync(tmp, { recursive: true, force: true });
});

/** A CPU backend that counts the elements of every weight uploaded (the engine's real parameter count). */
class CountingBackend extends CpuBackend {
  uploaded = 0;
  /** Elements of 2-D weights (the matrices weightDtype 'f16' stores as halves). */
  matrices = 0;
  override upload(data: Float32Array, shape: readonly number[]) {
    this.uploaded += data.length;
    if (shape.length === 2) this.matrices += data.length;
    return super.upload(data, shape);
  }
}

/** A sparse safetensors file: the header, then zeros up to the size the header describes (no disk used). */
function writeSparse(dir: string, file: string, tensors: { name: string; shape: number[]; dtype: 'F32' | 'F16' | 'BF16' }[]): void {
  const { head, fileSize } = encodeHeader(tensors);
  fs.writeFileSync(path.join(dir, file), head);
  fs.truncateSync(path.join(dir, file), fileSize);
}

function llamaConfig(over: Record<string, unknown>): Record<string, unknown> {
  return {
    model_type: 'llama', hidden_size: 2048, intermediate_size: 8192, num_attention_heads: 32, num_key_value_heads: 8, head_dim: 64,
    num_hidden_layers: 2, vocab_size: 151936, max_position_embeddings: 4096, rms_norm_eps: 1e-5, rope_theta: 10000, hidden_act: 'silu',
    tie_word_embeddings: true, ...over,
  };
}

/** Llama-shaped, 2 layers, a 151936 × 2048 BF16 embedding: 0.58 GiB on disk, 1.16 GiB widened to f32. */
function bigEmbeddingModel(): string {
  const dir = path.join(tmp, 'big-embedding');
  fs.mkdirSync(dir);
  const c = llamaConfig({});
  fs.writeFileSync(path.join(dir, 'config.json'), JSON.stringify(c));
  writeSparse(dir, 'model.safetensors', [
    { name: 'model.embed_tokens.weight', shape: [151936, 2048], dtype: 'BF16' },
    { name: 'model.norm.weight', shape: [2048], dtype: 'BF16' },
  ]);
  return dir;
}

/** Small weights in two shards, but a 1M-token context: each layer's K or V cache is 512 MiB (under the binding limit), all 16 layers' 16 GiB. */
function longContextModel(): string {
  const dir = path.join(tmp, 'long-context');
  fs.mkdirSync(dir);
  fs.writeFileSync(path.join(dir, 'config.json'), JSON.stringify(llamaConfig({ vocab_size: 1000, max_position_embeddings: 1 << 20, num_hidden_layers: 16, num_key_value_heads: 2 })));
  writeSparse(dir, 'model-00001-of-00002.safetensors', [{ name: 'model.embed_tokens.weight', shape: [1000, 2048], dtype: 'F16' }]);
  writeSparse(dir, 'model-00002-of-00002.safetensors', [{ name: 'model.norm.weight', shape: [2048], dtype: 'F16' }]);
  fs.writeFileSync(path.join(dir, 'model.safetensors.index.json'), JSON.stringify({
    metadata: {}, weight_map: { 'model.embed_tokens.weight': 'model-00001-of-00002.safetensors', 'model.norm.weight': 'model-00002-of-00002.safetensors' },
  }));
  return dir;
}

/** Requests logged while `fn` runs. */
async function logged<T>(fn: () => Promise<T>): Promise<{ value: T; log: MockHub['log'] }> {
  const from = hub.log.length;
  const value = await fn();
  return { value, log: hub.log.slice(from) };
}

const SHARD = /\.safetensors(\?|$)/;

/** True when no request fetched a safetensors file beyond its header. */
function onlyHeadersFetched(log: MockHub['log'], headerEnd: number): boolean {
  return log.every((r) => !SHARD.test(r.url) || r.method === 'HEAD' || (r.range !== undefined && r.bytes <= headerEnd));
}

describe('header-only estimate', () => {
  it.each([...FIXTURES, ...MODELS])('%s: parameter count from the headers equals the elements the engine uploads', async (repo) => {
    const { value: e, log } = await logged(() => estimateModel(new HubFiles(repo, { endpoint: hub.url })));
    const b = new CountingBackend();
    const dir = defaultRepos()[repo].revisions.main;
    await loadTransformer(new NodeFiles(dir), b);
    b.dispose();
    expect(e.params).toBe(b.uploaded);
    expect(e.weightBytes).toBe(4 * b.uploaded);
    expect(e.paramsByDtype).toEqual({ F32: b.uploaded });
    expect(onlyHeadersFetched(log, 1 << 16)).toBe(true);
    const half = await estimateModel(new HubFiles(repo, { endpoint: hub.url }), { weightDtype: 'f16' });
    expect(b.matrices).toBeGreaterThan(0);
    expect(half.weightBytes).toBe(2 * b.matrices + 4 * (b.uploaded - b.matrices));
  });

  it('llama-tiny: the count matches the architecture worked out by hand from config.json', async () => {
    const c = JSON.parse(fs.readFileSync(sharedPath('fixtures', 'llama-tiny', 'config.json'), 'utf8'));
    const D = c.hidden_size, V = c.vocab_size, F = c.intermediate_size, kv = c.num_key_value_heads * c.head_dim;
    const perLayer = D * D + 2 * D * kv + D * D + 3 * D * F + 2 * D; // q, k, v, o, gate/up/down, two norms
    const expected = 2 * V * D + c.num_hidden_layers * perLayer + D; // embed + lm_head (untied), final norm
    const e = await estimateModel(new HubFiles('fixtures/llama-tiny', { endpoint: hub.url }));
    expect(e.params).toBe(expected);
    expect(e.kvCacheBytes).toBe(2 * c.num_hidden_layers * c.max_position_embeddings * kv * 4);
    expect(e.largest.name).toMatch(/embed_tokens|lm_head/);
    expect(judge(e, ADAPTER).fits).toBe(true);
  });
});

describe('refusal before download', () => {
  it('accepts an embedding larger than maxStorageBufferBindingSize (split by rows on load); f16 halves its bytes', async () => {
    const { value: e, log } = await logged(() => assertFits(new HubFiles('big/embedding', { endpoint: hub.url }), ADAPTER));
    expect(e.largest).toEqual({ name: 'model.embed_tokens.weight', shape: [151936, 2048], bytes: 151936 * 2048 * 4 });
    expect(e.largest.bytes).toBeGreaterThan(ADAPTER.maxStorageBufferBindingSize);
    expect(e.largestUnsplittable.name).toBe('the K (or V) cache of one layer');
    expect(onlyHeadersFetched(log, 4096)).toBe(true);
    expect(log.filter((r) => SHARD.test(r.url) && r.bytes > 0).map((r) => r.range)).toEqual(['bytes=0-7', expect.stringMatching(/^bytes=8-\d+$/)]);
    const half = await estimateModel(new HubFiles('big/embedding', { endpoint: hub.url }), { weightDtype: 'f16' });
    expect(half.weightBytes).toBe(151936 * 2048 * 2 + 2048 * 4);
    expect(judge(half, ADAPTER).reason).toContain(`weights ${formatBytes(half.weightBytes)} as f16`);
  });

  it('refuses a buffer that cannot be split (one layer\'s K or V cache) larger than maxStorageBufferBindingSize, naming both', async () => {
    const e = await estimateModel(new HubFiles('big/context', { endpoint: hub.url }));
    const v = judge(e, { ...ADAPTER, maxStorageBufferBindingSize: 256 * 2 ** 20 });
    expect(v.fits).toBe(false);
    expect(v.reason).toContain('the K (or V) cache of one layer is 512 MiB, larger than maxStorageBufferBindingSize 256 MiB of the test adapter');
  });

  it('refuses a model whose total exceeds the memory budget, itemising weights, KV cache and activations', async () => {
    const { value: err, log } = await logged(() => assertFits(new HubFiles('big/context', { endpoint: hub.url }), ADAPTER).then(() => null, (e: unknown) => e));
    expect(err).toBeInstanceOf(ModelTooLargeError);
    const v = (err as ModelTooLargeError).verdict;
    expect(v.estimate.shards).toEqual(['model-00001-of-00002.safetensors', 'model-00002-of-00002.safetensors']);
    expect(v.estimate.kvCacheBytes).toBe(2 * 16 * (1 << 20) * 2 * 64 * 4);
    expect(v.reason).toContain(`needs ${formatBytes(v.estimate.totalBytes)} of GPU memory (weights ${formatBytes(v.estimate.weightBytes)} as f32, KV cache 16 GiB for 1048576 tokens`);
    expect(v.reason).toContain('; the test adapter allows 8 GiB');
    expect(onlyHeadersFetched(log, 4096)).toBe(true);
  });

  it('the worker path (filesFor with limits) refuses before fetching weights; without limits it opens the repo', async () => {
    const src = { kind: 'hub' as const, repo: 'big/embedding', endpoint: hub.url };
    const small = { ...ADAPTER, maxStorageBufferBindingSize: 4 * 2 ** 20 }; // under one layer's 8 MiB K cache
    const { value: err, log } = await logged(() => filesFor(src, { limits: small, cache: null }).then(() => null, (e: unknown) => e));
    expect((err as Error).message).toContain('larger than maxStorageBufferBindingSize');
    expect(onlyHeadersFetched(log, 4096)).toBe(true);
    const { log: none } = await logged(() => filesFor(src, { cache: null }));
    expect(none).toEqual([]);
  });

  it('refuses an unsupported model_type from config.json alone', async () => {
    const dir = path.join(tmp, 'unknown-arch');
    fs.mkdirSync(dir);
    fs.writeFileSync(path.join(dir, 'config.json'), JSON.stringify({ model_type: 'mamba' }));
    hub.setRepo('odd/mamba', { revisions: { main: dir } });
    await expect(estimateModel(new HubFiles('odd/mamba', { endpoint: hub.url }))).rejects.toThrow('unsupported model_type "mamba"');
  });
});
