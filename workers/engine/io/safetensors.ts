/**
 * safetensors reader with strict validation (format: https://github.com/huggingface/safetensors,
 * "Format" section): 8-byte little-endian header length N, N bytes of UTF-8 JSON, then the data.
 * Each tensor entry is {dtype, shape, data_offsets: [begin, end]} relative to the data start.
 */

import { fromF16Bits } from '../backend/f16';
import { jsonErrorPosition } from './model_files';

/** Every dtype the format defines, with its size in bytes. */
export const DTYPE_BYTES = {
  F64: 8, F32: 4, F16: 2, BF16: 2, F8_E4M3: 1, F8_E5M2: 1,
  I64: 8, I32: 4, I16: 2, I8: 1, U64: 8, U32: 4, U16: 2, U8: 1, BOOL: 1,
} as const;

export type SafetensorsDtype = keyof typeof DTYPE_BYTES;
/** The dtypes weights can be decoded from (to float32). */
export const FLOAT_DTYPES: readonly SafetensorsDtype[] = ['F32', 'F16', 'BF16', 'F64'];

export interface TensorEntry {
  name: string;
  dtype: SafetensorsDtype;
  shape: number[];
  /** Byte offsets [begin, end) relative to the start of the data section. */
  begin: number;
  end: number;
}

export interface SafetensorsHeader {
  /** Byte offset of the data section in the file (8 + header length). */
  dataStart: number;
  tensors: Map<string, TensorEntry>;
  metadata: Record<string, string>;
}

/** Thrown for any malformed or unsupported safetensors content; the message says what and where. */
export class SafetensorsError extends Error {
  constructor(file: string, what: string) {
    super(`${file}: ${what}`);
    this.name = 'SafetensorsError';
  }
}

/** Upper bound on the JSON header (the reference implementation uses 100 MB). */
export const MAX_HEADER_BYTES = 100_000_000;

/**
 * Reads the 8-byte header length from the first bytes of a file.
 * @throws SafetensorsError when the file is too short or the length is out of bounds.
 */
export function readHeaderLength(first8: Uint8Array, fileSize: number, file = 'model.safetensors'): number {
  if (first8.length < 8 || fileSize < 8) throw new SafetensorsError(file, `file is ${fileSize} bytes, too short to hold the 8-byte header length (truncated?)`);
  const n = Number(new DataView(first8.buffer, first8.byteOffset, 8).getBigUint64(0, true));
  if (n < 2 || n > MAX_HEADER_BYTES) throw new SafetensorsError(file, `header length ${n} is outside [2, ${MAX_HEADER_BYTES}] (not a safetensors file?)`);
  if (8 + n > fileSize) throw new SafetensorsError(file, `header claims ${n} bytes but the file has only ${fileSize - 8} after the length field (truncated)`);
  return n;
}

/**
 * Parses and validates the JSON header: dtypes, shapes, offsets inside the file, byte counts that
 * match shape × dtype size, and no two tensors overlapping.
 * @param headerBytes the N header bytes (after the 8-byte length).
 * @param fileSize total file size in bytes, so every tensor can be checked to lie inside the file.
 * @throws SafetensorsError naming the offending tensor and the rule it breaks.
 */
export function parseHeader(headerBytes: Uint8Array, fileSize: number, file = 'model.safetensors'): SafetensorsHeader {
  let json: unknown;
  let text: string;
  try {
    text = new TextDecoder('utf-8', { fatal: true }).decode(headerBytes);
  } catch {
    throw new SafetensorsError(file, 'header is not valid UTF-8 (not a safetensors file?)');
  }
  try {
    json = JSON.parse(text);
  } catch (e) {
    throw new SafetensorsError(file, `header is not valid JSON${jsonErrorPosition(e, text)} (not a safetensors file?)`);
  }
  if (typeof json !== 'object' || json === null || Array.isArray(json)) throw new SafetensorsError(file, 'header is not a JSON object');
  const dup = duplicateTopLevelKey(text);
  if (dup !== null) throw new SafetensorsError(file, `header names tensor "${dup}" twice (JSON.parse would keep the last silently; the file is ambiguous)`);
  const dataStart = 8 + headerBytes.length;
  const dataSize = fileSize - dataStart;
  const tensors = new Map<string, TensorEntry>();
  let metadata: Record<string, string> = {};
  for (const [name, raw] of Object.entries(json as Record<string, unknown>)) {
    if (name === '__metadata__') {
      if (raw !== null && (typeof raw !== 'object' || Array.isArray(raw) || Object.values(raw as object).some((v) => typeof v !== 'string'))) {
        throw new SafetensorsError(file, '__metadata__ is not an object of strings (the format allows only string values there)');
      }
      metadata = (raw ?? {}) as Record<string, string>;
      continue;
    }
    if (name.length === 0) throw new SafetensorsError(file, 'header has a tensor with an empty name');
    const e = raw as { dtype?: unknown; shape?: unknown; data_offsets?: unknown };
    if (typeof e !== 'object' || e === null) throw new SafetensorsError(file, `tensor "${name}": entry is not an object`);
    // Non-float tensors (e.g. Pythia's BOOL attention.bias buffers) are validated and skipped by
    // the architectures; only decoding them is refused.
    if (typeof e.dtype !== 'string' || !(e.dtype in DTYPE_BYTES)) {
      throw new SafetensorsError(file, `tensor "${name}": dtype ${JSON.stringify(e.dtype)} is not a safetensors dtype`);
    }
    const dtype = e.dtype as SafetensorsDtype;
    if (!Array.isArray(e.shape) || !e.shape.every((d) => Number.isSafeInteger(d) && d >= 0)) {
      throw new SafetensorsError(file, `tensor "${name}": shape ${JSON.stringify(e.shape)} is not a list of non-negative integers`);
    }
    const off = e.data_offsets;
    if (!Array.isArray(off) || off.length !== 2 || !off.every((d) => Number.isSafeInteger(d) && d >= 0)) {
      throw new SafetensorsError(file, `tensor "${name}": data_offsets ${JSON.stringify(off)} is not [begin, end]`);
    }
    const [begin, end] = off as number[];
    if (end < begin) throw new SafetensorsError(file, `tensor "${name}": data_offsets end ${end} < begin ${begin}`);
    if (end > dataSize) throw new SafetensorsError(file, `tensor "${name}": data_offsets [${begin}, ${end}] run past the end of the data (${dataSize} bytes; truncated file or a header that lies)`);
    const count = (e.shape as number[]).reduce((a, b) => a * b, 1);
    if (count * DTYPE_BYTES[dtype] !== end - begin) {
      throw new SafetensorsError(file, `tensor "${name}": shape [${e.shape}] × ${dtype} needs ${count * DTYPE_BYTES[dtype]} bytes but data_offsets span ${end - begin}`);
    }
    tensors.set(name, { name, dtype, shape: e.shape as number[], begin, end });
  }
  const sorted = [...tensors.values()].sort((a, b) => a.begin - b.begin);
  for (let i = 1; i < sorted.length; i++) {
    if (sorted[i].begin < sorted[i - 1].end) throw new SafetensorsError(file, `tensors "${sorted[i - 1].name}" and "${sorted[i].name}" overlap`);
  }
  return { dataStart, tensors, metadata };
}

