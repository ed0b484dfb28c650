import type { StateCreator } from 'zustand';
import type { AppState } from './index';

/** One hook captured for the analysed prompt. */
export interface CapturedHook {
  /** TransformerLens hook name, e.g. "blocks.2.hook_resid_post". */
  hook: string;
  /** [n_tokens, values per token] */
  shape: [number, number];
  /** Row-major float32 [n_tokens, width]. */
  data: Float32Array;
  tokens: string[];
  model: string;
  prompt: string;
}

/** The activations view: the hook it captures (saved with the experiment as `view.hook`) and the last capture. */
export interface ActivationsSlice {
  activationsHook: string;
  captured: CapturedHook | null;
  setActivationsHook(hook: string): void;
  setCaptured(c: CapturedHook | null): void;
}

export const DEFAULT_ACTIVATIONS_HOOK = 'blocks.0.hook_resid_post';

export const createActivationsSlice: StateCreator<AppState, [], [], ActivationsSlice> = (set) => ({
  activationsHook: DEFAULT_ACTIVATIONS_HOOK,
  captured: null,
  setActivationsHook: (activationsHook) => set({ activationsHook }),
  setCaptured: (captured) => set({ captured }),
});
