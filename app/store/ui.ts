import type { StateCreator } from 'zustand';
import type { AppState } from './index';

export type ViewName = 'margins' | 'sinks' | 'generation' | 'norms';

/** A long job running in the worker (one at a time: the worker runs jobs in order). */
export interface Job {
  kind: 'load' | 'analyse' | 'generate' | 'pattern';
  label: string;
  startedAt: number;
  cancellable: boolean;
}

/** An error shown in the banner: what failed and why (the worker's message), and a way to retry where one makes sense. */
export interface Failure {
  what: string;
  why: string;
  retry?: { label: string; run: () => void };
}

/** The UI slice: the active view, the running job, the error banner and view toggles. */
export interface UiSlice {
  view: ViewName;
  job: Job | null;
  failure: Failure | null;
  showTables: boolean;
  selectedHead: { layer: number; head: number } | null;
  /** Prompt position under the pointer in a view (highlighted on the token strip). */
  focusPosition: number | null;
  setView(view: ViewName): void;
  setJob(job: Job | null): void;
  setFailure(failure: Failure | null): void;
  setShowTables(on: boolean): void;
  setSelectedHead(h: { layer: number; head: number } | null): void;
  setFocusPosition(t: number | null): void;
}

export const createUiSlice: StateCreator<AppState, [], [], UiSlice> = (set) => ({
  view: 'margins',
  job: null,
  failure: null,
  showTables: false,
  selectedHead: null,
  focusPosition: null,
  setView: (view) => set({ view }),
  setJob: (job) => set({ job }),
  setFailure: (failure) => set({ failure }),
  setShowTables: (showTables) => set({ showTables }),
  setSelectedHead: (selectedHead) => set({ selectedHead }),
  setFocusPosition: (focusPosition) => set({ focusPosition }),
});
