/**
 * The workbench's views, one row each: the tabs (App.tsx), the view names an experiment saves and
 * reopens (actions/experiment.ts), the view-name type and the job kinds (store/ui.ts) are all read
 * off this table. A new view is its component and one row here.
 */
import type { ComponentType } from 'react';
import { MarginHeatmapView } from './MarginHeatmapView';
import { SinkView } from './SinkView';
import { GenerationView } from './GenerationView';
import { ResidualNormsView } from './ResidualNormsView';
import { ActivationsView } from './ActivationsView';
import { DoseResponseView } from './DoseResponseView';
import { PatchingView } from './PatchingView';
import { ReportView } from './ReportView';
import { VectorLibraryView } from './VectorLibraryView';
import { BranchView } from './BranchView';
import { BatchView } from './BatchView';
import { ProbeView } from './ProbeView';
import { WindowView } from './WindowView';
import { SaeView } from './SaeView';
import { AttributionView } from './AttributionView';

/** One view of the workbench. */
export interface ViewEntry {
  /** Its name in experiment files and links (`view.name`, docs/experiment-format.md) and its tab's test id (`tab-<name>`): never renamed. */
  readonly name: string;
  /** The tab's label. */
  readonly title: string;
  /** Draws the view from the store (no props). */
  readonly component: ComponentType;
  /** The kinds of job (store/ui.ts Job) whose results the view draws; the progress bar names them. */
  readonly job: readonly string[];
  /** An experiment saved on this view reopens on it; one that is not (or a name this copy lacks) reopens on the margin heatmap. */
  readonly restorable: boolean;
}

/** The views in tab order. */
export const VIEWS = [
  { name: 'margins', title: 'Margin heatmap', component: MarginHeatmapView, job: ['analyse'], restorable: true },
  { name: 'sinks', title: 'Attention sinks', component: SinkView, job: ['analyse', 'pattern'], restorable: true },
  { name: 'generation', title: 'Generation', component: GenerationView, job: ['generate'], restorable: true },
  { name: 'norms', title: 'Residual norms', component: ResidualNormsView, job: ['analyse'], restorable: true },
  { name: 'activations', title: 'Activations', component: ActivationsView, job: ['activations'], restorable: true },
  { name: 'dose', title: 'Dose–response', component: DoseResponseView, job: ['sweep'], restorable: true },
  { name: 'patching', title: 'Patching', component: PatchingView, job: ['patching'], restorable: true },
  { name: 'report', title: 'Report', component: ReportView, job: ['report'], restorable: true },
  { name: 'vectors', title: 'Vectors', component: VectorLibraryView, job: ['vector', 'import', 'export'], restorable: true },
  { name: 'branches', title: 'Branches', component: BranchView, job: ['branch', 'forks'], restorable: true },
  { name: 'batch', title: 'Batch', component: BatchView, job: ['batch'], restorable: true },
  { name: 'probe', title: 'Probes', component: ProbeView, job: ['probe'], restorable: true },
  { name: 'window', title: 'Intervention window', component: WindowView, job: ['window'], restorable: true },
  { name: 'sae', title: 'SAE features', component: SaeView, job: ['sae'], restorable: true },
  { name: 'attribution', title: 'Attribution', component: AttributionView, job: ['flow', 'dla'], restorable: true },
] as const satisfies readonly ViewEntry[];

/** A view's name. */
export type ViewName = (typeof VIEWS)[number]['name'];

/** Jobs no view owns: loading a model (the model bar; also the logit-error measurement, which reloads it). */
const WORKBENCH_JOBS = ['load'] as const;

/** The kinds of long job the worker runs (store/ui.ts Job['kind']): the views' jobs and the workbench's. */
export type JobKind = (typeof VIEWS)[number]['job'][number] | (typeof WORKBENCH_JOBS)[number];

/** The views an experiment reopens on (actions/experiment.ts). */
export const RESTORABLE_VIEWS: readonly ViewName[] = VIEWS.filter((v) => v.restorable).map((v) => v.name);
