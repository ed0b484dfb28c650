import type { Backend } from './engine/backend/backend';
import { WebGpuBackend } from './engine/backend/webgpu';
import { withCache } from './engine/io/cache';
import { assertFits, type DeviceLimits } from './engine/model/estimate';
import { HubFiles } from './engine/io/hub_files';
import { HttpFiles, MemoryFiles, type ModelFiles } from './engine/io/model_files';
import { isGgufFolder, type WeightDtype } from './engine/model/load';
import type { ModelSource } from './protocol';

export interface OpenOptions {
  /**
   * When given, 'hub' and 'url' models are estimated from config.json and the safetensors headers
   * and refused (ModelTooLargeError) before any weight is fetched (a GGUF folder, which has
   * neither, is not estimated).
   */
  limits?: DeviceLimits;
  /** Weight storage the load will use, for the estimate (default 'f32'). */
  weightDtype?: WeightDtype;
  /** KV-cache positions the load will allocate, for the estimate (default 4096; model/load.ts TransformerOptions). */
  contextLength?: number;
  /** Cancels downloads in flight (they reject with CancelledError). */
  signal?: AbortSignal;
  /** Cache Storage for Hub models (default: the global `caches`; null = no caching). */
  cache?: CacheStorage | null;
}

/**
 * Opens a model source as ModelFiles: a Hub repo (cached in Cache Storage, so a second load is
 * offline), a URL prefix, or picked files.
 * @throws Error for a malformed Hub id or endpoint; ModelTooLargeError, or the gated/not-found
 *   errors of HubFiles, when `limits` is given and the estimate fails.
 */
export async function filesFor(source: ModelSource, opts: OpenOptions = {}): Promise<ModelFiles> {
  let files: ModelFiles;
  switch (source.kind) {
    case 'url':
      files = new HttpFiles(source.label ?? source.url, new URL(source.url, self.location.href).href, { signal: opts.signal }, source.files && new Map(source.files.map((f) => [f.path, f.bytes])));
      break;
    case 'files': {
      const map = new Map<string, Uint8Array>();
      for (const { path, file } of source.files) map.set(path.split('/').slice(-1)[0], new Uint8Array(await file.arrayBuffer()));
      return new MemoryFiles(source.label, map);
    }
    case 'hub': {
      const hub = new HubFiles(source.repo, { revision: source.revision, endpoint: source.endpoint, token: source.token, signal: opts.signal });
      files = await withCache(hub, { base: hub.url(''), endpoint: hub.endpoint, repo: hub.repo, revision: hub.revision }, opts.cache);
      break;
    }
  }
  // a GGUF folder has no config.json or safetensors headers to estimate from (its config is in the
  // file's metadata): it is not refused here, as the worker's load does not estimate it either
  if (opts.limits && !(await isGgufFolder(files))) await assertFits(files, opts.limits, { weightDtype: opts.weightDtype, contextLength: opts.contextLength });
  return files;
}

/** Memory budget when the caller gives none: the device's RAM as the browser reports it (navigator.deviceMemory, GiB, rounded down and capped by the browser: 16 in Chromium 150 on a 24 GB machine), else 4 GiB. */
export function defaultMemoryBudget(): number {
  const gib = (globalThis as { navigator?: { deviceMemory?: number } }).navigator?.deviceMemory;
  return (gib ?? 4) * 2 ** 30;
}

/**
 * The limits a model must fit on this backend: the WebGPU device's buffer limits, or none on the
 * CPU backend; the budget as given, else defaultMemoryBudget().
 */
export function deviceLimits(be: Backend, memoryBudget = defaultMemoryBudget()): DeviceLimits {
  if (be instanceof WebGpuBackend) {
    const l = be.device.limits;
    return { maxBufferSize: l.maxBufferSize, maxStorageBufferBindingSize: l.maxStorageBufferBindingSize, memoryBudget, device: `this GPU (${be.description})` };
  }
  return { maxBufferSize: Infinity, maxStorageBufferBindingSize: Infinity, memoryBudget, device: 'the CPU backend' };
}
