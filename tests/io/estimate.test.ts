import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CpuBackend } from '../../workers/engine/backend/cpu';
import { assertFits, estimateModel, judge, ModelTooLargeError, type DeviceLimits } from '../../workers/engine/model/estimate';
import { formatBytes } from '../../workers/engine/io/bytes';
import { Engine } from '../../workers/engine/engine';
import { HubFiles } from '../../workers/engine/io/hub_files';
import { NodeFiles } from '../../workers/engine/io/node_files';
import { loadTransformer } from '../../workers/engine/model/load';
import { filesFor } from '../../workers/sources';
import { defaultRepos, llamaTensors, startMockHub, writeSparseModel, type MockHub } from '../../tools/mock-hub';
import { sharedPath } from '../shared';

/**
 * The pre-download estimate: parameter counts read from safetensors headers only (range
 * requests) equal what the engine actually uploads, the KV cache is sized for the positions the
 * load allocates (min(max_position_embeddings, contextLength = 4096 by default)), and a model too
 * big for the device is refused with a message naming the limit — before a single weight byte is
 * fetched. The big checkpoints below are sparse (tools/mock-hub.ts writeSparseModel): no disk used.
 */

const FIXTURES = ['gpt2', 'gpt_neox', 'llama', 'llama3', 'mistral', 'qwen2', 'qwen3', 'gemma2', 'phi3'].map((a) => `fixtures/${a}-tiny`);
const MODELS = ['models/stories260K', 'models/aidreams260K'];
const GiB = 2 ** 30;
/** SwiftShader's limits (../shared/TESTING.md) and an 8 GiB budget. */
const ADAPTER: DeviceLimits = { maxBufferSize: 2 * GiB, maxStorageBufferBindingSize: GiB, memoryBudget: 8 * GiB, device: 'the test adapter' };

let hub: MockHub;
let tmp: string;
/** Folder of 'tiny/long' (loaded from disk as well as estimated over the Hub). */
let tinyLongDir: string;
beforeAll(async () => {
  tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'bp-estimate-'));
  tinyLongDir = tinyLongContextModel();
  hub = await startMockHub({
    repos: {
      ...defaultRepos(),
      'big/embedding': { revisions: { main: bigEmbeddingModel() } },
      'big/context': { revisions: { main: longContextModel() } },
      'big/weights': { revisions: { main: bigWeightsModel() } },
      'meta/llama-3.2-1b-shaped': { revisions: { main: llama32Model() } },
      'tiny/long': { revisions: { main: tinyLongDir } },
    },
  });
});
afterAll(async () => {
  await hub.close();
  fs.rmSync(tmp, { recursive: true, force: true });
});

/** A CPU backend that counts the elements of every weight uploaded or adopted (the engine's real parameter count) and of every zero-filled buffer (the KV cache). */
class CountingBackend extends CpuBackend {
  uploaded = 0;
  /** Elements of 2-D weights (the matrices weightDtype 'f16' stores as halves). */
  matrices = 0;
  zeroed = 0;
  private count(data: Float32Array, shape: readonly number[]) {
    this.uploaded += data.length;
    if (shape.length === 2) this.matrices += data.length;
  }
  override upload(data: Float32Array, shape: readonly number[]) {
    this.count(data, shape);
    return super.upload(data, shape);
  }
  /** A decoded safetensors tensor the CPU backend keeps as its storage (Backend.adopt) is a weight too. */
  override adopt(data: Float32Array, shape: readonly number[]) {
    this.count(data, shape);
    return super.adopt(data, shape);
  }
  override zeros(shape: readonly number[]) {
    this.zeroed += shape.reduce((a, b) => a * b, 1);
    return super.zeros(shape);
  }
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
  return writeSparseModel(path.join(tmp, 'big-embedding'), llamaConfig({}), [
    { name: 'model.embed_tokens.weight', shape: [151936, 2048], dtype: 'BF16' },
    { name: 'model.norm.weight', shape: [2048], dtype: 'BF16' },
  ]);
}

/**
 * Small weights in two shards, but a 1M-token context: at the default 4096 positions each layer's
 * K or V cache is 2 MiB (64 MiB for all 16 layers); for the whole context 512 MiB each, 16 GiB in all.
 */
function longContextModel(): string {
  return writeSparseModel(path.join(tmp, 'long-context'), llamaConfig({ vocab_size: 1000, max_position_embeddings: 1 << 20, num_hidden_layers: 16, num_key_value_heads: 2 }), [
    { name: 'model.embed_tokens.weight', shape: [1000, 2048], dtype: 'F16' },
    { name: 'model.norm.weight', shape: [2048], dtype: 'F16' },
  ], 2);
}

