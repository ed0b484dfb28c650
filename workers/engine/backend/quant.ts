/**
 * Block-quantised weight storage, ggml's Q8_0 and Q4_0 (ggml/src/ggml-quants.c,
 * quantize_row_q8_0_ref / quantize_row_q4_0_ref, dequantize_row_q8_0 / dequantize_row_q4_0):
 * each row is cut into blocks of QK = 32 values that share one binary16 scale d.
 *
 * - Q8_0: d = max|x| / 127, q = round(x / d) ∈ [−127, 127] (int8), x ≈ d·q. 34 bytes per block.
 * - Q4_0: d = m / −8 where m is the block's value of largest magnitude (signed), q = min(15,
 *   trunc(x/d + 8.5)) ∈ [0, 15] (4 bits), x ≈ d·(q − 8). 18 bytes per block.
 *
 * One packed layout serves both backends (WGSL has no i8/f16 storage without extensions, so
 * everything is u32 words): `words` = [quants of every block, row-major][scales]. A block's quants
 * are ggml's `qs` bytes, little-endian in its words: Q8_0 8 words (byte i = q_i as int8), Q4_0 4
 * words (byte j = q_j | q_{j+16} << 4, ggml's nibble order). The scales follow as binary16 pairs
 * (block 2i in the low half, backend/f16.ts). A row whose length is not a multiple of 32 is padded
 * with zeros to whole blocks (padding dequantises to 0; GGUF files never need it).
 */
import { fromF16Bits, toF16Bits } from './f16';

/** The block formats the engine stores. */
export type QuantFormat = 'q8_0' | 'q4_0';

/** Values per block (ggml QK8_0 = QK4_0 = 32). */
export const QK = 32;

/** u32 words of quants per block: 32 int8 (Q8_0) or 32 nibbles (Q4_0). */
export const QUANT_WORDS: Record<QuantFormat, number> = { q8_0: 8, q4_0: 4 };

/** Bytes of one ggml block: binary16 scale + quants (ggml block_q8_0 / block_q4_0). */
export const GGML_BLOCK_BYTES: Record<QuantFormat, number> = { q8_0: 34, q4_0: 18 };

/** A 2-D weight [rows, cols] (nn.Linear [out, in]) in block-quantised storage. */
export interface QuantizedMatrix {
  format: QuantFormat;
  /** [rows, cols]: the logical shape (cols before padding to whole blocks). */
  shape: [number, number];
  /** Quant words of every block, then the binary16 scales in pairs (see the module comment). */
  words: Uint32Array;
}

/** Blocks per row: ⌈cols / 32⌉. */
export function blocksPerRow(cols: number): number {
  return Math.ceil(cols / QK);
}

/** Word index where the scales start: rows · blocksPerRow · QUANT_WORDS. */
export function scaleOffset(format: QuantFormat, rows: number, cols: number): number {
  return rows * blocksPerRow(cols) * QUANT_WORDS[format];
}

/** u32 words of a [rows, cols] matrix in this storage. */
export function quantWords(format: QuantFormat, rows: number, cols: number): number {
  const blocks = rows * blocksPerRow(cols);
  return blocks * QUANT_WORDS[format] + Math.ceil(blocks / 2);
}

/** Bytes of a [rows, cols] matrix in this storage (≈ 8.5 bits per weight for Q8_0, 4.5 for Q4_0). */
export function quantBytes(format: QuantFormat, rows: number, cols: number): number {
  return 4 * quantWords(format, rows, cols);
}

const fr = Math.fround;

/**
 * Quantises a row-major [rows, cols] float32 matrix exactly as ggml's reference quantisers do
 * (float32 arithmetic: the reciprocal 1/d of the unrounded scale multiplies each value; Q8_0
 * rounds half away from zero (roundf), Q4_0 truncates x/d + 8.5 toward zero and clamps at 15).
 * @throws Error when data.length ≠ rows·cols or a value is not finite.
 */
