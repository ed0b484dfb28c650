import type { StateCreator } from 'zustand';
import type { AppState } from './index';
import { modelIdentity } from '../lib/model_identity';
import type { BackendChoice, CachedModel, LoadOptions, LoadProgress, ModelInfo, ModelSource, WeightDtype } from '../../workers/protocol';

/** The model slice: what is loaded, what is loading, and where models can come from. */
export interface ModelSlice {
  /** Models bundled with the app under models/ (the build-time manifest, tools/bundled_models.ts). */
  localModels: string[];
  /** Label of the model being loaded or last loaded. */
  modelLabel: string | null;
  modelStatus: 'none' | 'loading' | 'ready' | 'failed';
  /**
   * The loaded model with its weight storage and backend ("stories260K · Q8_0 · CPU", lib/model_identity.ts),
   * null until a load finished: results carry the one they were computed with (`computedWith`).
   */
  modelIdentity: string | null;
  info: ModelInfo | null;
  loadProgress: LoadProgress | null;
  backendChoice: BackendChoice;
  /** Weight storage for the next load: float32, binary16, or Q8_0 / Q4_0 blocks (model/load.ts WeightOptions). */
  weightDtype: WeightDtype;
  /** The source and options of the last load, for "Reload model" after a device loss. */
  lastLoad: { source: ModelSource; options: LoadOptions } | null;
  /** Why the loaded model's GPU device was lost, or null. */
  deviceLost: string | null;
  /** Hub models in the browser's Cache Storage, as last listed (null until the first listing). */
  cachedModels: CachedModel[] | null;
  setLocalModels(names: string[]): void;
  setBackendChoice(choice: BackendChoice): void;
  setWeightDtype(dtype: WeightDtype): void;
  loadStarted(label: string, source: ModelSource, options: LoadOptions): void;
  loadProgressed(p: LoadProgress): void;
  loadFinished(info: ModelInfo): void;
  loadFailed(): void;
  /** A load failed before the worker freed the model loaded before it: that model shows again. */
  loadFailedKeeping(label: string | null, info: ModelInfo, lastLoad: { source: ModelSource; options: LoadOptions }): void;
  setDeviceLost(reason: string | null): void;
  setCachedModels(models: CachedModel[]): void;
}

export const createModelSlice: StateCreator<AppState, [], [], ModelSlice> = (set) => ({
  localModels: [],
  modelLabel: null,
  modelStatus: 'none',
  modelIdentity: null,
  info: null,
  loadProgress: null,
  backendChoice: 'auto',
  weightDtype: 'f32',
  lastLoad: null,
  deviceLost: null,
  cachedModels: null,
  setLocalModels: (localModels) => set({ localModels }),
  setBackendChoice: (backendChoice) => set({ backendChoice }),
  setWeightDtype: (weightDtype) => set({ weightDtype }),
  loadStarted: (modelLabel, source, options) => set({ modelLabel, modelStatus: 'loading', modelIdentity: null, info: null, loadProgress: null, lastLoad: { source, options }, deviceLost: null }),
  loadProgressed: (loadProgress) => set({ loadProgress }),
  loadFinished: (info) => set((s) => ({ info, modelIdentity: modelIdentity(s.modelLabel ?? info.label, info), modelStatus: 'ready', loadProgress: null })),
  loadFailed: () => set({ info: null, modelIdentity: null, modelStatus: 'failed', loadProgress: null }),
  loadFailedKeeping: (modelLabel, info, lastLoad) => set({ modelLabel, info, modelIdentity: modelIdentity(modelLabel ?? info.label, info), lastLoad, modelStatus: 'ready', loadProgress: null }),
  setDeviceLost: (deviceLost) => set({ deviceLost }),
  setCachedModels: (cachedModels) => set({ cachedModels }),
});
