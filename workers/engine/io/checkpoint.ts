import { firstNonFinite } from '../analysis/finite';
import type { WeightSource } from '../arch/types';
import type { ModelFiles } from './model_files';
import { readJson } from './model_files';
import { assertSafeRelativePath } from './safe_names';
import { decodeTensor, parseSafetensors, type SafetensorsHeader } from './safetensors';

/**
 * The checkpoint's shards: those named in `model.safetensors.index.json` (its `weight_map`, every
 * name checked to stay inside the folder), else `model.safetensors`. Read by openCheckpoint and by
 * the memory estimate (model/estimate.ts) alike, so both refuse the same bad index the same way.
 * @throws Error when no safetensors file exists (pickle checkpoints are never loaded), or for a
 *   weight_map that is not an object, is empty, or names a shard that is not a plain relative path.
 */
export async function checkpointShards(files: ModelFiles): Promise<{ shards: string[]; weightMap: Record<string, string> | null }> {
  let shards: string[];
  let weightMap: Record<string, string> | null = null;
  if (await files.has('model.safetensors.index.json')) {
    const index = await readJson(files, 'model.safetensors.index.json');
    const wm = index.weight_map;
    if (typeof wm !== 'object' || wm === null || Array.isArray(wm)) throw new Error(`${files.label}: model.safetensors.index.json has no "weight_map" object (expected {"tensor name": "shard file"})`);
    weightMap = wm as Record<string, string>;
    if (Object.keys(weightMap).length === 0) throw new Error(`${files.label}: model.safetensors.index.json "weight_map" is empty (expected {"tensor name": "shard file"})`);
    for (const [name, shard] of Object.entries(weightMap)) {
      if (typeof shard !== 'string') throw new Error(`${files.label}: model.safetensors.index.json weight_map["${name}"] is ${JSON.stringify(shard)}; expected a shard file name`);
      assertSafeRelativePath(shard, `${files.label}: model.safetensors.index.json weight_map["${name}"]`);
    }
    shards = [...new Set(Object.values(weightMap))];
  } else if (await files.has('model.safetensors')) {
    shards = ['model.safetensors'];
  } else {
    throw new Error(`${files.label}: no model.safetensors or model.safetensors.index.json (only safetensors checkpoints are loaded, never pickle)`);
  }
  return { shards, weightMap };
}

/**
 * Opens a checkpoint: `model.safetensors`, or the shards listed in `model.safetensors.index.json`
 * (its `weight_map` names the shard of every tensor). Shards are read whole and validated.
 * @throws Error when no safetensors file exists (pickle checkpoints are never loaded) or a shard is malformed.
 */
export async function openCheckpoint(files: ModelFiles, onProgress?: (loaded: number, total: number) => void): Promise<WeightSource> {
  const { shards, weightMap } = await checkpointShards(files);
  const opened = new Map<string, { bytes: Uint8Array; header: SafetensorsHeader }>();
  const sizes = await Promise.all(shards.map((s) => files.size(s).catch(() => 0)));
  const total = sizes.reduce((a, b) => a + b, 0);
  let done = 0;
  for (const shard of shards) {
    const bytes = await files.bytes(shard, (l) => onProgress?.(done + l, total));
    done += bytes.length;
    opened.set(shard, { bytes, header: parseSafetensors(bytes, shard) });
  }
  const where = new Map<string, string>();
  for (const [shard, { header }] of opened) for (const name of header.tensors.keys()) where.set(name, shard);
  if (weightMap) {
    for (const [name, shard] of Object.entries(weightMap)) {
      if (where.get(name) !== shard) throw new Error(`${files.label}: index says "${name}" is in ${shard}, but it is not there`);
    }
  }
  return {
    freshArrays: true,
    has: (name) => where.has(name),
    names: () => [...where.keys()],
    get(name) {
      const shard = where.get(name);
      if (!shard) throw new Error(`${files.label}: checkpoint has no tensor "${name}" (is this the architecture config.json claims?)`);
      const { bytes, header } = opened.get(shard)!;
      const e = header.tensors.get(name)!;
      const raw = bytes.subarray(header.dataStart + e.begin, header.dataStart + e.end);
      let data: Float32Array;
      try {
        data = decodeTensor(raw, e.dtype);
      } catch (err) {
        throw new Error(`${files.label}/${shard}: tensor "${name}": ${(err as Error).message}`);
      }
      const bad = firstNonFinite(data);
      if (bad >= 0) throw new Error(`${files.label}/${shard}: tensor "${name}" holds ${data[bad]} at index ${bad} (shape [${e.shape}], ${e.dtype}): weights must be finite`);
      return { data, shape: e.shape };
    },
  };
}
