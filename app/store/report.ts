import type { StateCreator } from 'zustand';
import type { AppState } from './index';
import type { ReportResult } from '../../workers/protocol';

/** The report as set up in its view; the prompts are the Patching view's, the futures the experiment's. */
export interface ReportSettings {
  /** |Δ| (nats) the lens margin must reach to count as visible. */
  threshold: number;
  /** More prompt pairs, one per line "clean | corrupted" (empty: one prompt). */
  set: string;
}

/** A report on display, with what it was run on. */
export interface ReportDisplay {
  result: ReportResult;
  modelLabel: string;
  clean: string;
  corrupt: string;
  good: string;
  bad: string;
}

export interface ReportSlice {
  reportSettings: ReportSettings;
  report: ReportDisplay | null;
  setReportSettings(patch: Partial<ReportSettings>): void;
  setReport(r: ReportDisplay | null): void;
}

export const createReportSlice: StateCreator<AppState, [], [], ReportSlice> = (set) => ({
  reportSettings: { threshold: 0.1, set: '' },
  report: null,
  setReportSettings: (patch) => set((s) => ({ reportSettings: { ...s.reportSettings, ...patch } })),
  setReport: (report) => set({ report }),
});
