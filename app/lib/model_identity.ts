/**
 * Which loaded model a result was computed with: the model, its weight storage and the backend.
 * Two loads of the same model with other weights (float32 → Q8_0) or on another backend (WebGPU →
 * CPU) give different numbers, so a result of one is stale under the other. Comparisons only.
 */
import type { ModelInfo, WeightDtype } from '../../workers/protocol';

const STORAGE: Record<WeightDtype, string> = { f32: 'float32', f16: 'binary16', q8_0: 'Q8_0', q4_0: 'Q4_0' };
const BACKEND: Record<ModelInfo['backend']['kind'], string> = { cpu: 'CPU', webgpu: 'WebGPU' };

/**
 * "stories260K · Q8_0 · CPU": the model label, the weight storage (ModelInfo.weights.dtype) and the
 * backend kind of a finished load. Equal strings mean the same numbers for the same request.
 */
export function modelIdentity(label: string, info: Pick<ModelInfo, 'weights' | 'backend'>): string {
  // (a worker of an older build may leave a field out: the identity then says so rather than throwing)
  const dtype = info.weights?.dtype, kind = info.backend?.kind;
  return `${label} · ${dtype ? STORAGE[dtype] ?? dtype : 'storage unknown'} · ${kind ? BACKEND[kind] ?? kind : 'backend unknown'}`;
}

/**
 * Whether a result computed with `computedWith` (a modelIdentity) was computed with the same model
 * label as the one loaded now (`label`), but another storage or backend (`now`, null while no model
 * is ready). A different label is the 'model' change (ResultStatus: "from the previous model").
 */
export function reloadedSince(computedWith: string, modelLabel: string, now: { label: string | null; identity: string | null }): boolean {
  // '' = not known (a job queued while a load ran: the worker runs it after that load, on the new weights)
  return computedWith !== '' && now.label === modelLabel && now.identity !== null && now.identity !== computedWith;
}

/** The model ready now and its identity (both null while none is: loading, or the last load failed). */
export interface LoadedNow { label: string | null; identity: string | null }

/** The model ready now, from the model slice's fields (app/store/model.ts). */
export function loadedNow(s: { modelStatus: string; modelLabel: string | null; modelIdentity: string | null }): LoadedNow {
  return s.modelStatus === 'ready' ? { label: s.modelLabel, identity: s.modelIdentity } : { label: null, identity: null };
}

/**
 * Whether a result of model `modelLabel`, computed with `computedWith`, still belongs to the load
 * ready now: 'model' when another model (or none) is ready, 'load' when the same model was loaded
 * again with another storage or backend (reloadedSince), null when it belongs.
 */
export function loadStaleness(modelLabel: string, computedWith: string, now: LoadedNow): 'model' | 'load' | null {
  if (now.label !== modelLabel) return 'model';
  return reloadedSince(computedWith, modelLabel, now) ? 'load' : null;
}

/**
 * "computed with stories260K · float32 · WebGPU (stories260K · Q8_0 · CPU is loaded now)", or
 * "computed with the previous model (stories260K; no model is loaded now)": why a result of another
 * load is stale, in words; '' when it is not.
 */
export function loadStaleText(modelLabel: string, computedWith: string, now: LoadedNow): string {
  const why = loadStaleness(modelLabel, computedWith, now);
  if (why === 'load') return `computed with ${computedWith} (${now.identity} is loaded now)`;
  if (why === 'model') return `computed with the previous model (${modelLabel}; ${now.label ? `${now.label} is loaded now` : 'no model is loaded now'})`;
  return '';
}
