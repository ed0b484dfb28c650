import type { StateCreator } from 'zustand';
import type { AppState } from './index';
import type { BackendChoice, LoadProgress, ModelInfo } from '../../workers/protocol';

/** The model slice: what is loaded, what is loading, and where models can come from. */
export interface ModelSlice {
  /** Model folders the server lists under /models/ (index.json). */
  localModels: string[];
  /** Label of the model being loaded or last loaded. */
  modelLabel: string | null;
  modelStatus: 'none' | 'loading' | 'ready' | 'failed';
  info: ModelInfo | null;
  loadProgress: LoadProgress | null;
  backendChoice: BackendChoice;
  setLocalModels(names: string[]): void;
  setBackendChoice(choice: BackendChoice): void;
  loadStarted(label: string): void;
  loadProgressed(p: LoadProgress): void;
  loadFinished(info: ModelInfo): void;
  loadFailed(): void;
}

export const createModelSlice: StateCreator<AppState, [], [], ModelSlice> = (set) => ({
  localModels: [],
  modelLabel: null,
  modelStatus: 'none',
  info: null,
  loadProgress: null,
  backendChoice: 'auto',
  setLocalModels: (localModels) => set({ localModels }),
  setBackendChoice: (backendChoice) => set({ backendChoice }),
  loadStarted: (modelLabel) => set({ modelLabel, modelStatus: 'loading', info: null, loadProgress: null }),
  loadProgressed: (loadProgress) => set({ loadProgress }),
  loadFinished: (info) => set({ info, modelStatus: 'ready', loadProgress: null }),
  loadFailed: () => set({ info: null, modelStatus: 'failed', loadProgress: null }),
});
