/**
 * Writes safetensors files (format: https://github.com/huggingface/safetensors, "Format"): for
 * tests and benchmarks that build checkpoints on the fly — shards, F16/BF16 copies of fixtures,
 * synthetic GPT-2-sized weights. Never used by the engine itself (it only reads).
 */
import { DTYPE_BYTES, type SafetensorsDtype } from '../workers/engine/io/safetensors';
import { toF16Bits } from '../workers/engine/backend/f16';

export interface TensorToWrite {
  name: string;
  shape: readonly number[];
  /** Values as float32; converted to `dtype` with round-to-nearest-even. */
  data: Float32Array;
  dtype: SafetensorsDtype;
}

const f32 = new Float32Array(1);
const u32 = new Uint32Array(f32.buffer);

/** float32 → bfloat16 bits (the top 16 bits, rounded to nearest even; NaN stays NaN). */
export function toBf16Bits(x: number): number {
  f32[0] = x;
  const b = u32[0];
  if ((b & 0x7fffffff) > 0x7f800000) return (b >>> 16) | 0x40;
  return ((b + 0x7fff + ((b >>> 16) & 1)) >>> 16) & 0xffff;
}


/**
 * Serialises tensors in the given order (header as encodeHeader, then the data).
 * @throws Error when data.length ≠ product(shape).
 */
export function encodeSafetensors(tensors: readonly TensorToWrite[], metadata: Record<string, string> = { format: 'pt' }): Uint8Array {
  for (const t of tensors) {
    const n = t.shape.reduce((a, b) => a * b, 1);
    if (n !== t.data.length) throw new Error(`${t.name}: shape [${t.shape}] holds ${n} values, data has ${t.data.length}`);
  }
  const { head, fileSize } = encodeHeader(tensors, metadata);
  const out = new Uint8Array(fileSize);
  const dv = new DataView(out.buffer);
  out.set(head, 0);
  let o = head.length;
  for (const t of tensors) {
    if (t.dtype === 'F32') {
      for (let i = 0; i < t.data.length; i++, o += 4) dv.setFloat32(o, t.data[i], true);
    } else {
      const conv = t.dtype === 'F16' ? toF16Bits : toBf16Bits;
      for (let i = 0; i < t.data.length; i++, o += 2) dv.setUint16(o, conv(t.data[i]), true);
    }
  }
  return out;
}

/**
 * The 8-byte length and the JSON header for tensors laid out back to back in the given order
 * (padded with spaces to a multiple of 8, as the reference writer does). On its own it describes a
 * file that tests can write sparse (header, then a truncate to `fileSize`): a multi-gigabyte
 * checkpoint that takes no disk space.
 * @returns the header bytes and the full file size in bytes.
 */
export function encodeHeader(
  tensors: readonly { name: string; shape: readonly number[]; dtype: SafetensorsDtype }[],
  metadata: Record<string, string> = { format: 'pt' },
): { head: Uint8Array; fileSize: number } {
  const header: Record<string, unknown> = { __metadata__: metadata };
  let offset = 0;
  for (const t of tensors) {
    const bytes = t.shape.reduce((a, b) => a * b, 1) * DTYPE_BYTES[t.dtype];
    header[t.name] = { dtype: t.dtype, shape: t.shape, data_offsets: [offset, offset + bytes] };
    offset += bytes;
  }
  let json = JSON.stringify(header);
  json += ' '.repeat((8 - (json.length % 8)) % 8);
  const body = new TextEncoder().encode(json);
  const head = new Uint8Array(8 + body.length);
  new DataView(head.buffer).setBigUint64(0, BigInt(body.length), true);
  head.set(body, 8);
  return { head, fileSize: head.length + offset };
}