/**
 * Two layers of a 70B-class Llama (d_model 8192, d_mlp 28672, 8 KV heads × 128, vocab 128256,
 * untied) in BF16 over two shards: 3.8 G parameters, 14.2 GiB of float32 weights — over an 8 GiB
 * budget from the weights alone, with every buffer splittable and a small KV cache.
 */
function bigWeightsModel(): string {
  const c = llamaConfig({ hidden_size: 8192, intermediate_size: 28672, num_attention_heads: 64, num_key_value_heads: 8, head_dim: 128, vocab_size: 128256, max_position_embeddings: 131072, tie_word_embeddings: false });
  return writeSparseModel(path.join(tmp, 'big-weights'), c, llamaTensors(c, 'BF16'), 2);
}

/** Llama-3.2-1B's config.json (the curated catalog model) and a BF16 checkpoint of its shapes. */
function llama32Model(): string {
  const c = llamaConfig({
    hidden_size: 2048, intermediate_size: 8192, num_attention_heads: 32, num_key_value_heads: 8, head_dim: 64, num_hidden_layers: 16,
    vocab_size: 128256, max_position_embeddings: 131072, rope_theta: 500000, tie_word_embeddings: true,
    rope_scaling: { factor: 32, high_freq_factor: 4, low_freq_factor: 1, original_max_position_embeddings: 8192, rope_type: 'llama3' },
  });
  return writeSparseModel(path.join(tmp, 'llama-3.2-1b'), c, llamaTensors(c, 'BF16'));
}

/** A complete, loadable 2-layer Llama of all-zero weights that declares a 1M-token context. */
function tinyLongContextModel(): string {
  const c = llamaConfig({ hidden_size: 16, intermediate_size: 32, num_attention_heads: 2, num_key_value_heads: 1, head_dim: 8, vocab_size: 64, max_position_embeddings: 1 << 20 });
  return writeSparseModel(path.join(tmp, 'tiny-long'), c, llamaTensors(c, 'F32'));
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
    expect(c.max_position_embeddings).toBeLessThan(4096);
    expect([e.nCtx, e.contextLength]).toEqual([c.max_position_embeddings, c.max_position_embeddings]);
    expect(e.kvCacheBytes).toBe(2 * c.num_hidden_layers * c.max_position_embeddings * kv * 4);
    expect(e.largest.name).toMatch(/embed_tokens|lm_head/);
    expect(judge(e, ADAPTER).fits).toBe(true);
  });

  it('the KV cache the estimate sizes is the one the load allocates: 4096 positions by default, or the contextLength asked for', async () => {
    for (const [contextLength, positions] of [[undefined, 4096], [5000, 5000]] as const) {
      const e = await estimateModel(new HubFiles('tiny/long', { endpoint: hub.url }), { contextLength });
      expect([e.nCtx, e.contextLength]).toEqual([1 << 20, positions]);
      expect(e.kvCacheBytes).toBe(2 * 2 * positions * 8 * 4); // K and V, 2 layers, 1 KV head × 8
      const b = new CountingBackend();
      const { model } = await loadTransformer(new NodeFiles(tinyLongDir), b, undefined, { contextLength });
      expect(model.contextLength).toBe(positions);
      expect(4 * b.zeroed).toBe(e.kvCacheBytes);
      b.dispose();
    }
    const capped = await estimateModel(new HubFiles('tiny/long', { endpoint: hub.url }), { contextLength: 2 << 20 });
    expect(capped.contextLength).toBe(1 << 20);
  });

  it('Engine.load passes contextLength on, and ModelInfo reports it next to nCtx (max_position_embeddings)', async () => {
    const b = new CountingBackend();
    const engine = await Engine.load(new NodeFiles(sharedPath('fixtures', 'llama-tiny')), b, undefined, { contextLength: 32 });
    const e = await estimateModel(new HubFiles('fixtures/llama-tiny', { endpoint: hub.url }), { contextLength: 32 });
    expect(engine.info()).toMatchObject({ nCtx: 128, contextLength: 32 });
    expect(4 * b.zeroed).toBe(e.kvCacheBytes);
    expect(() => engine.encodePrompt({ prompt: 'word '.repeat(40) })).toThrow('longer than the working context of 32 tokens');
    engine.dispose();
  });

  it('refuses a contextLength that is not a positive integer, in the estimate and in the load, before any weight is read', async () => {
    for (const bad of [0, -1, 2.5, NaN]) {
      const msg = `contextLength must be a positive whole number of tokens, not ${bad}`;
      await expect(estimateModel(new HubFiles('tiny/long', { endpoint: hub.url }), { contextLength: bad })).rejects.toThrow(msg);
      await expect(loadTransformer(new NodeFiles(tinyLongDir), new CpuBackend(), undefined, { contextLength: bad })).rejects.toThrow(msg);
    }
  });
});

