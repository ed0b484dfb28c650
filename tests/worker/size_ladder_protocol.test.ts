import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import * as Comlink from 'comlink';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { InferenceApi } from '../../workers/protocol';
import { startMockHub, writeSparseModel, type MockHub } from '../../tools/mock-hub';
import { RESEARCH_CONFIGS, researchTensors } from '../../tools/research_configs';
import { inProcessWorker } from './in_process';

/**
 * The load control's size ladder through the worker (InferenceApi.sizeLadder): Qwen3-0.6B's real
 * shapes on the mock Hub (a sparse bf16 checkpoint) — every rung's bytes equal a count from the
 * config's numbers, the verdict follows the budget given, and no weight byte is downloaded.
 */
const MIB = 1024 * 1024;
let api: Comlink.Remote<InferenceApi>;
let close: () => void;
let hub: MockHub;
let root: string;

beforeAll(async () => {
  root = fs.mkdtempSync(path.join(os.tmpdir(), 'bp-ladder-'));
  writeSparseModel(path.join(root, 'qwen3'), RESEARCH_CONFIGS['qwen3-0.6b'], researchTensors('qwen3-0.6b', 'BF16'));
  hub = await startMockHub({ repos: { 'Qwen/Qwen3-0.6B': { revisions: { main: path.join(root, 'qwen3') } } } });
  ({ api, close } = await inProcessWorker());
}, 60_000);
afterAll(async () => {
  close();
  await hub.close();
  fs.rmSync(root, { recursive: true, force: true });
});

describe('sizeLadder over the worker protocol', () => {
  it('Qwen3-0.6B: f32 and KV bytes from config shapes; fits follows a 1.5 GiB budget; headers only', async () => {
    const c = RESEARCH_CONFIGS['qwen3-0.6b'];
    const D = c.hidden_size, hd = c.head_dim, q = c.num_attention_heads * hd, kv = c.num_key_value_heads * hd, F = c.intermediate_size;
    const params = c.vocab_size * D + D + c.num_hidden_layers * (2 * D + 2 * hd + 2 * q * D + 2 * kv * D + 3 * F * D);
    const ladder = await api.sizeLadder({ kind: 'hub', repo: 'Qwen/Qwen3-0.6B', endpoint: hub.url }, 'cpu', { contextLength: 1024, memoryBudgetBytes: 1536 * MIB });
    expect(ladder.contextLength).toBe(1024);
    expect(ladder.rungs.map((r) => r.weightDtype)).toEqual(['f32', 'f16', 'q8_0', 'q4_0']);
    expect(ladder.rungs[0].estimate.weightBytes).toBe(4 * params);
    for (const r of ladder.rungs) {
      expect(r.estimate.kvCacheBytes).toBe(2 * c.num_hidden_layers * 1024 * kv * 4);
      expect(r.fits).toBe(r.estimate.totalBytes <= 1536 * MIB);
    }
    expect(ladder.rungs[0].fits).toBe(false);
    expect(ladder.rungs[0].reason).toMatch(/allows 1\.5 GiB/);
    const weightReads = hub.log.filter((x) => x.url.endsWith('.safetensors') && x.method === 'GET');
    for (const x of weightReads) expect(x.bytes).toBeLessThan(MIB);
    expect(await api.status()).toEqual({ loaded: false, deviceLost: null });
  });

  it('refuses a source it cannot estimate with the reason', async () => {
    await expect(api.sizeLadder({ kind: 'hub', repo: 'nobody/no-such-model', endpoint: hub.url }, 'cpu')).rejects.toThrow(/no-such-model/);
  });
});
