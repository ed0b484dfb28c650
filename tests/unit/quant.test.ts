import { describe, expect, it } from 'vitest';
import { CpuBackend } from '../../workers/engine/backend/cpu';
import { seededRandom } from '../../workers/engine/analysis/sampling';
import { dequantise, fromGgmlBlocks, permuteRows, quantBytes, quantise, toGgmlBlocks, type QuantFormat } from '../../workers/engine/backend/quant';

/**
 * Q8_0 / Q4_0 against ggml's definitions (ggml-quants.c quantize_row_q8_0_ref, quantize_row_q4_0_ref,
 * dequantize_row_*), on crafted blocks whose scales are exact in binary16, so every dequantised value
 * is known in closed form:
 *   Q8_0: d = max|x|/127, q = roundf(x/d) (half away from zero), x̂ = d·q
 *   Q4_0: d = m/−8 (m the value of largest magnitude, signed), q = min(15, trunc(x/d + 8.5)), x̂ = d·(q − 8)
 */

/** A 32-value block: the listed leading values, zeros after. */
const block = (...lead: number[]) => Float32Array.from({ length: 32 }, (_, i) => lead[i] ?? 0);

describe('Q8_0 on crafted blocks', () => {
  it('max|x| = 127 → d = 1: x̂ = roundf(x), halves away from zero', () => {
    const x = block(127, -63.5, 2.5, -2.5, 0.49, -0.5, 100.2, -127);
    const q = quantise('q8_0', x, 1, 32);
    expect(Array.from(dequantise(q))).toEqual(Array.from(block(127, -64, 3, -3, 0, -1, 100, -127)));
    // storage: 8 quant words (byte i = q_i as int8), then the scale d = 1.0 = 0x3c00 in the low half
    expect(q.words.length).toBe(9);
    expect(q.words[0]).toBe((127 | (0xc0 << 8) | (3 << 16) | (0xfd << 24)) >>> 0);
    expect(q.words[8] & 0xffff).toBe(0x3c00);
  });

  it('max|x| = 254 → d = 2 (exact in binary16): x̂ = 2·roundf(x/2)', () => {
    const x = block(-254, 3, 5, -7, 1);
    expect(Array.from(dequantise(quantise('q8_0', x, 1, 32)))).toEqual(Array.from(block(-254, 4, 6, -8, 2)));
  });

  it('max|x| = 1 → d = 1/127 rounded to binary16 = 2⁻⁷·(1 + 8/1024): x̂ = q·d, q from the unrounded d', () => {
    const d16 = 2 ** -7 * (1 + 8 / 1024);
    const x = block(1, -1, 0.5);
    // q = roundf(x·127): 127, −127, roundf(63.5) = 64
    const want = block(127 * d16, -127 * d16, 64 * d16);
    expect(Array.from(dequantise(quantise('q8_0', x, 1, 32)))).toEqual(Array.from(want, Math.fround));
  });

  it('an all-zero block has d = 0 and dequantises to zeros', () => {
    expect(Array.from(dequantise(quantise('q8_0', new Float32Array(32), 1, 32)))).toEqual(new Array(32).fill(0));
  });
});

describe('Q4_0 on crafted blocks', () => {
  it('m = −16 → d = 2: q = trunc(x/2 + 8.5) clamped at 15, x̂ = 2·(q − 8)', () => {
    // x/2 + 8.5: −16 → 0.5 → 0; 16 → 16.5 → 16 → 15 (x̂ = 14); 3 → 10 (x̂ = 4); 1 → 9 (2); −1 → 8 (0); −3 → 7 (−2); 2.9 → 9.95 → 9 (2)
    const x = block(-16, 16, 3, 1, -1, -3, 2.9);
    expect(Array.from(dequantise(quantise('q4_0', x, 1, 32)))).toEqual(Array.from(block(-16, 14, 4, 2, 0, -2, 2)));
  });

  it('m = +8 → d = −1: the sign of d flips which end clamps (x̂(−8) = −7)', () => {
    const x = block(8, -8, 0.5, -0.5);
    // x·(−1) + 8.5: 8 → 0.5 → 0 → (0−8)(−1) = 8; −8 → 16.5 → 15 → −7; 0.5 → 8 → 0; −0.5 → 9 → −1
    // (q − 8)·d with d < 0 gives −0 for q = 8; compared as numbers (−0 + 0 = 0)
    expect(Array.from(dequantise(quantise('q4_0', x, 1, 32)), (v) => v + 0)).toEqual(Array.from(block(8, -7, 0, -1)));
  });

  it('stores ggml nibble order: byte j = q_j | q_{j+16} << 4', () => {
    const x = new Float32Array(32);
    x[0] = -16; // d = 2
    x[16] = 6; // q = 11
    x[1] = 2; // q = 9
    x[17] = -4; // q = 6
    const q = quantise('q4_0', x, 1, 32);
    expect(q.words.length).toBe(5);
    expect(q.words[0] & 0xffff).toBe((0 | (11 << 4)) | ((9 | (6 << 4)) << 8));
    expect(q.words[4] & 0xffff).toBe(0x4000); // d = 2.0 in binary16
  });
});