describe('refusal before download', () => {
  it('accepts an embedding larger than maxStorageBufferBindingSize (split by rows on load); f16 halves its bytes', async () => {
    const { value: e, log } = await logged(() => assertFits(new HubFiles('big/embedding', { endpoint: hub.url }), ADAPTER));
    expect(e.largest).toEqual({ name: 'model.embed_tokens.weight', shape: [151936, 2048], bytes: 151936 * 2048 * 4 });
    expect(e.largest.bytes).toBeGreaterThan(ADAPTER.maxStorageBufferBindingSize);
    expect(e.largestUnsplittable.name).toBe('the K (or V) cache of one layer for 4096 tokens');
    expect(onlyHeadersFetched(log, 4096)).toBe(true);
    expect(log.filter((r) => SHARD.test(r.url) && r.bytes > 0).map((r) => r.range)).toEqual(['bytes=0-7', expect.stringMatching(/^bytes=8-\d+$/)]);
    const half = await estimateModel(new HubFiles('big/embedding', { endpoint: hub.url }), { weightDtype: 'f16' });
    expect(half.weightBytes).toBe(151936 * 2048 * 2 + 2048 * 4);
    expect(judge(half, ADAPTER).reason).toContain(`weights ${formatBytes(half.weightBytes)} as f16`);
  });

  it('sizes the KV cache and the activations for the working context, not max_position_embeddings', async () => {
    const files = new HubFiles('big/context', { endpoint: hub.url });
    const e = await estimateModel(files);
    expect([e.nCtx, e.contextLength]).toEqual([1 << 20, 4096]);
    expect(e.kvCacheBytes).toBe(2 * 16 * 4096 * 2 * 64 * 4);
    const v = judge(e, ADAPTER);
    expect(v.fits).toBe(true);
    expect(v.reason).toContain('KV cache 64 MiB for 4096 tokens (of max_position_embeddings 1048576)');
    // The activation allowance covers min(contextLength, 512) tokens: the same at 4096 and 1M positions, less at 100.
    expect((await estimateModel(files, { contextLength: 1 << 20 })).activationBytes).toBe(e.activationBytes);
    expect((await estimateModel(files, { contextLength: 100 })).activationBytes).toBeLessThan(e.activationBytes);
  });

  it('refuses a buffer that cannot be split (one layer\'s K or V cache for a long contextLength asked for) larger than maxStorageBufferBindingSize, naming both', async () => {
    const e = await estimateModel(new HubFiles('big/context', { endpoint: hub.url }), { contextLength: 1 << 20 });
    const small = { ...ADAPTER, maxStorageBufferBindingSize: 256 * 2 ** 20 };
    const v = judge(e, small);
    expect(v.fits).toBe(false);
    expect(v.reason).toBe(`${e.label}: the K (or V) cache of one layer for 1048576 tokens is 512 MiB, larger than maxStorageBufferBindingSize 256 MiB of the test adapter`);
    expect(judge(await estimateModel(new HubFiles('big/context', { endpoint: hub.url })), small).fits).toBe(true);
  });

  it('refuses a model whose weights alone exceed the memory budget, itemising weights, KV cache and activations; as f16 it fits', async () => {
    const { value: err, log } = await logged(() => assertFits(new HubFiles('big/weights', { endpoint: hub.url }), ADAPTER).then(() => null, (e: unknown) => e));
    expect(err).toBeInstanceOf(ModelTooLargeError);
    const v = (err as ModelTooLargeError).verdict;
    const D = 8192, F = 28672, V = 128256, kv = 8 * 128;
    const params = 2 * V * D + 2 * (2 * D * D + 2 * D * kv + 3 * D * F + 2 * D) + D;
    expect(v.estimate.params).toBe(params);
    expect(v.estimate.weightBytes).toBe(4 * params);
    expect(v.estimate.weightBytes).toBeGreaterThan(ADAPTER.memoryBudget);
    expect(v.estimate.shards).toEqual(['model-00001-of-00002.safetensors', 'model-00002-of-00002.safetensors']);
    expect(v.estimate.kvCacheBytes).toBe(2 * 2 * 4096 * kv * 4);
    expect(v.estimate.largestUnsplittable.bytes).toBeLessThan(ADAPTER.maxStorageBufferBindingSize); // no single buffer is at fault
    expect(v.reason).toContain(`needs ${formatBytes(v.estimate.totalBytes)} of GPU memory (weights 14.2 GiB as f32, KV cache 64 MiB for 4096 tokens (of max_position_embeddings 131072), activations ${formatBytes(v.estimate.activationBytes)}); the test adapter allows 8 GiB`);
    expect(onlyHeadersFetched(log, 4096)).toBe(true);
    const half = judge(await estimateModel(new HubFiles('big/weights', { endpoint: hub.url }), { weightDtype: 'f16' }), ADAPTER);
    expect(half.fits).toBe(true);
    expect(half.reason).toContain('weights 7.1 GiB as f16');
  });

  it('Llama-3.2-1B (max_position_embeddings 131072) is not refused at the default context: its KV cache is sized for 4096 tokens', async () => {
    const swiftShader4G: DeviceLimits = { ...ADAPTER, memoryBudget: 4 * GiB };
    const files = new HubFiles('meta/llama-3.2-1b-shaped', { endpoint: hub.url });
    const e = await estimateModel(files, { weightDtype: 'f16' });
    expect(e.params).toBe(1_235_814_400);
    expect([e.nCtx, e.contextLength]).toEqual([131072, 4096]);
    expect(e.kvCacheBytes).toBe(2 * 16 * 4096 * 8 * 64 * 4); // 256 MiB
    const v = judge(e, swiftShader4G);
    expect(v.fits, v.reason).toBe(true);
    expect(v.reason).toContain('KV cache 256 MiB for 4096 tokens (of max_position_embeddings 131072)');
    // Sized for its whole context the KV cache alone would be 8 GiB, as it was before the cap.
    const whole = judge(await estimateModel(files, { weightDtype: 'f16', contextLength: 131072 }), swiftShader4G);
    expect(whole.fits).toBe(false);
    expect(whole.reason).toContain('KV cache 8 GiB for 131072 tokens (of max_position_embeddings 131072)');
    // float32 weights are 4.6 GiB: over 4 GiB at any context, within Chrome's largest reported budget (8 GiB).
    const f32 = await estimateModel(files);
    expect(judge(f32, swiftShader4G).reason).toContain('weights 4.6 GiB as f32, KV cache 256 MiB for 4096 tokens');
    expect(judge(f32, swiftShader4G).fits).toBe(false);
    expect(judge(f32, ADAPTER).fits).toBe(true);
  });

  it('the worker path (filesFor with limits) refuses before fetching weights, for the contextLength the load will use; without limits it opens the repo', async () => {
    const src = { kind: 'hub' as const, repo: 'big/embedding', endpoint: hub.url };
    const small = { ...ADAPTER, maxStorageBufferBindingSize: 4 * 2 ** 20 }; // under one layer's 8 MiB K cache
    const { value: err, log } = await logged(() => filesFor(src, { limits: small, cache: null }).then(() => null, (e: unknown) => e));
    expect((err as Error).message).toContain('the K (or V) cache of one layer for 4096 tokens is 8 MiB, larger than maxStorageBufferBindingSize');
    expect(onlyHeadersFetched(log, 4096)).toBe(true);
    const { log: none } = await logged(() => filesFor(src, { cache: null }));
    expect(none).toEqual([]);
    const long = { kind: 'hub' as const, repo: 'big/context', endpoint: hub.url };
    await expect(filesFor(long, { limits: ADAPTER, cache: null })).resolves.toBeDefined();
    await expect(filesFor(long, { limits: ADAPTER, cache: null, contextLength: 1 << 20 })).rejects.toThrow('KV cache 16 GiB for 1048576 tokens (of max_position_embeddings 1048576)');
  });

  it('refuses an unsupported model_type from config.json alone', async () => {
    const dir = path.join(tmp, 'unknown-arch');
    fs.mkdirSync(dir);
    fs.writeFileSync(path.join(dir, 'config.json'), JSON.stringify({ model_type: 'mamba' }));
    hub.setRepo('odd/mamba', { revisions: { main: dir } });
    await expect(estimateModel(new HubFiles('odd/mamba', { endpoint: hub.url }))).rejects.toThrow('unsupported model_type "mamba"');
  });
});
