/**
 * GGUF inputs for the bad-input corpus: stories260K written as a Q8_0 GGUF file by
 * tools/gguf_write.ts, then one thing changed in its bytes.
 */
import { hfToGguf } from '../../tools/gguf_write';
import { modelFiles, type FileMap } from '../hardening/model_variants';
import { sharedPath } from '../shared';

/** stories260K as model.gguf (Q8_0 linear weights) beside its tokenizer, after `edit`. */
export function ggufFolder(edit: (b: Uint8Array) => Uint8Array = (b) => b): FileMap {
  const f = modelFiles();
  f.delete('model.safetensors');
  f.delete('config.json');
  return f.set('model.gguf', edit(hfToGguf(sharedPath('models', 'stories260K'), 'q8_0')));
}

/** Offset of the tensor info of `name` (just after its name string) in a GGUF v3 file. */
function tensorInfo(b: Uint8Array, name: string): number {
  const key = new TextEncoder().encode(name);
  for (let i = 8; i + key.length <= b.length; i++) {
    if (b.subarray(i, i + key.length).every((x, j) => x === key[j]) && new DataView(b.buffer, b.byteOffset + i - 8, 8).getBigUint64(0, true) === BigInt(key.length)) {
      const after = i + key.length;
      const dims = new DataView(b.buffer, b.byteOffset + after, 4).getUint32(0, true);
      if (dims >= 1 && dims <= 4) return after;
    }
  }
  throw new Error(`no tensor info for ${name}`);
}

/** Sets the GGML type of tensor `name`. */
export function setTensorType(b: Uint8Array, name: string, type: number): Uint8Array {
  const o = tensorInfo(b, name), dv = new DataView(b.buffer, b.byteOffset);
  const dims = dv.getUint32(o, true);
  dv.setUint32(o + 4 + 8 * dims, type, true);
  return b;
}

/** Sets the data offset of tensor `name`. */
export function setTensorOffset(b: Uint8Array, name: string, offset: bigint): Uint8Array {
  const o = tensorInfo(b, name), dv = new DataView(b.buffer, b.byteOffset);
  const dims = dv.getUint32(o, true);
  dv.setBigUint64(o + 4 + 8 * dims + 4, offset, true);
  return b;
}

/** Replaces the first occurrence of an ASCII string by another of the same length. */
export function replaceAscii(b: Uint8Array, from: string, to: string): Uint8Array {
  const f = new TextEncoder().encode(from), t = new TextEncoder().encode(to);
  for (let i = 0; i + f.length <= b.length; i++) {
    if (b.subarray(i, i + f.length).every((x, j) => x === f[j])) { b.set(t, i); return b; }
  }
  throw new Error(`"${from}" not found`);
}

/** Offset of the value of metadata key `key` (after its u32 value type) and that type. */
function metaValue(b: Uint8Array, key: string): { at: number; type: number } {
  const k = new TextEncoder().encode(key);
  for (let i = 8; i + k.length + 4 <= b.length; i++) {
    if (b.subarray(i, i + k.length).every((x, j) => x === k[j]) && new DataView(b.buffer, b.byteOffset + i - 8, 8).getBigUint64(0, true) === BigInt(k.length)) {
      const at = i + k.length;
      return { at: at + 4, type: new DataView(b.buffer, b.byteOffset + at, 4).getUint32(0, true) };
    }
  }
  throw new Error(`no metadata key ${key}`);
}

/** Sets a numeric metadata value (UINT32 or FLOAT32, as the file stores it). */
export function setMeta(b: Uint8Array, key: string, v: number): Uint8Array {
  const { at, type } = metaValue(b, key), dv = new DataView(b.buffer, b.byteOffset);
  if (type === 4) dv.setUint32(at, v, true);
  else if (type === 6) dv.setFloat32(at, v, true);
  else throw new Error(`metadata ${key} has type ${type}`);
  return b;
}
