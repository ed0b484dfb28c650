import * as fs from 'node:fs';
import { afterAll, describe, expect, it } from 'vitest';
import { CpuBackend } from '../../workers/engine/backend/cpu';
import type { QuantFormat } from '../../workers/engine/backend/quant';
import { NodeFiles } from '../../workers/engine/io/node_files';
import { loadTransformer } from '../../workers/engine/model/load';
import { runCaptured } from '../model_run';
import { RunContext } from '../../workers/engine/model/run_context';
import { F32_TOL, maxDiff, realModel } from '../reference_math';
import { readReference, sharedPath } from '../shared';

/**
 * Linear weights block-quantised on load (weightDtype 'q8_0' / 'q4_0'; embeddings, unembedding and
 * norms stay float32) against the float32 REFERENCE logits of every fixture and both real models.
 *
 * Tolerance, from the formats' precision: a block with step d rounds each weight to a grid of
 * spacing d (Q8_0: d = max|x|/127; Q4_0: d = max|x|/8), an error uniform on [−d/2, d/2] with
 * variance d²/12. So matrix m is perturbed by a relative RMS error
 *   ρ_m = sqrt(Σ_blocks 32·d²/12 / Σ w²),
 * computed here from the checkpoint's own weights (the closed form, not the engine). The errors are
 * zero-mean and independent across matrices, so their effects on a logit add in quadrature, each
 * about ρ_m·max|z| to first order:
 *   tol = F32_TOL + K · sqrt(Σ_m ρ_m²) · max|z_ref|,  K = 4 (a 4σ allowance for the largest of
 *   the positions × vocabulary entries compared).
 * And the weights must really have been quantised: the error exceeds 10·F32_TOL.
 */
const K = 4;
const STEP: Record<QuantFormat, number> = { q8_0: 1 / 127, q4_0: 1 / 8 };
const FORMATS: QuantFormat[] = ['q8_0', 'q4_0'];
const FLOAT_TABLES = /(embed_tokens|wte|wpe|embed_in|embed_out|lm_head)\.weight$/;

/** sqrt(Σ_m ρ_m²) over the checkpoint's linear weights (every 2-D tensor but the embedding tables). */
function quantNoise(weights: Map<string, { data: Float32Array; shape: number[] }>, step: number): number {
  let sum = 0;
  for (const [name, t] of weights) {
    if (t.shape.length !== 2 || FLOAT_TABLES.test(name)) continue;
    const [rows, cols] = t.shape;
    let noise = 0, power = 0;
    for (let r = 0; r < rows; r++) {
      for (let c0 = 0; c0 < cols; c0 += 32) {
        let amax = 0;
        for (let c = c0; c < Math.min(cols, c0 + 32); c++) amax = Math.max(amax, Math.abs(t.data[r * cols + c]));
        noise += (Math.min(32, cols - c0) * (amax * step) ** 2) / 12;
      }
      for (let c = 0; c < cols; c++) power += t.data[r * cols + c] ** 2;
    }
    sum += noise / power;
  }
  return Math.sqrt(sum);
}

const measured: Record<string, Record<string, string>> = {};
afterAll(() => console.table(measured));

interface Case { label: string; dir: string; sequences: { ids: number[]; logits: Float32Array }[] }

function fixtureCase(arch: string): Case {
  const dir = sharedPath('fixtures', `${arch}-tiny`);
  const meta = JSON.parse(fs.readFileSync(`${dir}/reference/meta.json`, 'utf8')) as { sequences: { name: string; input_ids: number[] }[] };
  return {
    label: `${arch}-tiny`, dir,
    sequences: meta.sequences.map((s) => ({ ids: s.input_ids, logits: readReference(`${dir}/reference/${s.name}.safetensors`).get('logits')!.data })),
  };
}

function realCase(name: 'stories260K' | 'aidreams260K'): Case {
  const m = realModel(name);
  return { label: name, dir: m.dir, sequences: m.ref.prompts.map((p) => ({ ids: p.sequence_ids.slice(0, p.n_positions), logits: m.arrays(p).get('logits')!.data })) };
}

const CASES = [...['gpt2', 'gpt_neox', 'llama', 'llama3', 'mistral', 'qwen2', 'qwen3', 'gemma2', 'phi3'].map(fixtureCase), realCase('stories260K'), realCase('aidreams260K')];

describe.each(CASES)('$label with block-quantised linear weights', (c) => {
  const weights = readReference(`${c.dir}/model.safetensors`);
  it.each(FORMATS)('%s: logits of every sequence within F32_TOL + K·sqrt(Σρ²)·max|z| of the float32 reference', async (format) => {
    const b = new CpuBackend();
    const { model } = await loadTransformer(new NodeFiles(c.dir), b, undefined, { weightDtype: format });
    const rho = quantNoise(weights, STEP[format]);
    let worst = 0, worstTol = 0;
    for (const s of c.sequences) {
      const maxLogit = s.logits.reduce((mx, x) => Math.max(mx, Math.abs(x)), 0);
      const { logits } = await runCaptured(b, model, s.ids, []);
      const diff = maxDiff(logits, s.logits);
      const tol = F32_TOL + K * rho * maxLogit;
      expect(diff).toBeLessThan(tol);
      expect(diff).toBeGreaterThan(10 * F32_TOL);
      if (diff > worst) { worst = diff; worstTol = tol; }
    }
    (measured[c.label] ??= {})[format] = `${worst.toExponential(2)} (tol ${worstTol.toExponential(2)})`;
    model.dispose();
    b.dispose();
  });
});

/**
 * Decode through the KV cache, one token per forward (the fused quantised GEMV of the CPU backend's
 * WASM path, on 1 and 2 threads): each step's logits against the reference row of the same position,
 * within the same tolerance as the whole-sequence forward.
 */
describe.each([fixtureCase('llama'), fixtureCase('qwen3'), realCase('stories260K')])('$label decoding token by token with block-quantised weights', (c) => {
  const weights = readReference(`${c.dir}/model.safetensors`);
  it.each(FORMATS.flatMap((f) => [1, 2].map((threads): [QuantFormat, number] => [f, threads])))('%s, %i thread(s): every step within F32_TOL + K·sqrt(Σρ²)·max|z| of the reference row', async (format, threads) => {
    const b = new CpuBackend(undefined, { threads, parallelMacs: 0 });
    await b.whenStarted();
    const { model } = await loadTransformer(new NodeFiles(c.dir), b, undefined, { weightDtype: format });
    const rho = quantNoise(weights, STEP[format]);
    const s = c.sequences[0];
    const V = s.logits.length / s.ids.length;
    const tol = F32_TOL + K * rho * s.logits.reduce((mx, x) => Math.max(mx, Math.abs(x)), 0);
    for (let pos = 0; pos < s.ids.length; pos++) {
      const ctx = new RunContext(b, { pos0: pos, n: 1, nPrompt: 1, step: pos });
      const t = model.forward(Int32Array.of(s.ids[pos]), ctx, 'last')!;
      const row = await b.read(t);
      b.release(t);
      ctx.release();
      expect(maxDiff(row, s.logits.subarray(pos * V, (pos + 1) * V)), `position ${pos}`).toBeLessThan(tol);
    }
    if (threads > 1) expect(b.helperParts).toBeGreaterThan(0);
    model.dispose();
    b.dispose();
  });
});
