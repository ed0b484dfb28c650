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
import { CompareView } from './CompareView';
import { MechanismsView } from './MechanismsView';
import { SideEffectsView } from './SideEffectsView';
import { hasRouters, RoutesView } from './RoutesView';
import type { ModelInfo } from '../../workers/protocol';
import { ResultsView } from './ResultsView';

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
  /**
   * Whether the experiment's enabled interventions (the steering panel's list) act on what this
   * view runs — 'yes', 'no', or 'option' (a setting of the view says) — and the one line the view
   * shows to say so (ViewInterventionsLine, above every view).
   */
  readonly interventions: { readonly applies: 'yes' | 'no' | 'option'; readonly line: string };
  /** Whether its tab is shown for the loaded model (default: always), e.g. only for a model with routers. */
  readonly shownFor?: (info: ModelInfo | null) => boolean;
}

/** The views in tab order. */
export const VIEWS = [
  { name: 'margins', title: 'Margin heatmap', component: MarginHeatmapView, job: ['analyse'], restorable: true, interventions: { applies: 'yes', line: 'Runs with the enabled interventions: the heatmap shows the steered margins (and the difference from the unsteered run).' } },
  { name: 'sinks', title: 'Attention sinks', component: SinkView, job: ['analyse', 'pattern'], restorable: true, interventions: { applies: 'yes', line: 'Runs with the enabled interventions: the attention patterns are those of the steered run.' } },
  { name: 'generation', title: 'Generation', component: GenerationView, job: ['generate'], restorable: true, interventions: { applies: 'yes', line: 'Runs with the enabled interventions, beside an unsteered generation of the same prompt.' } },
  { name: 'norms', title: 'Residual norms', component: ResidualNormsView, job: ['analyse'], restorable: true, interventions: { applies: 'yes', line: 'Runs with the enabled interventions: the norms are those of the steered run.' } },
  { name: 'activations', title: 'Activations', component: ActivationsView, job: ['activations', 'generationActivations'], restorable: true, interventions: { applies: 'yes', line: 'Captures with the enabled interventions (the analysis\'s steered run).' } },
  { name: 'dose', title: 'Dose–response', component: DoseResponseView, job: ['sweep'], restorable: true, interventions: { applies: 'no', line: 'Runs without the interventions of the list: each point applies only its own vector at its layer and dose.' } },
  { name: 'patching', title: 'Patching', component: PatchingView, job: ['patching', 'attributionPatching'], restorable: true, interventions: { applies: 'no', line: 'Runs without the interventions of the list: the clean and corrupted prompts are patched unsteered.' } },
  { name: 'report', title: 'Report', component: ReportView, job: ['report', 'reportPair'], restorable: true, interventions: { applies: 'option', line: 'Runs without the interventions of the list, except the window part with “changeable” on (it switches them on from each step).' } },
  { name: 'vectors', title: 'Vectors', component: VectorLibraryView, job: ['vector', 'import', 'export'], restorable: true, interventions: { applies: 'no', line: 'Builds and imports vectors without the interventions of the list (the model as it is).' } },
  { name: 'branches', title: 'Branches', component: BranchView, job: ['branch', 'forks', 'flow'], restorable: true, interventions: { applies: 'option', line: 'Runs with the enabled interventions only when “with the interventions” is ticked; otherwise without them.' } },
  { name: 'batch', title: 'Batch', component: BatchView, job: ['batch'], restorable: true, interventions: { applies: 'yes', line: 'Runs every row with the enabled interventions (the notice above the table names them).' } },
  { name: 'probe', title: 'Probes', component: ProbeView, job: ['probe', 'probeUnder'], restorable: true, interventions: { applies: 'option', line: 'Runs without the interventions of the list: the probe reads the model as it is; “Under an intervention” reads it again under the one picked there.' } },
  { name: 'window', title: 'Intervention window', component: WindowView, job: ['window'], restorable: true, interventions: { applies: 'option', line: 'Switches the one picked of the interventions (enabled or not), or every enabled one, on from each start step: the steps before run without them.' } },
  { name: 'sae', title: 'SAE features', component: SaeView, job: ['sae'], restorable: true, interventions: { applies: 'no', line: 'Reads the SAE features without the interventions of the list (the model as it is).' } },
  { name: 'attribution', title: 'Attribution', component: AttributionView, job: ['flow', 'dla', 'spanFaithfulness'], restorable: true, interventions: { applies: 'no', line: 'Runs without the interventions of the list: the attributions read the model as it is.' } },
  { name: 'side-effects', title: 'Side effects', component: SideEffectsView, job: ['sideEffects'], restorable: true, interventions: { applies: 'no', line: 'Runs without the interventions of the list: each point applies only the picked vector at its layer and dose.' } },
  { name: 'routes', title: 'Expert routes', component: RoutesView, job: ['route', 'routeSweep'], restorable: true, shownFor: (info: ModelInfo | null) => !!info && hasRouters(info.hookNames), interventions: { applies: 'yes', line: 'Runs with the enabled interventions: the routing, the route margin grid and the sweep are those of the steered run (the grid\'s and the masks\' bans come after them).' } },
  { name: 'compare', title: 'Compare', component: CompareView, job: ['compare', 'loadB', 'steeringTransfer'], restorable: true, interventions: { applies: 'no', line: 'Runs without the interventions of the list: model A and model B are compared as they are.' } },
  { name: 'mechanisms', title: 'Mechanisms', component: MechanismsView, job: ['mechanisms'], restorable: true, interventions: { applies: 'no', line: 'Runs without the interventions of the list: each steered run adds only its own set\'s direction at one block.' } },
  { name: 'results', title: 'Opened results', component: ResultsView, job: ['results'], restorable: false, interventions: { applies: 'no', line: 'Shows an opened results file as it was computed (read-only), without the interventions of the list: they do not change it.' } },
] as const satisfies readonly ViewEntry[];

/** A view's name. */
export type ViewName = (typeof VIEWS)[number]['name'];

/** Jobs no view owns: loading a model (the model bar; also the logit-error measurement, which reloads it), and model B (the Compare view's picker). */
const WORKBENCH_JOBS = ['load', 'loadB'] as const;

/** The kinds of long job the worker runs (store/ui.ts Job['kind']): the views' jobs and the workbench's. */
export type JobKind = (typeof VIEWS)[number]['job'][number] | (typeof WORKBENCH_JOBS)[number];

/** The views an experiment reopens on (actions/experiment.ts). */
export const RESTORABLE_VIEWS: readonly ViewName[] = VIEWS.filter((v) => v.restorable).map((v) => v.name);
