import * as fs from 'node:fs';
import { afterAll, describe, expect, it } from 'vitest';
import { CpuBackend } from '../../workers/engine/backend/cpu';
import { quantise, type QuantFormat } from '../../workers/engine/backend/quant';
import { seededRandom } from '../../workers/engine/analysis/sampling';
import { NodeFiles } from '../../workers/engine/io/node_files';
import { loadTransformer } from '../../workers/engine/model/load';
import { greedyWithCache, runCaptured } from '../model_run';
import { maxAbsDiff, readReference, sharedPath } from '../shared';

/**
 * The CPU backend's WASM GEMM on several threads (backend/gemm_threads.ts): each output element is
 * computed by one thread with the same kernel, so every product must be bit-identical to one thread,
 * and still equal the float64 product (or the goldens) within float32 rounding.
 * parallelMacs: 0 splits every product, however small, so the fixtures exercise the split.
 */

const rnd = seededRandom(5);
const randn = (len: number) => Float32Array.from({ length: len }, () => rnd() * 2 - 1);

/** y = x·wᵀ in float64, from the definition. */
function matmul64(x: Float32Array, w: Float32Array, n: number, k: number, m: number): Float64Array {
  const y = new Float64Array(n * m);
  for (let r = 0; r < n; r++) for (let o = 0; o < m; o++) {
    let s = 0;
    for (let i = 0; i < k; i++) s += x[r * k + i] * w[o * k + i];
    y[r * m + o] = s;
  }
  return y;
}

/** Indices where a and b differ as bit patterns (Object.is: −0 ≠ +0, NaN = NaN). */
function bitDiffs(a: Float32Array, b: Float32Array): number {
  let n = a.length === b.length ? 0 : Math.max(a.length, b.length);
  for (let i = 0; i < Math.min(a.length, b.length); i++) if (!Object.is(a[i], b[i])) n++;
  return n;
}

const backends: CpuBackend[] = [];
function backend(threads: number): CpuBackend {
  const b = new CpuBackend(undefined, { threads, parallelMacs: 0 });
  backends.push(b);
  return b;
}
afterAll(() => backends.forEach((b) => b.dispose()));

describe('WASM GEMM on several threads', () => {
  // GEMV and GEMM, m not a multiple of the split (4) or of the threads, k mod 4 tails, m < threads
  const shapes: [number, number, number][] = [[1, 576, 1536], [1, 64, 7], [5, 13, 9], [64, 96, 130], [3, 7, 2], [17, 64, 33]];

  it.each([2, 3])('%i threads: every product bit-identical to one thread and within f32 rounding of the float64 product (f32, Q8_0, Q4_0 weights)', async (threads) => {
    const one = backend(1), many = backend(threads);
    expect(many.threads).toBe(threads);
    await many.whenStarted();
    expect(many.description).toMatch(new RegExp(`, ${threads} threads\\)`)); // counts the helpers that started
    const before = many.helperParts;
    for (const [n, k, m] of shapes) {
      const x = randn(n * k), w = randn(m * k);
      const weights: [string, (b: CpuBackend) => ReturnType<CpuBackend['upload']>][] = [['f32', (b) => b.upload(w, [m, k])]];
      if (k % 32 === 0) for (const f of ['q8_0', 'q4_0'] as QuantFormat[]) weights.push([f, (b) => b.uploadQuant(quantise(f, w, m, k))]);
      for (const [label, upload] of weights) {
        const [y1, yt] = await Promise.all([one, many].map((b) => b.read(b.linear(b.upload(x, [n, k]), upload(b)))));
        expect(bitDiffs(yt, y1), `${label} [${n}, ${k}]·[${m}, ${k}]ᵀ`).toBe(0);
        if (label === 'f32') {
          const want = matmul64(x, w, n, k, m);
          let worst = 0;
          for (let i = 0; i < want.length; i++) worst = Math.max(worst, Math.abs(yt[i] - want[i]));
          expect(worst).toBeLessThanOrEqual(8e-6 * Math.sqrt(k));
        }
      }
    }
    // the helpers really took shares (one per product and helper, m ≥ 4·threads products at least)
    expect(many.helperParts - before).toBeGreaterThanOrEqual(shapes.filter(([, , m]) => m >= 4 * threads).length * (threads - 1));
  });

  it('1 thread is the single-threaded arena (no helpers); simd: false has no threads', () => {
    const b = new CpuBackend(undefined, { threads: 1 });
    expect(b.threads).toBe(1);
    expect(b.description).not.toMatch(/threads/);
    expect(new CpuBackend(undefined, { simd: false, threads: 4 }).threads).toBe(1);
  });

  it('after dispose() products still run, on this thread, with the same bits', async () => {
    const b = backend(2), one = backend(1);
    await b.whenStarted();
    const x = randn(2 * 64), w = randn(40 * 64);
    b.dispose();
    expect(b.description).not.toMatch(/threads/);
    const parts = b.helperParts;
    const [y, y1] = await Promise.all([b, one].map((e) => e.read(e.linear(e.upload(x, [2, 64]), e.upload(w, [40, 64])))));
    expect(bitDiffs(y, y1)).toBe(0);
    expect(b.helperParts).toBe(parts);
  });
});

