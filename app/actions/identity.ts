import { useStore } from '../store';

/**
 * The load a job's result is computed with (lib/model_identity.ts modelIdentity: "stories260K ·
 * float32 · WebGPU"): the identity of the model ready now, or '' while none is — a job queued while
 * a load runs runs after it in the worker, on weights not known yet, and '' is never 'load'-stale
 * (reloadedSince). Every action that stores a result reads it here, so results cannot disagree on it.
 */
export function currentIdentity(): string {
  return useStore.getState().modelIdentity ?? '';
}