/**
 * The first key that occurs twice at the top level of a JSON object text (already known to be
 * valid JSON), or null. JSON.parse keeps the last duplicate; the safetensors reference refuses them.
 */
export function duplicateTopLevelKey(text: string): string | null {
  const seen = new Set<string>();
  let depth = 0;
  let expectKey = false;
  for (let i = 0; i < text.length; i++) {
    const c = text[i];
    if (c === '"') {
      let j = i + 1;
      while (text[j] !== '"') j += text[j] === '\\' ? 2 : 1;
      if (depth === 1 && expectKey) {
        const key = JSON.parse(text.slice(i, j + 1)) as string;
        if (seen.has(key)) return key;
        seen.add(key);
        expectKey = false;
      }
      i = j;
    } else if (c === '{' || c === '[') {
      depth++;
      if (depth === 1 && c === '{') expectKey = true;
    } else if (c === '}' || c === ']') {
      depth--;
    } else if (c === ',' && depth === 1) {
      expectKey = true;
    }
  }
  return null;
}

/** Parses a whole safetensors file held in memory. @throws SafetensorsError */
export function parseSafetensors(bytes: Uint8Array, file = 'model.safetensors'): SafetensorsHeader {
  const n = readHeaderLength(bytes.subarray(0, 8), bytes.length, file);
  return parseHeader(bytes.subarray(8, 8 + n), bytes.length, file);
}

const f16Table = (() => {
  const t = new Float32Array(65536);
  for (let h = 0; h < 65536; h++) t[h] = fromF16Bits(h);
  return t;
})();

/** Whether this machine stores typed-array elements little-endian (as safetensors does): then aligned bytes are read through a typed view. */
const HOST_LITTLE_ENDIAN = new Uint8Array(Uint16Array.of(1).buffer)[0] === 1;

/**
 * Decodes one tensor's raw little-endian bytes to float32 (F16 and BF16 are widened exactly; F64 rounded).
 * The result is a new array (no view of `raw`). Bytes at an offset aligned to the element size are
 * read through a typed view of `raw` (BF16: each half shifted into the high 16 bits of the float's
 * word, written through a Uint32 view of the result; F32: one copy), others through a DataView.
 * @param raw exactly entry.end − entry.begin bytes.
 * @throws Error for a non-float dtype (weights must be F32, F16, BF16 or F64).
 */
export function decodeTensor(raw: Uint8Array, dtype: SafetensorsDtype): Float32Array {
  if (!FLOAT_DTYPES.includes(dtype)) throw new Error(`dtype ${dtype} cannot be read as float weights (expected one of ${FLOAT_DTYPES.join(', ')})`);
  const size = DTYPE_BYTES[dtype];
  const n = raw.length / size;
  const out = new Float32Array(n);
  const aligned = HOST_LITTLE_ENDIAN && raw.byteOffset % size === 0;
  if (dtype === 'F32' && aligned) {
    out.set(new Float32Array(raw.buffer, raw.byteOffset, n));
  } else if (dtype === 'BF16' && aligned) {
    const h = new Uint16Array(raw.buffer, raw.byteOffset, n), u = new Uint32Array(out.buffer);
    for (let i = 0; i < n; i++) u[i] = h[i] << 16;
  } else if (dtype === 'F16' && aligned) {
    const h = new Uint16Array(raw.buffer, raw.byteOffset, n);
    for (let i = 0; i < n; i++) out[i] = f16Table[h[i]];
  } else {
    const dv = new DataView(raw.buffer, raw.byteOffset, raw.byteLength);
    if (dtype === 'F64') {
      for (let i = 0; i < n; i++) out[i] = dv.getFloat64(i * 8, true);
    } else if (dtype === 'F32') {
      for (let i = 0; i < n; i++) out[i] = dv.getFloat32(i * 4, true);
    } else if (dtype === 'F16') {
      for (let i = 0; i < n; i++) out[i] = f16Table[dv.getUint16(i * 2, true)];
    } else {
      const u = new Uint32Array(out.buffer);
      for (let i = 0; i < n; i++) u[i] = dv.getUint16(i * 2, true) << 16;
    }
  }
  return out;
}
