import type { StateCreator } from 'zustand';
import type { AppState } from './index';
import type { LoadOptions, LoadProgress, ModelInfo, ModelSource } from '../../workers/protocol';

/** Model B as the page knows it: what was asked, whether it is loaded, and its info once it is. */
export interface ModelB {
  label: string;
  source: ModelSource;
  options: LoadOptions;
  status: 'loading' | 'ready';
  info: ModelInfo | null;
  progress: LoadProgress | null;
}

/** The second model (the model comparison: the Compare view), beside the model of the model slice (model A). */
export interface ModelBSlice {
  /** null: no model B (never loaded, unloaded, or its load failed with none before it). */
  modelB: ModelB | null;
  setModelB(b: ModelB | null): void;
  modelBProgressed(p: LoadProgress): void;
}

export const createModelBSlice: StateCreator<AppState, [], [], ModelBSlice> = (set) => ({
  modelB: null,
  setModelB: (modelB) => set({ modelB }),
  modelBProgressed: (progress) => set((s) => (s.modelB ? { modelB: { ...s.modelB, progress } } : {})),
});
