import type { StateCreator } from 'zustand';
import type { AppState } from './index';
import type { HeatmapScale } from '../lib/color_scale';

/** Default sink threshold ε (Gu et al. 2024, "When attention sink emerges", arXiv 2410.10781); the runner's `--eps`. */
export const DEFAULT_SINK_EPS = 0.3;

/** How results are drawn and judged, saved with the experiment (its `view.sinkEps`, `view.heatmapScale`). */
export interface DisplaySlice {
  /** Sink threshold ε in (0, 1): a head is a sink head when α₀ > ε. Sent with every analysis. */
  sinkEps: number;
  /** Colour range of the signed heatmaps (color_scale.ts): robust percentile or the largest |value|. */
  heatmapScale: HeatmapScale;
  setSinkEps(eps: number): void;
  setHeatmapScale(scale: HeatmapScale): void;
}

export const createDisplaySlice: StateCreator<AppState, [], [], DisplaySlice> = (set) => ({
  sinkEps: DEFAULT_SINK_EPS,
  heatmapScale: 'robust',
  setSinkEps: (sinkEps) => set({ sinkEps }),
  setHeatmapScale: (heatmapScale) => set({ heatmapScale }),
});
