/**
 * The runner's `fit` subcommand: the size ladder (workers/engine/model/size_ladder.ts) of --model —
 * bytes per weight storage and the KV cache for --context tokens, judged against the CPU backend and
 * this machine's RAM, or against the adapter limits given by --memory-mib / --binding-mib — from
 * config.json and the safetensors headers alone (a Hub model is not downloaded).
 */
import * as os from 'node:os';
import type { ModelFiles } from '../workers/engine/io/model_files';
import type { DeviceLimits } from '../workers/engine/model/estimate';
import { sizeLadder } from '../workers/engine/model/size_ladder';
import { int, type Values } from './flags';
import type { COMMON_FLAGS } from './shared_flags';

const MIB = 1024 * 1024;

export const FIT_FLAGS = {
  context: int({ min: 1, max: 1 << 24 }).describe('KV-cache positions (default 4096, capped at max_position_embeddings)'),
  'memory-mib': int({ min: 1 }).describe('judge against this memory budget in MiB (default: all of this machine\'s RAM)'),
  'binding-mib': int({ min: 1 }).describe('judge against this largest buffer binding in MiB, as a WebGPU adapter\'s maxStorageBufferBindingSize (default: none, the CPU backend)'),
};
export type FitFlags = Values<typeof FIT_FLAGS> & Values<typeof COMMON_FLAGS>;

export const FIT_ABOUT = `fit prints {model, device, context_length, rungs: [{storage: f32|f16|q8_0|q4_0, params, weight_bytes,
kv_cache_bytes, activation_bytes, total_bytes, largest_unsplittable: {name, bytes}, fits, reason}]}: the model's
memory under each weight storage (bytes; KV cache float32 for context_length positions), read from config.json
and the safetensors headers only — nothing is downloaded, --weights is ignored — and whether each fits
the device (the CPU backend and this machine's RAM, or the limits given by --memory-mib / --binding-mib).`;

/** The runner's device: the CPU backend, with all of this machine's RAM as its budget (bytes). */
export function cpuLimits(): DeviceLimits {
  return { maxBufferSize: Infinity, maxStorageBufferBindingSize: Infinity, memoryBudget: os.totalmem(), device: 'this machine (CPU backend, all of its RAM)' };
}

/** The limits --memory-mib / --binding-mib describe (MiB → bytes), else cpuLimits(). */
function fitLimits(f: FitFlags): DeviceLimits {
  const base = cpuLimits();
  if (f['memory-mib'] === undefined && f['binding-mib'] === undefined) return base;
  const binding = f['binding-mib'] === undefined ? Infinity : f['binding-mib'] * MIB;
  const memoryBudget = f['memory-mib'] === undefined ? base.memoryBudget : f['memory-mib'] * MIB;
  const device = `the given adapter (${f['memory-mib'] === undefined ? 'this machine\'s RAM' : `${f['memory-mib']} MiB memory`}, ${f['binding-mib'] === undefined ? 'no binding limit' : `${f['binding-mib']} MiB binding`})`;
  return { maxBufferSize: binding, maxStorageBufferBindingSize: binding, memoryBudget, device };
}

/**
 * The ladder as the runner prints it (sizes in bytes).
 * @throws the errors of sizeLadder (unsupported model_type, missing checkpoint, malformed header).
 */
export async function fitCommand(files: ModelFiles, f: FitFlags): Promise<unknown> {
  const ladder = await sizeLadder(files, fitLimits(f), f.context);
  return {
    model: ladder.label, device: ladder.device, context_length: ladder.contextLength,
    rungs: ladder.rungs.map((r) => ({
      storage: r.weightDtype, params: r.estimate.params, weight_bytes: r.estimate.weightBytes, kv_cache_bytes: r.estimate.kvCacheBytes,
      activation_bytes: r.estimate.activationBytes, total_bytes: r.estimate.totalBytes,
      largest_unsplittable: { name: r.estimate.largestUnsplittable.name, bytes: r.estimate.largestUnsplittable.bytes }, fits: r.fits, reason: r.reason,
    })),
  };
}
