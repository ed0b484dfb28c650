import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startMockHub, writeSparseModel, type MockHub } from '../../tools/mock-hub';
import { RESEARCH_CONFIGS, researchTensors, type ResearchModel } from '../../tools/research_configs';
import { runCli } from '../cli_run';

/**
 * `branchpoint fit`: the size ladder of the four research-size models (real config shapes, sparse
 * bf16 checkpoints: headers only) — every rung's bytes equal a count made here from the config's
 * numbers alone, and a Hub model's ladder is read without one weight byte downloaded.
 */

const MIB = 1024 * 1024;
const MODELS = Object.keys(RESEARCH_CONFIGS) as ResearchModel[];
let root: string;
let hub: MockHub;
const dirs: Record<string, string> = {};

beforeAll(async () => {
  root = fs.mkdtempSync(path.join(os.tmpdir(), 'bp-fit-'));
  for (const m of MODELS) dirs[m] = writeSparseModel(path.join(root, m), RESEARCH_CONFIGS[m], researchTensors(m, 'BF16'));
  hub = await startMockHub({ repos: { 'google/gemma-3-1b-pt': { revisions: { main: dirs['gemma-3-1b'] } } } });
});
afterAll(async () => {
  await hub.close();
  fs.rmSync(root, { recursive: true, force: true });
});

/** Bytes per storage from the config alone: ggml blocks of 32 (Q8_0 34 bytes, Q4_0 18), padded to 4-byte words per matrix. */
function expected(m: ResearchModel, context: number) {
  const c = RESEARCH_CONFIGS[m];
  const D = c.hidden_size, F = c.intermediate_size, L = c.num_hidden_layers, V = c.vocab_size, hd = c.head_dim;
  const q = c.num_attention_heads * hd, kv = c.num_key_value_heads * hd;
  const matrices: [number, number][] = [];
  for (let l = 0; l < L; l++) matrices.push([q, D], [kv, D], [kv, D], [D, q], [F, D], [F, D], [D, F]);
  const embed = V * D;
  const normsPerLayer = 2 * D + (m.startsWith('qwen3') || m.startsWith('gemma') ? 2 * hd : 0) + (m.startsWith('gemma') ? 2 * D : 0);
  const vectors = L * normsPerLayer + D;
  const linear = matrices.reduce((s, [r, k]) => s + r * k, 0);
  const params = embed + linear + vectors;
  const blocked = (bytesPerBlock: number) => matrices.reduce((s, [r, k]) => s + 4 * Math.ceil((r * Math.ceil(k / 32) * bytesPerBlock) / 4), 0);
  const ctx = Math.min(context, c.max_position_embeddings);
  return {
    params, ctx,
    weights: { f32: 4 * params, f16: 2 * (embed + linear) + 4 * vectors, q8_0: 4 * embed + 4 * vectors + blocked(34), q4_0: 4 * embed + 4 * vectors + blocked(18) },
    kv: 2 * L * ctx * kv * 4,
  };
}

interface Rung { storage: 'f32' | 'f16' | 'q8_0' | 'q4_0'; params: number; weight_bytes: number; kv_cache_bytes: number; activation_bytes: number; total_bytes: number; fits: boolean; reason: string }

describe('branchpoint fit --model DIR', () => {
  it.each(MODELS)('%s: weight and KV-cache bytes per storage equal the count from config shapes', async (m) => {
    const r = await runCli(['fit', '--model', dirs[m], '--context', '2048']);
    expect(r.err).toBe('');
    expect(r.code).toBe(0);
    const out = JSON.parse(r.out) as { context_length: number; rungs: Rung[] };
    const e = expected(m, 2048);
    expect(out.context_length).toBe(e.ctx);
    expect(out.rungs.map((x) => x.storage)).toEqual(['f32', 'f16', 'q8_0', 'q4_0']);
    for (const rung of out.rungs) {
      expect(rung.params).toBe(e.params);
      expect(rung.weight_bytes).toBe(e.weights[rung.storage]);
      expect(rung.kv_cache_bytes).toBe(e.kv);
      expect(rung.total_bytes).toBe(rung.weight_bytes + rung.kv_cache_bytes + rung.activation_bytes);
    }
  });

  it('judges each rung against the given memory: Gemma-3-1B fits in 2.25 GiB only as Q4_0 (its float32 embedding dominates), and says why not', async () => {
    const r = await runCli(['fit', '--model', dirs['gemma-3-1b'], '--context', '1024', '--memory-mib', '2304', '--binding-mib', '1024']);
    expect(r.code).toBe(0);
    const rungs = (JSON.parse(r.out) as { rungs: Rung[] }).rungs;
    for (const rung of rungs) expect(rung.fits).toBe(rung.total_bytes <= 2304 * MIB);
    expect(rungs.map((x) => x.fits)).toEqual([false, false, false, true]);
    expect(rungs[0].reason).toMatch(/needs [\d.]+ GiB of GPU memory .*allows 2.3 GiB/);
  });

  it('reads a Hub model\'s ladder from headers only: no weight bytes are requested', async () => {
    const r = await runCli(['fit', '--model', 'google/gemma-3-1b-pt', '--endpoint', hub.url, '--context', '512']);
    expect(r.err).toBe('');
    expect(r.code).toBe(0);
    const rungs = (JSON.parse(r.out) as { rungs: Rung[] }).rungs;
    expect(rungs[3].weight_bytes).toBe(expected('gemma-3-1b', 512).weights.q4_0);
    const weightReads = hub.log.filter((x) => x.url.endsWith('.safetensors') && x.method === 'GET');
    expect(weightReads.length).toBeGreaterThan(0);
    for (const x of weightReads) expect(x.bytes).toBeLessThan(1 * MIB);
  });

  it('refuses a bad --context before reading the model', async () => {
    const r = await runCli(['fit', '--model', dirs['smollm2-135m'], '--context', '0']);
    expect(r.code).toBe(1);
    expect(r.err).toMatch(/--context/);
  });
});
