/**
 * When a vector about to enter the library is one it holds already (trials pressed "Build vector"
 * twice and got two identical rows). Comparisons only; no model maths.
 */
import type { LibraryVector } from '../../workers/protocol';

/** The fields that define a library vector: everything but when it was made (createdAt). */
const definition = (v: LibraryVector) => JSON.stringify([v.hook, v.model, v.dModel, v.file ?? null, v.provenance]);

/** True when the values are the same float32 numbers, bit for bit (NaN payloads included). */
function sameBits(a: Float32Array, b: Float32Array): boolean {
  if (a.length !== b.length) return false;
  const x = new Uint32Array(a.buffer, a.byteOffset, a.length), y = new Uint32Array(b.buffer, b.byteOffset, b.length);
  for (let i = 0; i < x.length; i++) if (x[i] !== y[i]) return false;
  return true;
}

/**
 * The entry of `library` that `v` (to be named `name`) would duplicate: the same name, hook, model,
 * width, file and provenance (method, token position, contrastive texts, head) and bit-identical
 * values. A vector rebuilt on another load of the model (other weights, other numbers) is not one.
 */
export function sameVectorIn<T extends LibraryVector & { name: string }>(library: readonly T[], v: LibraryVector, name: string): T | undefined {
  const d = definition(v);
  return library.find((e) => e.name === name && definition(e) === d && sameBits(e.vector, v.vector));
}