const FIXTURES = ['gpt2', 'llama', 'qwen3', 'gemma2', 'phi3'];

describe.each(FIXTURES)('%s-tiny on 2 threads against the goldens', (arch) => {
  const dir = sharedPath('fixtures', `${arch}-tiny`);
  const meta = JSON.parse(fs.readFileSync(`${dir}/reference/meta.json`, 'utf8')) as { sequences: { name: string; input_ids: number[]; generated_ids: number[] }[] };

  it('logits within the fixtures\' fp32 tolerance and bit-identical to 1 thread; greedy decoding through the KV cache gives the golden tokens', async () => {
    const many = backend(2), one = backend(1);
    await many.whenStarted();
    const [mt, m1] = await Promise.all([many, one].map(async (b) => (await loadTransformer(new NodeFiles(dir), b)).model));
    for (const s of meta.sequences) {
      const ref = readReference(`${dir}/reference/${s.name}.safetensors`).get('logits')!.data;
      const [yt, y1] = [(await runCaptured(many, mt, s.input_ids, [])).logits, (await runCaptured(one, m1, s.input_ids, [])).logits];
      expect(maxAbsDiff(yt, ref)).toBeLessThan(1e-4); // fixtures/README.md fp32 tolerance
      // a product in the scalar loop (the arena could not grow) has other bits than the WASM GEMM's: name that cause
      expect([many.scalarFallbacks, one.scalarFallbacks], 'products in the scalar loop (2 threads, 1 thread)').toEqual([0, 0]);
      const first = yt.findIndex((v, i) => !Object.is(v, y1[i])), V = yt.length / s.input_ids.length;
      expect(bitDiffs(yt, y1), `${s.name}: first differing logit at row ${Math.floor(first / V)} of ${s.input_ids.length}; ${many.runningThreads} threads running, ${many.helperParts} helper shares`).toBe(0);
    }
    const s = meta.sequences[0];
    const [gt, g1] = [await greedyWithCache(many, mt, s.input_ids, s.generated_ids.length), await greedyWithCache(one, m1, s.input_ids, s.generated_ids.length)];
    expect(gt.ids).toEqual(s.generated_ids); // generated_ids: the new tokens only
    gt.stepLogits.forEach((z, i) => expect(bitDiffs(z, g1.stepLogits[i]), `decode step ${i}`).toBe(0));
    expect(many.helperParts).toBeGreaterThan(0);
    mt.dispose(); m1.dispose();
  });

  it('Q8_0 weights: prefill (WASM-dequantised slabs) and decode (fused GEMV) logits bit-identical to 1 thread', async () => {
    const many = backend(2), one = backend(1);
    await many.whenStarted();
    const [mt, m1] = await Promise.all([many, one].map(async (b) => (await loadTransformer(new NodeFiles(dir), b, undefined, { weightDtype: 'q8_0' })).model));
    const s = meta.sequences[0];
    const [gt, g1] = [await greedyWithCache(many, mt, s.input_ids, 8), await greedyWithCache(one, m1, s.input_ids, 8)];
    expect(gt.ids).toEqual(g1.ids);
    gt.stepLogits.forEach((z, i) => expect(bitDiffs(z, g1.stepLogits[i]), `step ${i}`).toBe(0));
    mt.dispose(); m1.dispose();
  });
});

describe('GemmThreads failure', () => {
  it('a WebAssembly trap in a helper\'s share is an Error on the calling thread (no hang), and the pool keeps working', async () => {
    const { GemmThreads, CONTROL_BYTES } = await import('../../workers/engine/backend/gemm_threads');
    const { GEMM_SHARED_WASM_BASE64 } = await import('../../workers/engine/ops/gemm.wasm');
    const mod = new WebAssembly.Module(Buffer.from(GEMM_SHARED_WASM_BASE64, 'base64'));
    const memory = new WebAssembly.Memory({ initial: 2, maximum: 16, shared: true });
    const part = (new WebAssembly.Instance(mod, { env: { memory } }).exports.part as (c: number, t: number) => void);
    const owner = {};
    const pool = new GemmThreads(owner, mod, memory, 2);
    await pool.whenStarted();
    const f = new Float32Array(memory.buffer);
    const x = CONTROL_BYTES, k = 4, m = 8, y = x + 64, w = y + 64;
    f.fill(1, x / 4, x / 4 + k);
    // w rows 0..3 (this thread's share) in memory; rows 4..7 (the helper's) start past its end
    const ldw = (memory.buffer.byteLength - w) / 4 / 4 - 1;
    expect(() => pool.run(part, 0, [x, k, w, ldw, y, m, 1, k, m], m)).toThrow(/matmul thread failed/);
    // a product inside the memory afterwards: y = x·wᵀ = 4 per row of ones
    f.fill(1, w / 4, w / 4 + m * k);
    f.fill(0, y / 4, y / 4 + m);
    pool.run(part, 0, [x, k, w, k, y, m, 1, k, m], m);
    expect(Array.from(f.subarray(y / 4, y / 4 + m))).toEqual(Array(m).fill(4));
    expect(pool.helperParts()).toBe(1);
    pool.stop();
  });
});
