import type { StateCreator } from 'zustand';
import type { ResultsFile } from '../../workers/shared';
import type { AppState } from '.';

/** A results file opened with Open results… (docs/results-format.md): shown read-only in its view, never merged into the experiment. */
export interface OpenedResultsSlice {
  openedResults: { file: string; results: ResultsFile } | null;
  setOpenedResults(r: { file: string; results: ResultsFile } | null): void;
}

export const createOpenedResultsSlice: StateCreator<AppState, [], [], OpenedResultsSlice> = (set) => ({
  openedResults: null,
  setOpenedResults: (openedResults) => set({ openedResults }),
});
