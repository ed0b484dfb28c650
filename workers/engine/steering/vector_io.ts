/**
 * Steering-vector files: import and export of one vector in three formats, from bytes to bytes
 * (no file system here, so it runs in Node and in the browser alike).
 * - .npy (NumPy format 1.0–3.0, https://numpy.org/doc/stable/reference/generated/numpy.lib.format.html):
 *   float32 or float64 of either byte order, shape (d,) or (1, d). fortran_order is accepted only
 *   because it lays out these two shapes exactly as C order does. Written as '<f4', shape (d,).
 * - .safetensors: one F32/F16/BF16 tensor of shape [d] or [1, d] (when a file holds several, the one
 *   named `steering_vector`), with `__metadata__` {model, hook, d_model, method, provenance}.
 * - .json: {model, hook, d_model, method, vector: [...], provenance}, or a bare array of numbers.
 */
import { jsonErrorPosition } from '../io/model_files';
import { readNpyArray, writeNpyArray } from '../io/npy';
import { assertUtf8Text, DuplicateKeyError, parseStrictJson } from '../io/strict_json';
import type { ModelSpec } from '../arch/spec';
import { decodeTensor, parseSafetensors } from '../io/safetensors';
import { hookWidth } from '../model/hook_width';
import { assertFinite } from './spec';
import type { SteeringVector } from './vector';

export type VectorFormat = 'npy' | 'safetensors' | 'json';

/** A vector read from a file, with whatever the file says about where it came from. */
export interface ImportedVector {
  /** [d] float32. */
  vector: Float32Array;
  model?: string;
  hook?: string;
  dModel?: number;
  method?: string;
  provenance?: Record<string, unknown>;
}

/** Format from a file name's extension. @throws Error for any other extension. */
export function formatOf(name: string): VectorFormat {
  const ext = /\.([a-z]+)$/i.exec(name)?.[1]?.toLowerCase();
  if (ext === 'npy' || ext === 'safetensors' || ext === 'json') return ext;
  throw new Error(`${name}: unknown vector file type; use .npy, .safetensors or .json`);
}

/**
 * Reads one steering vector from a file's bytes (format from the name's extension).
 * @throws Error naming the file and the problem: bad magic or header, unsupported dtype, a shape
 *   that is not (d,) or (1, d), truncated data, NaN/Infinity (with the index), or a d_model in the
 *   metadata that disagrees with the data.
 */
export function readVectorFile(name: string, bytes: Uint8Array): ImportedVector {
  const format = formatOf(name);
  const out = format === 'npy' ? { vector: readNpy(bytes, name) } : format === 'safetensors' ? readSafetensorsVector(bytes, name) : readJsonVector(bytes, name);
  assertFinite(out.vector, name);
  if (out.dModel !== undefined && out.dModel !== out.vector.length) {
    throw new Error(`${name}: metadata says d_model = ${out.dModel} but the vector has ${out.vector.length} values`);
  }
  return out;
}

/**
 * Checks an imported vector against the row width of the hook it will steer.
 * @param head per-head hooks: the vector is one head's d_head values.
 * @throws Error saying expected vs got and the hook's width.
 */
export function assertVectorFits(v: ArrayLike<number>, model: ModelSpec, hook: string, file: string, head?: number): void {
  const hw = hookWidth(model, hook);
  const want = head === undefined ? hw.width : model.dHead;
  if (v.length === want) return;
  const what = head === undefined ? `${hook} is [pos, ${hw.symbol}] = ${hw.width} wide` : `one head of ${hook} is d_head = ${model.dHead} wide`;
  throw new Error(`${file} holds a vector of ${v.length} values, but ${what} in this model (expected ${want}, got ${v.length}); was it made for another model or hook?`);
}

/** Serialises a steering vector in the given format. */
export function writeVectorFile(format: VectorFormat, sv: SteeringVector): Uint8Array {
  if (format === 'npy') return writeNpy(sv.vector);
  if (format === 'safetensors') return writeSafetensorsVector(sv);
  const json = { model: sv.modelId, hook: sv.hook, d_model: sv.dModel, method: sv.provenance.method, vector: Array.from(sv.vector), provenance: sv.provenance };
  return new TextEncoder().encode(JSON.stringify(json, null, 1) + '\n');
}

/** Parses a .npy vector. @throws Error for anything but float32/float64 of shape (d,) or (1, d). */
export function readNpy(bytes: Uint8Array, name = 'vector.npy'): Float32Array {
  const { data, shape } = readNpyArray(bytes, name, 'vector');
  const shapeText = shape.length === 1 ? `(${shape[0]},)` : `(${shape.join(', ')})`;
  const one = shape.length === 1 || (shape.length === 2 && shape[0] === 1);
  if (!one) throw new Error(`${name}: shape ${shapeText} is not one vector; a steering vector file holds shape (d,) or (1, d)`);
  return data;
}


