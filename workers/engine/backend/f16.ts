/**
 * IEEE 754 binary16 conversions for f16 weight storage (two halves per 32-bit word, element 2i in
 * the low half, as WGSL unpack2x16float reads them).
 */

const f32 = new Float32Array(1);
const u32 = new Uint32Array(f32.buffer);

/** float32 → binary16 bits, rounding to nearest even; overflow → ±Infinity, NaN stays NaN. */
export function toF16Bits(x: number): number {
  f32[0] = x;
  const b = u32[0];
  const sign = (b >>> 16) & 0x8000;
  const exp = (b >>> 23) & 0xff;
  const man = b & 0x7fffff;
  if (exp === 0xff) return sign | 0x7c00 | (man ? 0x200 : 0);
  const e = exp - 127 + 15;
  if (e >= 0x1f) return sign | 0x7c00;
  if (e <= 0) {
    if (e < -10) return sign;
    // subnormal half: shift the implicit-1 mantissa into place, rounding to nearest even
    const m = man | 0x800000;
    const shift = 14 - e;
    let h = m >>> shift;
    const rem = m & ((1 << shift) - 1), half = 1 << (shift - 1);
    if (rem > half || (rem === half && (h & 1))) h++;
    return sign | h;
  }
  let h = (e << 10) | (man >>> 13);
  const rem = man & 0x1fff;
  if (rem > 0x1000 || (rem === 0x1000 && (h & 1))) h++; // a carry into the exponent is correct rounding
  return sign | h;
}

/** binary16 bits → number. */
export function fromF16Bits(h: number): number {
  const s = h & 0x8000 ? -1 : 1;
  const e = (h >>> 10) & 0x1f, m = h & 0x3ff;
  if (e === 0) return s * m * 2 ** -24;
  if (e === 0x1f) return m ? NaN : s * Infinity;
  return s * (1 + m / 1024) * 2 ** (e - 15);
}

/** Packs float32 values as binary16 pairs → ⌈n/2⌉ words. */
export function packF16(data: Float32Array): Uint32Array {
  const out = new Uint32Array(Math.ceil(data.length / 2));
  for (let i = 0; i < data.length; i++) out[i >> 1] |= toF16Bits(data[i]) << ((i & 1) * 16);
  return out;
}

/** Unpacks n binary16 values from packed words (inverse of packF16). */
export function unpackF16(words: Uint32Array, n: number): Float32Array {
  const out = new Float32Array(n);
  for (let i = 0; i < n; i++) out[i] = fromF16Bits((words[i >> 1] >>> ((i & 1) * 16)) & 0xffff);
  return out;
}
