import { describe, expect, it } from 'vitest';
import * as fs from 'node:fs';
import { CpuBackend } from '../../workers/engine/backend/cpu';
import { seededRandom } from '../../workers/engine/analysis/sampling';
import { assembleGemm, GEMM_MODULE_TS, gemmModuleSource } from '../../tools/build_wasm';

/** y = x·wᵀ + b in float64, from the definition. */
function matmul64(x: Float32Array, w: Float32Array, b: Float32Array | undefined, n: number, k: number, m: number): Float64Array {
  const y = new Float64Array(n * m);
  for (let r = 0; r < n; r++) for (let o = 0; o < m; o++) {
    let s = b ? b[o] : 0;
    for (let i = 0; i < k; i++) s += x[r * k + i] * w[o * k + i];
    y[r * m + o] = s;
  }
  return y;
}

const rnd = seededRandom(11);
const randn = (len: number) => Float32Array.from({ length: len }, () => rnd() * 2 - 1);

describe('CPU backend matmul in WASM SIMD', () => {
  it('the committed gemm.wasm.ts is the assembly of tools/wasm/gemm_wat.ts (run npx tsx tools/build_wasm.ts after editing it)', async () => {
    expect(fs.readFileSync(GEMM_MODULE_TS, 'utf8')).toBe(gemmModuleSource(await assembleGemm(), await assembleGemm(true)));
  });

  it('is used: the backend says so', () => {
    expect(new CpuBackend().description).toMatch(/^CPU backend \(TypeScript \+ WASM SIMD/);
    expect(new CpuBackend(undefined, { simd: false }).description).not.toMatch(/WASM/);
  });

  // every block path: 4×2, 4×1 (odd m), the n mod 4 rows' 3×2 … 1×1 blocks, 1×1 for n < 4, k mod 4 tails, k mod 16 rests after the unrolled loop, GEMV, decode and prefill shapes
  const shapes: [number, number, number][] = [[1, 1, 1], [1, 5, 3], [3, 7, 5], [4, 8, 2], [4, 3, 1], [5, 13, 9], [6, 45, 7], [8, 576, 6], [17, 64, 33], [1, 576, 1536], [64, 576, 192], [7, 1536, 11]];
  it.each(shapes)('x [%i, %i] · wᵀ [%i, k] (+ bias) equals the float64 product within f32 rounding', (n, k, m) => {
    const b = new CpuBackend();
    const x = randn(n * k), w = randn(m * k), bias = randn(m);
    for (const withBias of [false, true]) {
      const y = b.linear(b.upload(x, [n, k]), b.upload(w, [m, k]), withBias ? b.upload(bias, [m]) : undefined);
      const got = (y as unknown as { data: Float32Array }).data;
      const want = matmul64(x, w, withBias ? bias : undefined, n, k, m);
      let worst = 0;
      for (let i = 0; i < want.length; i++) worst = Math.max(worst, Math.abs(got[i] - want[i]));
      expect(y.shape).toEqual([n, m]);
      expect(worst).toBeLessThanOrEqual(2e-6 * Math.sqrt(k) * 4);
    }
  });

  it('a row\'s product is bit-identical whichever block computes it (n = 1 … 11 rows, odd m): prefix KV reuse and decode rely on it', async () => {
    const b = new CpuBackend();
    const k = 37, m = 9, x = randn(11 * k), w = b.upload(randn(m * k), [m, k]);
    const alone = await Promise.all(Array.from({ length: 11 }, (_, r) => b.read(b.linear(b.upload(x.subarray(r * k, (r + 1) * k), [1, k]), w))));
    for (let n = 2; n <= 11; n++) {
      const y = await b.read(b.linear(b.upload(x.subarray(0, n * k), [n, k]), w));
      for (let r = 0; r < n; r++) expect(y.subarray(r * m, (r + 1) * m)).toEqual(alone[r]);
    }
  });

  it('a weight moved into the wasm memory keeps its values through growth, reads and release/reuse', async () => {
    const b = new CpuBackend();
    const w1 = randn(40 * 24), w2 = randn(40 * 24);
    const t1 = b.upload(w1, [40, 24]);
    const x = b.upload(randn(2 * 24), [2, 24]);
    b.release(b.linear(x, t1)); // t1 now lives in the arena
    const big = b.upload(randn(300 * 1000), [300, 1000]);
    b.release(b.linear(b.upload(randn(1000), [1, 1000]), big)); // grows the memory
    expect(await b.read(t1)).toEqual(w1);
    b.release(t1);
    const t2 = b.upload(w2, [40, 24]);
    const y2 = await b.read(b.linear(x, t2)); // reuses t1's block
    const want = matmul64(await b.read(x), w2, undefined, 2, 24, 40);
    for (let i = 0; i < want.length; i++) expect(Math.abs(y2[i] - want[i])).toBeLessThan(1e-5);
    expect(await b.read(t2)).toEqual(w2);
    await expect(b.read(t1)).rejects.toThrow(/released/);
  });
});
