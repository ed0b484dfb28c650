import * as fs from 'node:fs';
import { zipSync } from 'fflate';
import { MemoryFiles } from '../../workers/engine/io/model_files';
import { writeNpyArray } from '../../workers/engine/io/npy';
import { encodeSafetensors } from '../../tools/safetensors_write';
import { readReference, sharedPath } from '../shared';

/** The two SAEs of ../shared/saes (README there): SAELens standard (ReLU) and JumpReLU, at blocks.2.hook_resid_post. */
export const SAE_DIRS = {
  relu: sharedPath('saes', 'stories260K-blocks.2.hook_resid_post-relu'),
  jumprelu: sharedPath('saes', 'stories260K-blocks.2.hook_resid_post-jumprelu'),
} as const;

/** A folder's files as a map, some replaced or added (`null` removes one): malformed variants for tests. */
export function saeFileMap(dir: string, changes: Record<string, Uint8Array | string | null> = {}): Map<string, Uint8Array> {
  const map = new Map<string, Uint8Array>();
  for (const f of fs.readdirSync(dir)) map.set(f, new Uint8Array(fs.readFileSync(`${dir}/${f}`)));
  for (const [k, v] of Object.entries(changes)) {
    if (v === null) map.delete(k);
    else map.set(k, typeof v === 'string' ? new TextEncoder().encode(v) : v);
  }
  return map;
}

/** saeFileMap as in-memory files labelled `label`. */
export function folderWith(dir: string, changes: Record<string, Uint8Array | string | null> = {}, label = 'test SAE'): MemoryFiles {
  return new MemoryFiles(label, saeFileMap(dir, changes));
}

/** The folder's sae_weights.safetensors with some tensors replaced (null = left out), F32. */
export function weightsWith(dir: string, changes: Record<string, { data: Float32Array; shape: number[] } | null>): Uint8Array {
  const list = [...readReference(`${dir}/sae_weights.safetensors`)].flatMap(([name, t]) => {
    const c = name in changes ? changes[name] : t;
    return c ? [{ name, shape: c.shape, data: c.data, dtype: 'F32' as const }] : [];
  });
  return encodeSafetensors(list, {});
}

/** The folder's cfg.json with keys replaced (undefined drops one), as text. */
export function cfgWith(dir: string, patch: Record<string, unknown>): string {
  return JSON.stringify({ ...(JSON.parse(fs.readFileSync(`${dir}/cfg.json`, 'utf8')) as Record<string, unknown>), ...patch });
}

/**
 * A Gemma Scope params.npz (numpy.savez layout: a stored zip of <name>.npy) built from the tensors
 * of a SAELens sae_weights.safetensors, with fflate.
 */
export function npzFromSafetensors(file: string, rename: Record<string, string> = {}): Uint8Array {
  const entries: Record<string, Uint8Array> = {};
  for (const [name, t] of readReference(file)) entries[`${rename[name] ?? name}.npy`] = writeNpyArray(t.data, t.shape);
  return zipSync(entries, { level: 0 });
}