describe('packing', () => {
  const rnd = seededRandom(7);
  const randn = (n: number) => Float32Array.from({ length: n }, () => rnd() * 2 - 1);

  it.each(['q8_0', 'q4_0'] as QuantFormat[])('%s: a row of 40 values is padded to two blocks; padding never leaks into the values', (f) => {
    const x = randn(3 * 40);
    const q = quantise(f, x, 3, 40);
    expect(q.words.length * 4).toBe(quantBytes(f, 3, 40));
    const y = dequantise(q);
    expect(y.length).toBe(120);
    // each value within the block's half step (Q8_0: d/2; Q4_0: d, at the clamped end) + binary16 scale rounding
    const step = f === 'q8_0' ? 1 / 127 : 1 / 8;
    for (let i = 0; i < x.length; i++) expect(Math.abs(y[i] - x[i])).toBeLessThanOrEqual(step * 1.01 + 1e-6);
  });

  it.each(['q8_0', 'q4_0'] as QuantFormat[])('%s: ggml block bytes round-trip (34 / 18 bytes per block) and rows permute with their scales', (f) => {
    const x = randn(4 * 64);
    const q = quantise(f, x, 4, 64);
    const raw = toGgmlBlocks(q);
    expect(raw.length).toBe(4 * 2 * (f === 'q8_0' ? 34 : 18));
    expect(Array.from(fromGgmlBlocks(f, raw, 4, 64).words)).toEqual(Array.from(q.words));
    const p = dequantise(permuteRows(q, [2, 0, 3, 1]));
    const y = dequantise(q);
    [2, 0, 3, 1].forEach((src, i) => expect(Array.from(p.subarray(i * 64, (i + 1) * 64))).toEqual(Array.from(y.subarray(src * 64, (src + 1) * 64))));
  });

  it('refuses non-finite values and ggml data of the wrong length', () => {
    const x = new Float32Array(32);
    x[3] = Infinity;
    expect(() => quantise('q8_0', x, 1, 32)).toThrow(/not finite/);
    expect(() => fromGgmlBlocks('q4_0', new Uint8Array(17), 1, 32)).toThrow(/needs 18 bytes, got 17/);
  });
});

describe('CPU backend linear with a quantised weight', () => {
  const rnd = seededRandom(3);
  const randn = (n: number) => Float32Array.from({ length: n }, () => rnd() * 2 - 1);
  // decode and prefill shapes, a padded row (in = 40), one wider than a slab
  const shapes: [number, number, number][] = [[1, 64, 5], [3, 40, 7], [9, 128, 33], [2, 1536, 70]];

  it.each(['q8_0', 'q4_0'] as QuantFormat[])('%s: x·x̂ᵀ + b equals the float64 product with the dequantised weight, on the WASM and the scalar path', (f) => {
    for (const simd of [true, false]) {
      const b = new CpuBackend(undefined, { simd });
      for (const [n, k, m] of shapes) {
        const x = randn(n * k), w = randn(m * k), bias = randn(m);
        const q = quantise(f, w, m, k);
        const wHat = dequantise(q);
        const t = b.uploadQuant(q);
        const y = (b.linear(b.upload(x, [n, k]), t, b.upload(bias, [m])) as unknown as { data: Float32Array }).data;
        let worst = 0;
        for (let r = 0; r < n; r++) for (let o = 0; o < m; o++) {
          let s = bias[o];
          for (let i = 0; i < k; i++) s += x[r * k + i] * wHat[o * k + i];
          worst = Math.max(worst, Math.abs(y[r * m + o] - s));
        }
        expect(worst).toBeLessThan(1e-4);
      }
      expect(() => b.add(b.uploadQuant(quantise(f, randn(32), 1, 32)), b.upload(randn(32), [1, 32]))).toThrow(/stored as Q\d_0, which only linear\(\) accepts/);
    }
  });
});
