import * as fs from 'node:fs';
import * as path from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseSafetensors, decodeTensor } from '../workers/engine/io/safetensors';

/**
 * ../shared (or $BRANCHPOINT_SHARED); fails loudly when absent so CI never skips silently. Found
 * through import.meta.url, so Playwright's ESM loader can import this module too (e2e specs reach it
 * through the bad-input corpus).
 */
export const SHARED = path.resolve(process.env.BRANCHPOINT_SHARED ?? fileURLToPath(new URL('../../shared', import.meta.url)));
if (!fs.existsSync(path.join(SHARED, 'models'))) {
  throw new Error(`golden data not found at ${SHARED}: set BRANCHPOINT_SHARED to the shared/ folder`);
}
export const sharedPath = (...p: string[]) => path.join(SHARED, ...p);

/** Reads every tensor of a reference safetensors file. */
export function readReference(file: string): Map<string, { data: Float32Array; shape: number[] }> {
  const bytes = new Uint8Array(fs.readFileSync(file));
  const h = parseSafetensors(bytes, path.basename(file));
  const out = new Map<string, { data: Float32Array; shape: number[] }>();
  for (const [name, e] of h.tensors) out.set(name, { data: decodeTensor(bytes.subarray(h.dataStart + e.begin, h.dataStart + e.end), e.dtype), shape: e.shape });
  return out;
}

export function maxAbsDiff(a: ArrayLike<number>, b: ArrayLike<number>): number {
  if (a.length !== b.length) throw new Error(`length ${a.length} vs ${b.length}`);
  let m = 0;
  for (let i = 0; i < a.length; i++) m = Math.max(m, Math.abs(a[i] - b[i]));
  return m;
}
