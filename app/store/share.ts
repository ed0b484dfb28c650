import type { StateCreator } from 'zustand';
import type { AppState } from './index';

/** A message about an experiment link, file or stored state: why it could not be restored, or what is missing. */
export interface ExperimentNotice {
  kind: 'error' | 'info';
  /** What happened ("This link could not be opened"). */
  what: string;
  /** Why, and what to do. */
  why: string;
}

/** The sharing slice: the notice about the last restore (kept apart from job errors, which each new job clears). */
export interface ShareSlice {
  experimentNotice: ExperimentNotice | null;
  /** True while an experiment is being restored (the link is not rewritten meanwhile). */
  restoring: boolean;
  setExperimentNotice(n: ExperimentNotice | null): void;
  setRestoring(on: boolean): void;
}

export const createShareSlice: StateCreator<AppState, [], [], ShareSlice> = (set) => ({
  experimentNotice: null,
  restoring: false,
  setExperimentNotice: (experimentNotice) => set({ experimentNotice }),
  setRestoring: (restoring) => set({ restoring }),
});