export function quantise(format: QuantFormat, data: Float32Array, rows: number, cols: number): QuantizedMatrix {
  if (data.length !== rows * cols) throw new Error(`quantise: ${data.length} values for shape [${rows}, ${cols}]`);
  const bpr = blocksPerRow(cols);
  const words = new Uint32Array(quantWords(format, rows, cols));
  const bytes = new Uint8Array(words.buffer, 0, scaleOffset(format, rows, cols) * 4);
  const s0 = scaleOffset(format, rows, cols);
  const block = new Float32Array(QK);
  const qBytes = QUANT_WORDS[format] * 4;
  for (let r = 0; r < rows; r++) {
    for (let b = 0; b < bpr; b++) {
      block.fill(0);
      const c0 = b * QK, n = Math.min(QK, cols - c0);
      block.set(data.subarray(r * cols + c0, r * cols + c0 + n));
      const bi = r * bpr + b;
      const out = bytes.subarray(bi * qBytes, (bi + 1) * qBytes);
      const d = format === 'q8_0' ? quantBlockQ8(block, out) : quantBlockQ4(block, out);
      if (!Number.isFinite(d)) throw new Error(`quantise: row ${r}, block ${b} holds a value that is not finite`);
      words[s0 + (bi >> 1)] |= toF16Bits(d) << ((bi & 1) * 16);
    }
  }
  return { format, shape: [rows, cols], words };
}

/** ggml quantize_row_q8_0_ref on one block: writes 32 int8 into `out`, returns d (float32). */
function quantBlockQ8(x: Float32Array, out: Uint8Array): number {
  let amax = 0;
  for (let j = 0; j < QK; j++) amax = Math.max(amax, Math.abs(x[j]));
  const d = fr(amax / 127);
  const id = d ? fr(1 / d) : 0;
  for (let j = 0; j < QK; j++) {
    const v = fr(x[j] * id);
    out[j] = (Math.sign(v) * Math.round(Math.abs(v))) & 0xff; // roundf: half away from zero
  }
  return d;
}

/** ggml quantize_row_q4_0_ref on one block: writes 16 bytes of nibbles into `out`, returns d (float32). */
function quantBlockQ4(x: Float32Array, out: Uint8Array): number {
  let amax = 0, max = 0;
  for (let j = 0; j < QK; j++) {
    if (amax < Math.abs(x[j])) { amax = Math.abs(x[j]); max = x[j]; }
  }
  const d = fr(max / -8);
  const id = d ? fr(1 / d) : 0;
  const q = (v: number): number => Math.min(15, Math.trunc(fr(fr(v * id) + 8.5)));
  for (let j = 0; j < QK / 2; j++) out[j] = q(x[j]) | (q(x[j + QK / 2]) << 4);
  return d;
}

/** binary16 → float32 for every bit pattern (scales are decoded through it). */
const F16 = (() => {
  const t = new Float32Array(65536);
  for (let h = 0; h < 65536; h++) t[h] = fromF16Bits(h);
  return t;
})();

/** The float32 scale of block `bi` (row r, block b: bi = r·blocksPerRow + b). */
export function blockScale(q: QuantizedMatrix, bi: number): number {
  const s0 = scaleOffset(q.format, q.shape[0], q.shape[1]);
  return F16[(q.words[s0 + (bi >> 1)] >>> ((bi & 1) * 16)) & 0xffff];
}

/**
 * Dequantises rows row0 .. row0+n−1 into out [n, cols] (row-major, the padding dropped):
 * Q8_0 x = d·q, Q4_0 x = d·(q − 8), d widened from binary16 (ggml dequantize_row_*).
 */
export function dequantiseRows(q: QuantizedMatrix, row0: number, n: number, out: Float32Array): void {
  const [, cols] = q.shape;
  const bpr = blocksPerRow(cols);
  const s0 = scaleOffset(q.format, q.shape[0], cols);
  const w = q.words;
  if (q.format === 'q8_0') {
    const i8 = new Int8Array(w.buffer, w.byteOffset, s0 * 4);
    for (let r = 0; r < n; r++) {
      const orow = r * cols;
      for (let b = 0; b < bpr; b++) {
        const bi = (row0 + r) * bpr + b;
        const d = F16[(w[s0 + (bi >> 1)] >>> ((bi & 1) * 16)) & 0xffff];
        const c0 = b * QK, m = Math.min(QK, cols - c0), src = bi * QK;
        for (let j = 0; j < m; j++) out[orow + c0 + j] = d * i8[src + j];
      }
    }
  } else {
    const u8 = new Uint8Array(w.buffer, w.byteOffset, s0 * 4);
    for (let r = 0; r < n; r++) {
      const orow = r * cols;
      for (let b = 0; b < bpr; b++) {
        const bi = (row0 + r) * bpr + b;
        const d = F16[(w[s0 + (bi >> 1)] >>> ((bi & 1) * 16)) & 0xffff];
        const c0 = b * QK, src = bi * (QK / 2);
        if (c0 + QK <= cols) {
          for (let j = 0; j < QK / 2; j++) {
            const v = u8[src + j];
            out[orow + c0 + j] = d * ((v & 15) - 8);
            out[orow + c0 + j + 16] = d * ((v >> 4) - 8);
          }
        } else {
          for (let j = 0; j < cols - c0; j++) {
            const v = u8[src + (j & 15)];
            out[orow + c0 + j] = d * ((j < 16 ? v & 15 : v >> 4) - 8);
          }
        }
      }
    }
  }
}

