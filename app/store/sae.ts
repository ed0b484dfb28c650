import type { StateCreator } from 'zustand';
import type { AppState } from './index';
import type { SaeAnalysis, SaeFeatureInfo, SaeInfo } from '../../workers/protocol';
import type { ExperimentSae } from '../../workers/shared';

/** An SAE analysis on display, with what it was run on. */
export interface SaeResult {
  saeId: string;
  analysis: SaeAnalysis;
  prompt: string;
  modelLabel: string;
  /** The model load it was computed with (store modelIdentity: model · weight storage · backend). */
  computedWith: string;
  /** The futures' texts when the margin part was computed. */
  good: string | null;
  bad: string | null;
}

/** The SAE slice: loaded SAEs, the one in use, its analysis, pinned features and the open feature. */
export interface SaeSlice {
  saes: SaeInfo[];
  /** Where each loaded SAE came from (by id), so an experiment link can name and reload it (never a token). */
  saeOrigins: Record<string, ExperimentSae['source']>;
  activeSae: string | null;
  saeResult: SaeResult | null;
  /** Features shown as heatmap rows, in pin order. */
  pinnedFeatures: number[];
  /** Features kept per token. */
  saeTopK: number;
  /** The feature open in the feature panel, at a token when picked from one. */
  openFeature: { info: SaeFeatureInfo; position: number | null } | null;
  addSae(info: SaeInfo, origin?: ExperimentSae['source']): void;
  /** Forgets every SAE (a new model unloads them in the worker). */
  clearSaes(): void;
  setActiveSae(id: string | null): void;
  setSaeResult(r: SaeResult | null): void;
  togglePinned(feature: number): void;
  setSaeTopK(k: number): void;
  setOpenFeature(f: SaeSlice['openFeature']): void;
}

export const createSaeSlice: StateCreator<AppState, [], [], SaeSlice> = (set) => ({
  saes: [],
  saeOrigins: {},
  activeSae: null,
  saeResult: null,
  pinnedFeatures: [],
  saeTopK: 8,
  openFeature: null,
  addSae: (info, origin) => set((s) => ({ saes: [...s.saes, info], saeOrigins: { ...s.saeOrigins, [info.id]: origin ?? { kind: 'local', name: info.label } }, activeSae: info.id, saeResult: null, pinnedFeatures: [], openFeature: null })),
  clearSaes: () => set({ saes: [], saeOrigins: {}, activeSae: null, saeResult: null, pinnedFeatures: [], openFeature: null }),
  setActiveSae: (activeSae) => set({ activeSae, saeResult: null, pinnedFeatures: [], openFeature: null }),
  setSaeResult: (saeResult) => set({ saeResult }),
  togglePinned: (f) => set((s) => ({ pinnedFeatures: s.pinnedFeatures.includes(f) ? s.pinnedFeatures.filter((x) => x !== f) : [...s.pinnedFeatures, f] })),
  setSaeTopK: (saeTopK) => set({ saeTopK }),
  setOpenFeature: (openFeature) => set({ openFeature }),
});
