import * as fs from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CpuBackend } from '../../workers/engine/backend/cpu';
import { Engine } from '../../workers/engine/engine';
import { NodeFiles } from '../../workers/engine/io/node_files';
import { backward, backwardMemory, backwardWeightCopies } from '../../workers/engine/model/backward';
import { readReference, sharedPath } from '../shared';

/**
 * The backward pass (model/backward.ts) against the golden float64 gradients of the margin
 * log p(" Tom") − log p(" Lily") on stories260K (shared/models/stories260K/reference/gradients: a
 * float64 PyTorch autograd forward): at every hook of every layer and the embeddings, clean and
 * corrupted runs, max |Δ| ≤ 1e-4·max |g| + 1e-6.
 */
const DIR = sharedPath('models', 'stories260K', 'reference', 'gradients');
const ref = readReference(`${DIR}/lily_tom_dad.safetensors`);
const cases = JSON.parse(fs.readFileSync(`${DIR}/cases.json`, 'utf8')) as { ids: number[]; corrupt_ids: number[]; good_id: number; bad_id: number; margin: number; corrupt_margin: number }[];
const c = cases[0];
let e: Engine;
beforeAll(async () => { e = await Engine.load(new NodeFiles(sharedPath('models', 'stories260K')), new CpuBackend()); }, 120_000);
afterAll(() => e.dispose());

const HOOKS = ['resid_pre', 'attn_out', 'mlp_out', 'resid_post'] as const;

/** max |a − b| and max |b| over one layer's [T, D] slice. */
function err(got: Float64Array, want: Float32Array): { diff: number; scale: number } {
  let diff = 0, scale = 0;
  for (let i = 0; i < want.length; i++) { diff = Math.max(diff, Math.abs(got[i] - want[i])); scale = Math.max(scale, Math.abs(want[i])); }
  return { diff, scale };
}

describe('backward pass: gradients of the margin equal the float64 reference', () => {
  for (const [run, prefix, margin] of [['clean', '', c.margin], ['corrupted', 'corrupt_', c.corrupt_margin]] as const) {
    it(`${run} run: every hook of every layer and the embeddings`, async () => {
      const ids = run === 'clean' ? c.ids : c.corrupt_ids;
      const g = await backward(e.model, ids, { kind: 'margin', good: [c.good_id], bad: [c.bad_id] });
      expect(Math.abs(g.value - margin)).toBeLessThan(1e-4);
      const T = ids.length, D = e.spec.dModel;
      let worst = 0;
      for (const hook of HOOKS) {
        const want = ref.get(`${prefix}grad_${hook}`)!.data;
        for (let l = 0; l < e.spec.nLayers; l++) {
          const { diff, scale } = err(g.grads.get(`blocks.${l}.hook_${hook}`)!, want.subarray(l * T * D, (l + 1) * T * D));
          expect(diff, `${hook} layer ${l}`).toBeLessThanOrEqual(1e-4 * scale + 1e-6);
          worst = Math.max(worst, diff / scale);
        }
      }
      const emb = err(g.grads.get('hook_embed')!, ref.get(`${prefix}grad_embed`)!.data);
      expect(emb.diff).toBeLessThanOrEqual(1e-4 * emb.scale + 1e-6);
      console.log(`${run}: worst max|Δ|/max|g| over hooks = ${worst.toExponential(2)}, embed ${(emb.diff / emb.scale).toExponential(2)}`);
    }, 60_000);
  }

  it('refuses a prompt whose backward does not fit the budget, with the numbers', async () => {
    const m = backwardMemory(e.spec, 4096, 260_000);
    expect(m.patterns).toBe(5 * 8 * 4096 * 4096 * 4);
    await expect(backward(e.model, c.ids, { kind: 'margin', good: [c.good_id], bad: [c.bad_id] }, { budgetBytes: 1 << 20 }))
      .rejects.toThrow(/a backward over 21 tokens needs [\d.]+ MiB \(activations [\d.]+ MiB, attention patterns [\d.]+ MiB, weight copies [\d.]+ MiB, .* over the budget of 1\.0 MiB: shorten the prompt/);
  });
});

describe('backward memory: the numbers the docstring states (SmolLM-135M shape)', () => {
  const smol = { nLayers: 30, dModel: 576, nHeads: 9, nKvHeads: 3, dHead: 64, dMlp: 1536, dVocab: 49152, attnSoftcap: 0, gatedMlp: true } as Parameters<typeof backwardMemory>[0];
  const MiB = 2 ** 20;
  // the CPU's transposed copies: per layer W_Q, W_O [576, 576], W_K, W_V [192, 576], gate, up, down 576·1536
  const copies = 30 * (2 * 576 * 576 + 2 * 192 * 576 + 3 * 576 * 1536);
  it('T = 256 keeping resid_pre on the CPU: ≈ 0.81 GiB, half of it the transposed weights', () => {
    const m = backwardMemory(smol, 256, copies, 30 * 576);
    // per layer and position 6·576 (resid_pre, ln1, attn_out, resid_mid, mlp_out, resid_post) + q, z 2·576 + k, v 2·192 + pre, up, post 3·1536 = 9600 floats
    expect(Math.round(m.activations / MiB)).toBe(281);
    expect(Math.round(m.patterns / MiB)).toBe(68);
    expect(Math.round(m.weights / MiB)).toBe(405);
    // kept: 256·17280 values as float32 + float64; working: two layers' worth of 256·9600 float32 and dS [9, 256, 256]
    expect(m.gradients).toBe(256 * 30 * 576 * 12 + 2 * 256 * 9600 * 4 + 9 * 256 * 256 * 4);
    expect(m.total / 2 ** 30).toBeGreaterThan(0.8);
    expect(m.total / 2 ** 30).toBeLessThan(0.82);
  });
  it('T = 1024: ≈ 1 GiB of patterns, over the 2 GiB default', () => {
    const m = backwardMemory(smol, 1024, copies, 30 * 576);
    expect(m.patterns / 2 ** 30).toBeCloseTo(1.05, 1);
    expect(m.total).toBeGreaterThan(2 ** 31);
  });
  it('the CPU keeps a transposed copy of every block matrix (the unembedding too past 8 logit rows); WebGPU none', () => {
    let blocks = 0;
    for (const bw of e.model.weights.blocks) for (const p of [bw.q, bw.k, bw.v, bw.o, bw.gate, bw.up, bw.down]) blocks += p ? p.w.shape[0] * p.w.shape[1] : 0;
    expect(backwardWeightCopies(e.backend, e.model.weights, 1)).toBe(blocks);
    expect(backwardWeightCopies(e.backend, e.model.weights, 9)).toBe(blocks + e.spec.dVocab * e.spec.dModel);
    expect(backwardWeightCopies({ kind: 'webgpu' } as typeof e.backend, e.model.weights, 9)).toBe(0);
  });
});
