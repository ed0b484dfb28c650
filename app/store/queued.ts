import type { StateCreator } from 'zustand';
import type { AppState } from './index';

/**
 * An action the user asked for while another job ran (the worker runs one job at a time): it is
 * shown as queued and runs when that job ends, with the experiment as edited by then, instead of
 * being dropped. One slot: asking again while queued keeps the one queued run.
 */
export interface QueuedAction {
  /** What runs, for the progress bar ("Analyse"). */
  label: string;
  /** Runs it (called once, when no job runs). */
  run: () => Promise<void>;
  /** Settles when the queued run has finished or was dropped (callers that awaited the action wait on it). */
  done: Promise<void>;
  /** Settles `done` without running (the user dropped it). */
  drop: () => void;
}

/** The queued-action slice. */
export interface QueuedSlice {
  queued: QueuedAction | null;
  setQueued(q: QueuedAction | null): void;
}

export const createQueuedSlice: StateCreator<AppState, [], [], QueuedSlice> = (set) => ({
  queued: null,
  setQueued: (queued) => set({ queued }),
});
