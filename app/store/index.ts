import { create } from 'zustand';
import { createExperimentSlice, type ExperimentSlice } from './experiment';
import { createModelSlice, type ModelSlice } from './model';
import { createResultsSlice, type ResultsSlice } from './results';
import { createUiSlice, type UiSlice } from './ui';
import { createSteeringSlice, type SteeringSlice } from './steering';
import { createVectorsSlice, type VectorsSlice } from './vectors';
import { createBranchingSlice, type BranchingSlice } from './branching';
import { createBatchSlice, type BatchSlice } from './batch';
import { createShareSlice, type ShareSlice } from './share';
import { createDisplaySlice, type DisplaySlice } from './display';
import { createQueuedSlice, type QueuedSlice } from './queued';
import { createSaeSlice, type SaeSlice } from './sae';
import { createActivationsSlice, type ActivationsSlice } from './activations';
import { createStudiesSlice, type StudiesSlice } from './studies';
import { createModelBSlice, type ModelBSlice } from './model_b';
import { createOpenedResultsSlice, type OpenedResultsSlice } from './opened_results';

export type AppState = ModelSlice & ExperimentSlice & SteeringSlice & VectorsSlice & ResultsSlice & UiSlice & BranchingSlice & BatchSlice & ProbeSlice & WindowSlice & PatchingSlice & ReportSlice & ShareSlice & DisplaySlice & QueuedSlice & SaeSlice & ActivationsSlice & StudiesSlice & ModelBSlice & OpenedResultsSlice;
import { createProbeSlice, type ProbeSlice } from './probe';
import { createWindowSlice, type WindowSlice } from './window';
import { createPatchingSlice, type PatchingSlice } from './patching';
import { createReportSlice, type ReportSlice } from './report';

/** The one store; views read it through selectors, actions write it. */
export const useStore = create<AppState>()((...a) => ({
  ...createModelSlice(...a),
  ...createExperimentSlice(...a),
  ...createSteeringSlice(...a),
  ...createVectorsSlice(...a),
  ...createResultsSlice(...a),
  ...createUiSlice(...a),
  ...createBranchingSlice(...a),
  ...createBatchSlice(...a),
  ...createProbeSlice(...a),
  ...createWindowSlice(...a),
  ...createPatchingSlice(...a),
  ...createReportSlice(...a),
  ...createShareSlice(...a),
  ...createDisplaySlice(...a),
  ...createQueuedSlice(...a),
  ...createSaeSlice(...a),
  ...createActivationsSlice(...a),
  ...createStudiesSlice(...a),
  ...createModelBSlice(...a),
  ...createOpenedResultsSlice(...a),
}));
