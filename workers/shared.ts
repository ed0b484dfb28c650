/**
 * The app's one door into the engine: every value `app/` uses from `workers/engine` at runtime is
 * re-exported here — pure helpers, constants, hook names and parsers that run on the page without
 * a model (the model runs in the worker, reached through workers/protocol.ts). The app imports no
 * engine module itself (tests/unit/app_engine_door.test.ts), so moving an engine file changes
 * this file's paths and nothing in `app/`.
 */

// Hooks (TransformerLens names) and the positions an intervention acts on
export { hookInfo } from './engine/model/hooks';
export { selectRows } from './engine/model/intervention';

// The decision point: how many first tokens two futures share (decision_point.ts teacher-forces them)
export { sharedPrefixLength } from './engine/analysis/future_overlap';

// Experiment files, links and poster decks (docs/experiment-format.md)
export {
  doseKey, EXPERIMENT_FORMAT, EXPERIMENT_VERSION, ExperimentError, futureInput, toolsInput, interventionSpec, isPerHeadHook, needsVector, parseDeck, readExperiment,
} from './engine/experiment';
export type { Deck, Experiment, ExperimentModel, ExperimentSae } from './engine/experiment';

// Models: the catalog, the Hub's default endpoint, the CPU backend's name
export { CATALOG, catalogEntry } from './engine/io/catalog';
export { DEFAULT_ENDPOINT } from './engine/io/hub_files';
export { CPU_BACKEND } from './engine/backend/names';
export { formatBytes } from './engine/io/bytes';
export type { SizeLadder } from './engine/model/size_ladder';

// Files the app reads and writes
export { writeNpyArray } from './engine/io/npy';
export { parseLabelledSet } from './engine/io/prompt_set';
export { parseBehaviourSet } from './engine/io/behaviour_set';
export { parseControlSet } from './engine/io/control_set';

// The operating window's default budgets (the Side effects view states them)
export { checkBudgets, DEFAULT_BUDGETS } from './engine/analysis/operating_window';
export { parseSpanSet } from './engine/io/span_set';
export type { SpanSetFileRow } from './engine/io/span_set';

// Attention sinks: divergence of two runs (steered vs unsteered)
export { sinkDivergence } from './engine/analysis/sinks';

// Patching and the decision-point report
export { PATCH_HOOKS } from './engine/studies/patching';
export { checkRecoveryDenominator } from './engine/analysis/recovery_denominator';
export { atpAgreement } from './engine/analysis/atp_agreement';
export { reportJson, reportPairJson } from './engine/studies/report_json';

// Model comparison (the Compare view's JSON export)
export { comparisonJson } from './engine/studies/compare_job';

// Batch studies
export { summarize } from './engine/studies/batch/aggregate';
export { flatRow } from './engine/studies/batch/batch';
export { ANALYSIS_METRICS, BATCH_METRICS, METRIC_DOCS } from './engine/studies/batch/metrics';
export { fill as fillTemplate, parseTemplate } from './engine/studies/batch/template';
export { formatOfName, parseValues } from './engine/studies/batch/values';

// Branch trees
export { pathOf, treePrompt } from './engine/studies/branching/tree';
export type { TreePath } from './engine/studies/branching/tree';

// The nnsight export and results files (docs/results-format.md)
export { NNSIGHT_VERSION, NnsightExportError, nnsightModelId, nnsightScript } from './engine/studies/export/nnsight_script';
export type { NnsightPatching } from './engine/studies/export/nnsight_script';
export { readResults, ResultsError } from './engine/studies/export/results_file';
export type { ResultsFile } from './engine/studies/export/results_file';