/** The whole matrix as float32 [rows, cols] (what the kernels compute with). */
export function dequantise(q: QuantizedMatrix): Float32Array {
  const out = new Float32Array(q.shape[0] * q.shape[1]);
  dequantiseRows(q, 0, q.shape[0], out);
  return out;
}

/**
 * Packs ggml blocks as stored in a GGUF file (per block: binary16 d, then the qs bytes) of a
 * [rows, cols] matrix, cols a multiple of 32, into the engine's layout.
 * @throws Error when raw has another length than rows·cols/32 blocks.
 */
export function fromGgmlBlocks(format: QuantFormat, raw: Uint8Array, rows: number, cols: number): QuantizedMatrix {
  if (cols % QK !== 0) throw new Error(`${format} rows must hold a multiple of ${QK} values, not ${cols}`);
  const blocks = rows * (cols / QK), bb = GGML_BLOCK_BYTES[format], qb = bb - 2;
  if (raw.length !== blocks * bb) throw new Error(`${format} data of [${rows}, ${cols}] needs ${blocks * bb} bytes, got ${raw.length}`);
  const words = new Uint32Array(quantWords(format, rows, cols));
  const bytes = new Uint8Array(words.buffer);
  const s0 = scaleOffset(format, rows, cols);
  for (let i = 0; i < blocks; i++) {
    const o = i * bb;
    words[s0 + (i >> 1)] |= (raw[o] | (raw[o + 1] << 8)) << ((i & 1) * 16);
    bytes.set(raw.subarray(o + 2, o + bb), i * qb);
  }
  return { format, shape: [rows, cols], words };
}

/** Inverse of fromGgmlBlocks: the ggml block bytes of a matrix whose cols are a multiple of 32. */
export function toGgmlBlocks(q: QuantizedMatrix): Uint8Array {
  const [rows, cols] = q.shape;
  if (cols % QK !== 0) throw new Error(`${q.format} rows must hold a multiple of ${QK} values, not ${cols}`);
  const blocks = rows * (cols / QK), bb = GGML_BLOCK_BYTES[q.format], qb = bb - 2;
  const out = new Uint8Array(blocks * bb);
  const bytes = new Uint8Array(q.words.buffer, q.words.byteOffset);
  const s0 = scaleOffset(q.format, rows, cols);
  for (let i = 0; i < blocks; i++) {
    const h = (q.words[s0 + (i >> 1)] >>> ((i & 1) * 16)) & 0xffff;
    out[i * bb] = h & 0xff;
    out[i * bb + 1] = h >> 8;
    out.set(bytes.subarray(i * qb, (i + 1) * qb), i * bb + 2);
  }
  return out;
}

/**
 * Reorders the rows of a quantised matrix (rows keep their blocks, so no value changes): row i of
 * the result is row perm[i] of q. Used to undo llama.cpp's Q/K row permutation on GGUF import.
 * @throws Error when perm is not a permutation of the rows.
 */
export function permuteRows(q: QuantizedMatrix, perm: readonly number[]): QuantizedMatrix {
  const [rows, cols] = q.shape;
  if (perm.length !== rows) throw new Error(`permuteRows: ${perm.length} indices for ${rows} rows`);
  const bpr = blocksPerRow(cols), qw = QUANT_WORDS[q.format] * bpr;
  const s0 = scaleOffset(q.format, rows, cols);
  const words = new Uint32Array(q.words.length);
  const scale = (bi: number): number => (q.words[s0 + (bi >> 1)] >>> ((bi & 1) * 16)) & 0xffff;
  perm.forEach((src, i) => {
    if (!(src >= 0 && src < rows)) throw new Error(`permuteRows: row ${src} outside [0, ${rows})`);
    words.set(q.words.subarray(src * qw, (src + 1) * qw), i * qw);
    for (let b = 0; b < bpr; b++) {
      const bi = i * bpr + b;
      words[s0 + (bi >> 1)] |= scale(src * bpr + b) << ((bi & 1) * 16);
    }
  });
  return { format: q.format, shape: [rows, cols], words };
}

/** "Q8_0" / "Q4_0", as llama.cpp names them. */
export function formatLabel(f: QuantFormat): string {
  return f.toUpperCase();
}
