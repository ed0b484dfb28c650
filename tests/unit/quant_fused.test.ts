import { afterAll, describe, expect, it } from 'vitest';
import { CpuBackend } from '../../workers/engine/backend/cpu';
import { fromGgmlBlocks, GGML_BLOCK_BYTES, type QuantFormat } from '../../workers/engine/backend/quant';
import { seededRandom } from '../../workers/engine/analysis/sampling';

/**
 * The quantised products of the CPU backend (WASM SIMD, tools/wasm/gemm_wat.ts: the fused GEMV for
 * fewer than 4 rows, quants widened and scaled in registers; WASM-dequantised slabs into the f32
 * GEMM for more) against ggml's block definitions in closed form (ggml-common.h
 * block_q8_0 / block_q4_0, dequantize_row_q8_0 / q4_0):
 *   Q8_0: x̂_j = d·qs[j] (int8);  Q4_0: x̂_j = d·((qs[j] & 15) − 8), x̂_{j+16} = d·((qs[j] >> 4) − 8);
 *   d = binary16: (−1)^s · 2^(e−15) · (1 + m/1024), or 2^−24 · m when e = 0 (subnormal).
 * Blocks are written here as raw ggml bytes (scale, then qs) with chosen scales: normal, negative,
 * subnormal, the largest finite.
 */

/** binary16 bits → value, from IEEE 754's definition. */
function f16(h: number): number {
  const s = h & 0x8000 ? -1 : 1, e = (h >> 10) & 31, m = h & 1023;
  return e === 0 ? s * m * 2 ** -24 : s * 2 ** (e - 15) * (1 + m / 1024);
}

const SCALES = [0x3c00, 0xbc00, 0x0001, 0x03ff, 0x0400, 0x7bff, 0x2e66, 0x8400, 0x1234, 0xa5a5];
const rnd = seededRandom(17);

/** Random ggml blocks of a [rows, cols] matrix with scales cycling through SCALES, and its closed-form values. */
function blocks(format: QuantFormat, rows: number, cols: number): { raw: Uint8Array; values: Float64Array } {
  const bb = GGML_BLOCK_BYTES[format], nb = rows * cols / 32;
  const raw = new Uint8Array(nb * bb), values = new Float64Array(rows * cols);
  for (let b = 0; b < nb; b++) {
    const h = SCALES[b % SCALES.length], d = f16(h);
    raw[b * bb] = h & 0xff;
    raw[b * bb + 1] = h >> 8;
    for (let j = 0; j < bb - 2; j++) raw[b * bb + 2 + j] = Math.floor(rnd() * 256);
    const qs = raw.subarray(b * bb + 2, (b + 1) * bb);
    for (let j = 0; j < 32; j++) {
      values[b * 32 + j] = format === 'q8_0'
        ? d * (qs[j] << 24 >> 24)
        : d * ((j < 16 ? qs[j] & 15 : qs[j - 16] >> 4) - 8);
    }
  }
  return { raw, values };
}

const backends: CpuBackend[] = [];
afterAll(() => backends.forEach((b) => b.dispose()));

describe.each(['q8_0', 'q4_0'] as QuantFormat[])('%s fused GEMV against the block definition', (format) => {
  const rows = 13, cols = 96; // rows: 1×4 blocks and a 1×1 tail; three blocks per row
  const { raw, values } = blocks(format, rows, cols);

  it.each([1, 2])('one-hot x picks out every dequantised weight exactly (%i thread(s))', async (threads) => {
    const b = new CpuBackend(undefined, { threads, parallelMacs: 0 });
    backends.push(b);
    await b.whenStarted();
    const w = b.uploadQuant(fromGgmlBlocks(format, raw, rows, cols));
    for (let i = 0; i < cols; i++) {
      const x = new Float32Array(cols);
      x[i] = 1;
      const y = await b.read(b.linear(b.upload(x, [1, cols]), w));
      for (let o = 0; o < rows; o++) expect(y[o], `ŵ[${o}, ${i}]`).toBe(Math.fround(values[o * cols + i]) + 0); // y starts at +0: a −0 weight sums to +0
    }
    // x = the identity [cols, cols] (prefill: the blocks dequantised in WASM into slabs for the f32 GEMM): y = ŵᵀ
    const eye = new Float32Array(cols * cols);
    for (let i = 0; i < cols; i++) eye[i * cols + i] = 1;
    const y = await b.read(b.linear(b.upload(eye, [cols, cols]), w));
    for (let i = 0; i < cols; i++) for (let o = 0; o < rows; o++) expect(y[i * rows + o], `ŵ[${o}, ${i}] (prefill)`).toBe(Math.fround(values[o * cols + i]) + 0);
  });

  it('x · ŵᵀ + bias equals the float64 sum of the definition within f32 rounding (1, 3 and 9 rows, 1 and 2 threads)', async () => {
    for (const threads of [1, 2]) {
      const b = new CpuBackend(undefined, { threads, parallelMacs: 0 });
      backends.push(b);
      await b.whenStarted();
      const w = b.uploadQuant(fromGgmlBlocks(format, raw, rows, cols));
      for (const n of [1, 3, 9]) {
        const x = Float32Array.from({ length: n * cols }, () => rnd() * 2 - 1), bias = Float32Array.from({ length: rows }, () => rnd());
        const y = await b.read(b.linear(b.upload(x, [n, cols]), w, b.upload(bias, [rows])));
        for (let r = 0; r < n; r++) for (let o = 0; o < rows; o++) {
          let s = bias[o], mag = Math.abs(bias[o]);
          for (let i = 0; i < cols; i++) { s += x[r * cols + i] * values[o * cols + i]; mag += Math.abs(x[r * cols + i] * values[o * cols + i]); }
          expect(Math.abs(y[r * rows + o] - s)).toBeLessThanOrEqual(cols * 2 ** -23 * mag);
        }
      }
    }
  });
});