/** Writes a .npy 1.0 file: '<f4', C order, shape (d,) (io/npy.ts). */
export function writeNpy(v: Float32Array): Uint8Array {
  return writeNpyArray(v, [v.length]);
}

function readSafetensorsVector(bytes: Uint8Array, name: string): ImportedVector {
  const h = parseSafetensors(bytes, name);
  const names = [...h.tensors.keys()];
  const pick = names.length === 1 ? names[0] : h.tensors.has('steering_vector') ? 'steering_vector' : undefined;
  if (!pick) throw new Error(`${name}: holds ${names.length} tensors (${names.join(', ')}); a vector file holds one, or one named "steering_vector"`);
  const e = h.tensors.get(pick)!;
  const ok = e.shape.length === 1 || (e.shape.length === 2 && e.shape[0] === 1);
  if (!ok) throw new Error(`${name}: tensor "${pick}" has shape [${e.shape.join(', ')}]; a steering vector is [d] or [1, d]`);
  let vector: Float32Array;
  try {
    vector = decodeTensor(bytes.subarray(h.dataStart + e.begin, h.dataStart + e.end), e.dtype);
  } catch (err) {
    throw new Error(`${name}: tensor "${pick}": ${(err as Error).message}`);
  }
  const m = h.metadata;
  let provenance: Record<string, unknown> | undefined;
  if (m.provenance) {
    try { provenance = JSON.parse(m.provenance) as Record<string, unknown>; } catch { throw new Error(`${name}: __metadata__.provenance is not JSON`); }
  }
  return {
    vector,
    ...(m.model ? { model: m.model } : {}),
    ...(m.hook ? { hook: m.hook } : {}),
    ...(m.d_model ? { dModel: Number(m.d_model) } : {}),
    ...(m.method ? { method: m.method } : {}),
    ...(provenance ? { provenance } : {}),
  };
}

function writeSafetensorsVector(sv: SteeringVector): Uint8Array {
  const d = sv.vector.length;
  const meta = { model: sv.modelId, hook: sv.hook, d_model: String(sv.dModel), method: sv.provenance.method, provenance: JSON.stringify(sv.provenance) };
  const json = JSON.stringify({ __metadata__: meta, steering_vector: { dtype: 'F32', shape: [d], data_offsets: [0, 4 * d] } });
  const raw = new TextEncoder().encode(json);
  // The data section starts 8-byte aligned: pad the header with spaces (as the reference writer does).
  const hb = new TextEncoder().encode(json + ' '.repeat((8 - (raw.length % 8)) % 8));
  const out = new Uint8Array(8 + hb.length + 4 * d);
  const dv = new DataView(out.buffer);
  dv.setBigUint64(0, BigInt(hb.length), true);
  out.set(hb, 8);
  for (let i = 0; i < d; i++) dv.setFloat32(8 + hb.length + 4 * i, sv.vector[i], true);
  return out;
}

function readJsonVector(bytes: Uint8Array, name: string): ImportedVector {
  let j: unknown;
  const text = new TextDecoder().decode(bytes);
  assertUtf8Text(text, name);
  try {
    j = parseStrictJson(text);
  } catch (e) {
    if (e instanceof DuplicateKeyError) throw new Error(`${name} ${e.message}`);
    throw new Error(`${name}: not valid JSON${jsonErrorPosition(e, text)}`);
  }
  if (Array.isArray(j)) {
    assertFinite(j, name);
    return { vector: Float32Array.from(j as number[]) };
  }
  const o = j as { vector?: unknown; model?: unknown; hook?: unknown; d_model?: unknown; method?: unknown; provenance?: unknown };
  if (typeof o !== 'object' || o === null || !Array.isArray(o.vector)) throw new Error(`${name}: expected {"model", "hook", "d_model", "vector": [...]} or an array of numbers`);
  assertFinite(o.vector, `${name}: vector`);
  return {
    vector: Float32Array.from(o.vector as number[]),
    ...(typeof o.model === 'string' ? { model: o.model } : {}),
    ...(typeof o.hook === 'string' ? { hook: o.hook } : {}),
    ...(typeof o.d_model === 'number' ? { dModel: o.d_model } : {}),
    ...(typeof o.method === 'string' ? { method: o.method } : {}),
    ...(typeof o.provenance === 'object' && o.provenance !== null ? { provenance: o.provenance as Record<string, unknown> } : {}),
  };
}
