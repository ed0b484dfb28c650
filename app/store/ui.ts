import type { StateCreator } from 'zustand';
import type { StepCounts } from '../lib/time_left';
import type { JobKind, ViewName } from '../views/registry';
import type { AppState } from './index';

export type { JobKind, ViewName };

/** A long job running in the worker (one at a time: the worker runs jobs in order). */
export interface Job {
  /** The views' jobs and the model load (views/registry.ts). */
  kind: JobKind;
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

/** How far a job is: steps of its own unit done of total (lib/time_left.ts StepCounts), and a second count in words. */
export interface JobSteps extends StepCounts {
  /** Shown after the steps: "3 of 22 near-tie tokens scored". */
  note?: string;
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
  /** How far the running job is, in its own units (sweep cells, texts read), where it counts. */
  jobSteps: JobSteps | null;
  /** The margin heatmap shows steered − unsteered instead of the steered margins. */
  showDifference: boolean;
  /** Prompt positions [start, end) selected on the token strip (drag or shift-click). */
  tokenSelection: { start: number; end: number } | null;
  setView(view: ViewName): void;
  setJob(job: Job | null): void;
  setFailure(failure: Failure | null): void;
  setShowTables(on: boolean): void;
  setSelectedHead(h: { layer: number; head: number } | null): void;
  setFocusPosition(t: number | null): void;
  setJobSteps(steps: JobSteps | null): void;
  setShowDifference(on: boolean): void;
  setTokenSelection(sel: { start: number; end: number } | null): void;
}

export const createUiSlice: StateCreator<AppState, [], [], UiSlice> = (set) => ({
  view: 'margins',
  job: null,
  failure: null,
  showTables: false,
  selectedHead: null,
  focusPosition: null,
  jobSteps: null,
  showDifference: false,
  tokenSelection: null,
  setView: (view) => set({ view }),
  setJob: (job) => set({ job, jobSteps: null }),
  setFailure: (failure) => set({ failure }),
  setShowTables: (showTables) => set({ showTables }),
  setSelectedHead: (selectedHead) => set({ selectedHead }),
  setFocusPosition: (focusPosition) => set({ focusPosition }),
  setJobSteps: (jobSteps) => set({ jobSteps }),
  setShowDifference: (showDifference) => set({ showDifference }),
  setTokenSelection: (tokenSelection) => set({ tokenSelection }),
});
