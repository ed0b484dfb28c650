import type { StateCreator } from 'zustand';
import type { AppState } from './index';
import { mergeSetter } from './merge_setter';
import type { ReportResult } from '../../workers/protocol';
import type { PairRun } from '../lib/stale';
import type { AppliedIntervention } from './results';

/**
 * The report as set up in its view. The prompts are the Patching view's, the futures the
 * experiment's, the intervention window the Window view's setup and the prompt set the Probes view's.
 */
export interface ReportSettings {
  /** |Δ| (nats) the lens margin must reach to count as visible. */
  threshold: number;
  /** Run the intervention window (when an intervention is placed). */
  changeable: boolean;
  /** Add the labelled prompt set: the probe, and bootstrap intervals over its prompts. */
  useSet: boolean;
}

/** A report on display, with what it was run on (lib/stale.ts pairStaleParts compares the rest). */
export interface ReportDisplay extends PairRun {
  result: ReportResult;
  /** The interventions of the window, in words (null: no window). */
  steering: string | null;
  /** The same interventions as they were set (null: no window): a later edit makes the report stale. */
  windowSteering: AppliedIntervention[] | null;
  scoreLabel: string | null;
  /** Where the labelled set came from (null: none). */
  setSource: string | null;
}

export interface ReportSlice {
  reportSettings: ReportSettings;
  report: ReportDisplay | null;
  setReportSettings(patch: Partial<ReportSettings>): void;
  setReport(r: ReportDisplay | null): void;
}

export const createReportSlice: StateCreator<AppState, [], [], ReportSlice> = (set) => ({
  reportSettings: { threshold: 0.1, changeable: true, useSet: false },
  report: null,
  setReportSettings: mergeSetter(set, 'reportSettings'),
  setReport: (report) => set({ report }),
});
