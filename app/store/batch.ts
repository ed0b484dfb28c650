import type { StateCreator } from 'zustand';
import type { AppState } from './index';
import { mergeSetter } from './merge_setter';
import type { BatchMetric, BatchResult, BatchRow, PatchHook } from '../../workers/protocol';
import type { AppliedIntervention } from './results';
import type { Experiment } from '../../workers/shared';

/** The batch columns that need settings: a probe direction (a library vector) and a patch cell. */
export interface BatchColumns {
  /** Library vector whose projection is probe_score (null: no probe_score column). */
  probeVectorId: string | null;
  /** Add patch_recovery at (hook, layer, position; negative counts from the end). */
  patch: boolean;
  patchHook: PatchHook;
  patchLayer: number;
  patchPosition: number;
}

/** A batch study as edited in its view, and its results (rows stream in while it runs). */
export interface BatchSlice {
  /** Template JSON text {"prompt", "good", "bad", "x"?, "y"?, "description"?}. */
  batchTemplate: string;
  /** Values table text (CSV, TSV, JSONL or JSON) and the file name it came from, if any. */
  batchValues: string;
  batchValuesName: string | null;
  batchRows: BatchRow[];
  batchResult: BatchResult | null;
  /** Model the rows were computed on. */
  batchModel: string | null;
  /** The load they were computed with (lib/model_identity.ts; '' not known): stale after another load. */
  batchComputedWith: string;
  /** The interventions the rows were computed under (empty: the model as it is). */
  batchSteering: AppliedIntervention[];
  /** Plot: the variable on x and the metric on y. */
  batchX: string | null;
  batchY: BatchMetric;
  /** Table: sort column and direction, and a text filter over every cell. */
  batchSort: { key: string; desc: boolean } | null;
  batchFilter: string;
  batchColumns: BatchColumns;
  /**
   * The experiment open before a batch row replaced its prompt and futures (actions/batch.ts
   * openRow), captured whole (lib/experiment_state.ts capture) for "Back to my experiment"; null
   * when no row is open. Opening more rows keeps the first capture.
   */
  batchReturn: Experiment | null;
  setBatchReturn(e: Experiment | null): void;
  /** A shipped example's template, values and plot axes, in one update (a run never sees the template without its values). */
  setBatchExample(x: { template: string; values: string; valuesName: string | null; x: string | null; y: BatchMetric }): void;
  setBatchColumns(patch: Partial<BatchColumns>): void;
  setBatchInput(patch: { template?: string; values?: string; valuesName?: string | null }): void;
  startBatchRows(model: string, computedWith: string, steering: AppliedIntervention[]): void;
  addBatchRow(r: BatchRow): void;
  setBatchResult(r: BatchResult | null): void;
  setBatchPlot(patch: { x?: string | null; y?: BatchMetric }): void;
  setBatchSort(s: { key: string; desc: boolean } | null): void;
  setBatchFilter(f: string): void;
}

export const createBatchSlice: StateCreator<AppState, [], [], BatchSlice> = (set) => ({
  batchTemplate: '{\n  "prompt": "{a} and {b} went to the park. {a} gave the ball to",\n  "good": " {b}",\n  "bad": " {a}"\n}',
  batchValues: 'a,b\nLily,Tom\nTom,Lily\n',
  batchValuesName: null,
  batchRows: [],
  batchResult: null,
  batchModel: null,
  batchComputedWith: '',
  batchSteering: [],
  batchX: null,
  batchY: 'final_margin',
  batchSort: null,
  batchFilter: '',
  batchColumns: { probeVectorId: null, patch: false, patchHook: 'resid_pre', patchLayer: 0, patchPosition: -1 },
  batchReturn: null,
  setBatchReturn: (batchReturn) => set({ batchReturn }),
  setBatchExample: (x) => set({ batchTemplate: x.template, batchValues: x.values, batchValuesName: x.valuesName, batchX: x.x, batchY: x.y }),
  setBatchColumns: mergeSetter(set, 'batchColumns'),
  setBatchInput: (p) => set((s) => ({
    batchTemplate: p.template ?? s.batchTemplate,
    batchValues: p.values ?? s.batchValues,
    batchValuesName: p.valuesName !== undefined ? p.valuesName : s.batchValuesName,
  })),
  startBatchRows: (batchModel, batchComputedWith, batchSteering) => set({ batchRows: [], batchResult: null, batchModel, batchComputedWith, batchSteering }),
  // a row's callback can arrive after the final result (callbacks travel on their own channel)
  addBatchRow: (r) => set((s) => (s.batchResult || s.batchRows.some((x) => x.index === r.index) ? {} : { batchRows: [...s.batchRows, r] })),
  setBatchResult: (batchResult) => set((s) => ({ batchResult, batchRows: batchResult ? batchResult.rows : s.batchRows })),
  setBatchPlot: (p) => set((s) => ({ batchX: p.x !== undefined ? p.x : s.batchX, batchY: p.y ?? s.batchY })),
  setBatchSort: (batchSort) => set({ batchSort }),
  setBatchFilter: (batchFilter) => set({ batchFilter }),
});
