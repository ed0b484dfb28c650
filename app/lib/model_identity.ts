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
