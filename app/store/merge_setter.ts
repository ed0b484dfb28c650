import type { StoreApi } from 'zustand';
import type { AppState } from './index';

/** Keys of the store whose value is a settings object (a view's setup, the generation settings …). */
type ObjectKey = { [K in keyof AppState]: AppState[K] extends object ? (AppState[K] extends (...args: never[]) => unknown ? never : K) : never }[keyof AppState];

/**
 * The setter of a settings object in the store: merges a patch into `store[key]` (the fields not
 * in the patch are kept). Shared by every slice that keeps a view's settings (patching, probes,
 * window, report, sweep, batch columns, fork draws, generation).
 */
export function mergeSetter<K extends ObjectKey>(set: StoreApi<AppState>['setState'], key: K): (patch: Partial<AppState[K]>) => void {
  return (patch) => set((s) => ({ [key]: { ...s[key], ...patch } }) as Pick<AppState, K>);
}
