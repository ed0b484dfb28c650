/**
 * The workbench's state ↔ the experiment file (workers/engine/experiment.ts): what is saved to
 * a file, a link and local storage, and how a loaded experiment is put back into the store.
 * Never includes a Hub token.
 */
import LZString from 'lz-string';
import { EXPERIMENT_FORMAT, EXPERIMENT_VERSION, ExperimentError, readExperiment, type Experiment, type ExperimentModel, type ExperimentSae } from '../../workers/shared';
import type { ModelSource } from '../../workers/protocol';
import type { AppState } from '../store';
import type { ViewName } from '../store/ui';
import { newInterventionId, type InterventionDraft } from '../store/steering';
import { newVectorId, type LibraryEntry } from '../store/vectors';
import { DEFAULT_ACTIVATIONS_HOOK } from '../store/activations';
import { RESTORABLE_VIEWS } from '../views/registry';
import { applyLinkDelta, LINK_BASE, linkDelta } from './link_delta';

/** The hash key of an experiment link: `#x=<lz-string of the JSON>`. */
export const HASH_KEY = 'x';
/** The hash key of a QR code's short link: `#q=<lz-string of the JSON of its difference from LINK_BASE>` (lib/link_delta.ts). */
export const DELTA_HASH_KEY = 'q';
/** Longest link hash written with vectors inside; past it the vectors' values are left out (and the link says so). */
export const MAX_HASH_CHARS = 8000;

/** The experiment's model as the source it was loaded from; null when nothing is loaded. Never the Hub token. */
export function modelOf(source: ModelSource | null, bundled: readonly string[]): ExperimentModel | null {
  if (!source) return null;
  switch (source.kind) {
    case 'url': return source.label && bundled.includes(source.label) ? { kind: 'bundled', name: source.label } : { kind: 'url', url: source.url, label: source.label };
    case 'hub': return { kind: 'hub', repo: source.repo, revision: source.revision ?? 'main', ...(source.endpoint ? { endpoint: source.endpoint } : {}) };
    case 'files': return { kind: 'local', name: source.label };
  }
}

/**
 * The store's fields that belong to the experiment: `capture` reads each of them and `apply` puts
 * each back (the model, `lastLoad`, is put back by loading it: actions/experiment.ts ensureModel;
 * model B, `modelB`, likewise: ensureModelB;
 * the SAEs, `saes`/`saeOrigins`, by loading them: restoreSaes). Every other field of the store is
 * in NOT_EXPERIMENT with the reason; tests/unit/experiment_state.test.ts fails on a store field
 * that is in neither, so a field added to the store cannot be silently left out of files, links,
 * local storage and poster mode.
 */
export const EXPERIMENT_KEYS = [
  'lastLoad', 'prompt', 'chatTemplate', 'good', 'bad', 'generation', 'vectors', 'interventions', 'saes', 'saeOrigins',
  'sweepSettings', 'view', 'showTables', 'showDifference', 'sinkEps', 'heatmapScale', 'activationsHook', 'tokenSelection',
  'modelB', 'system', 'tools', 'enableThinking',
] as const satisfies readonly (keyof AppState)[];

const RESULT = 'a result computed from the experiment: a restore reruns it (or marks it stale), it is never saved';
const VIEW_SETUP = 'this view\'s own setup: no restore, link or poster slide changes it (it is kept as the user left it), and the file format does not carry it yet';
const SESSION = 'the state of this browser session (what is loading, running or shown transiently), not what the experiment is';

/**
 * Every store field that is NOT part of the experiment, with the reason. A store field must be in
 * EXPERIMENT_KEYS or here (tests/unit/experiment_state.test.ts).
 */
export const NOT_EXPERIMENT: Readonly<Partial<Record<keyof AppState, string>>> = {
  localModels: 'the models this copy ships (the build\'s manifest)',
  modelLabel: SESSION, modelStatus: SESSION, modelIdentity: SESSION, info: 'the loaded model\'s dimensions, read from the model (`lastLoad` names it)',
  loadProgress: SESSION, deviceLost: SESSION, cachedModels: 'what this browser\'s Cache Storage holds',
  backendChoice: 'how this machine runs the model (CPU or WebGPU): the same experiment runs on either',
  weightDtype: 'how this browser stores the weights: the same experiment runs with any storage (results record it as computedWith)',
  selectedIntervention: 'which row the intervention editor has open',
  contrastSet: 'the contrastive set being edited in the library panel (a vector built from it records its texts in its provenance)',
  promptTokens: RESULT, futureChips: RESULT, result: RESULT, pattern: RESULT, layerPatterns: RESULT, openedResults: 'a results file opened for viewing (read-only; it names its own experiment)', gen: RESULT, sweep: RESULT,
  job: SESSION, failure: SESSION, selectedHead: SESSION, focusPosition: SESSION, jobSteps: SESSION,
  tree: RESULT, branchNode: RESULT, forkSite: RESULT, forkLens: RESULT, compare: RESULT, forks: RESULT, droppedTree: SESSION, decodeRate: SESSION,
  nodeColour: VIEW_SETUP, forkDraw: VIEW_SETUP, gapThreshold: VIEW_SETUP, forkSamples: VIEW_SETUP, forkNearTiesOnly: VIEW_SETUP,
  batchTemplate: VIEW_SETUP, batchValues: VIEW_SETUP, batchValuesName: VIEW_SETUP, batchX: VIEW_SETUP, batchY: VIEW_SETUP, batchSort: VIEW_SETUP, batchFilter: VIEW_SETUP, batchColumns: VIEW_SETUP,
  batchRows: RESULT, batchResult: RESULT, batchModel: RESULT, batchComputedWith: RESULT, batchSteering: RESULT,
  batchReturn: 'the experiment a batch row replaced, kept for "Back to my experiment" (itself a captured experiment)',
  probeSettings: VIEW_SETUP, probe: RESULT, windowSettings: VIEW_SETUP, windowRun: RESULT,
  patchingSettings: VIEW_SETUP, patching: RESULT, patchingFollowsPrompt: VIEW_SETUP, reportSettings: VIEW_SETUP, report: RESULT,
  experimentNotice: SESSION, restoring: SESSION, queued: SESSION,
  activeSae: 'which loaded SAE the SAE view reads with (the interventions name their own SAE)',
  saeResult: RESULT, pinnedFeatures: VIEW_SETUP, saeTopK: VIEW_SETUP, openFeature: SESSION,
  captured: RESULT, studies: RESULT,
};

/** The experiment's `modelB` (v3): model B's source as modelOf writes it, or nothing when no model B is loaded or loading. */
export function modelBOf(s: Pick<AppState, 'modelB'>, bundled: readonly string[]): { modelB?: ExperimentModel } {
  const m = modelOf(s.modelB?.source ?? null, bundled);
  return m ? { modelB: m } : {};
}

/** A store field that belongs to the experiment (EXPERIMENT_KEYS). */
export type ExperimentKey = (typeof EXPERIMENT_KEYS)[number];

/** The store's state as far as it belongs to the experiment: what `capture` reads. */
export type ExperimentState = Pick<AppState, ExperimentKey>;

/** Something holding the store's state (zustand's store, or a test's stand-in): what `apply` writes in one update. */
export interface StateHolder {
  getState(): AppState;
  setState(patch: Partial<AppState>): void;
}

/**
 * The experiment as the workbench holds it now (vectors with their values and α): the one way the
 * store becomes an experiment — file, link, local storage and poster mode all call it.
 * @param bundled the models this copy ships (a bundled model is named, not linked by URL).
 */
export function capture(s: ExperimentState, bundled: readonly string[]): Experiment {
  const vectorIndex = new Map(s.vectors.map((v, i) => [v.id, i]));
  const index = (id: string | null) => (id !== null && vectorIndex.has(id) ? vectorIndex.get(id)! : null);
  const saes: Experiment['saes'] = s.saes.map((x) => ({ source: s.saeOrigins[x.id] ?? { kind: 'local', name: x.label }, hook: x.cfg.hookName, label: x.label }));
  const saeIndex = new Map(s.saes.map((x, i) => [x.id, i]));
  // a restored feature intervention whose SAE is not loaded keeps naming it (one entry per SAE)
  const pendingIndex = (sae: ExperimentSae): number => {
    const key = JSON.stringify([sae.source, sae.hook ?? null]);
    const i = saes.findIndex((x) => JSON.stringify([x.source, x.hook ?? null]) === key);
    if (i >= 0) return i;
    saes.push(sae);
    return saes.length - 1;
  };
  const saeOf = (d: InterventionDraft): Experiment['interventions'][number]['sae'] => {
    if (d.saeFeature && saeIndex.has(d.saeFeature.sae)) return { index: saeIndex.get(d.saeFeature.sae)!, feature: d.saeFeature.feature };
    if (d.saePending) return { index: pendingIndex(d.saePending.sae), feature: d.saePending.feature };
    return null;
  };
  return {
    format: EXPERIMENT_FORMAT,
    version: EXPERIMENT_VERSION,
    model: modelOf(s.lastLoad?.source ?? null, bundled) ?? { kind: 'bundled', name: bundled[0] ?? 'stories260K' },
    ...modelBOf(s, bundled),
    prompt: s.prompt,
    chatTemplate: s.chatTemplate,
    ...(s.system !== undefined ? { system: s.system } : {}),
    tools: s.tools.map((t) => structuredClone(t)),
    ...(s.enableThinking !== undefined ? { enableThinking: s.enableThinking } : {}),
    good: { mode: s.good.mode, value: s.good.value },
    bad: { mode: s.bad.mode, value: s.bad.value },
    generation: { maxNewTokens: s.generation.maxNewTokens, temperature: s.generation.temperature, topK: s.generation.topK, seed: s.generation.seed },
    vectors: s.vectors.map((v) => ({
      name: v.name, hook: v.hook, model: v.model, dModel: v.dModel, provenance: v.provenance, createdAt: v.createdAt,
      ...(v.alpha !== undefined ? { alpha: v.alpha } : {}), ...(v.file !== undefined ? { file: v.file } : {}),
      values: Array.from(v.vector, shortestF32),
    })),
    interventions: s.interventions.map((d) => ({
      enabled: d.enabled, hook: d.hook, type: d.type, dose: d.dose, rotateBy: d.rotateBy, mode: d.mode, vector: index(d.vectorId),
      source: d.source, head: d.head, positions: d.positions, steps: d.steps, sae: saeOf(d),
      ...(d.experts ? { experts: [...d.experts] } : {}),
    })),
    saes,
    view: {
      name: s.view, showDifference: s.showDifference, showTables: s.showTables, sinkEps: s.sinkEps, heatmapScale: s.heatmapScale,
      hook: s.activationsHook, selection: s.tokenSelection,
      sweep: { layers: s.sweepSettings.layers, doses: s.sweepSettings.doses, site: s.sweepSettings.site, type: s.sweepSettings.type, vector: index(s.sweepSettings.vectorId) },
    },
  };
}

/** @deprecated the old name of `capture`. */
export const snapshot = capture;

/** What `apply` could not put back from the experiment alone. */
export interface Applied {
  /** Names of the vectors the experiment carries without values (left out of a link): their interventions have no vector. */
  missing: string[];
  /** Indices into `experiment.saes` its feature interventions use that are not loaded: restoreSaes loads them and switches those on. */
  pendingSaes: number[];
}

const sameSource = (a: unknown, b: unknown) => JSON.stringify(a) === JSON.stringify(b);

/**
 * Puts an experiment into the store in ONE update: prompt, futures, generation settings, the
 * library (values, α, file), the interventions (their enabled state as saved), the sweep setup and
 * the view with its settings. A feature intervention whose SAE is loaded now (same source and hook)
 * is attached to it as saved; one whose SAE is not is switched off and keeps naming it
 * (`saePending`) until restoreSaes loads it. The model is not loaded here (ensureModel).
 * For every experiment `e` on the loaded model with its SAEs loaded: capture(after apply(e)) equals e.
 */
export function apply(store: StateHolder, e: Experiment): Applied {
  const s = store.getState();
  const missing: string[] = [];
  const vectors: LibraryEntry[] = [];
  const ids = e.vectors.map((v) => {
    if (!v.values) {
      missing.push(v.name);
      return null;
    }
    const entry: LibraryEntry = {
      id: newVectorId(), name: v.name, vector: Float32Array.from(v.values), dModel: v.dModel, hook: v.hook, model: v.model,
      provenance: v.provenance, createdAt: v.createdAt, ...(v.alpha !== undefined ? { alpha: v.alpha } : {}), ...(v.file !== undefined ? { file: v.file } : {}),
    };
    vectors.push(entry);
    return entry.id;
  });
  const vectorId = (i: number | null) => (i === null ? null : ids[i] ?? null);
  const loadedSae = (i: number): string | null => {
    const want = e.saes[i];
    if (!want) return null;
    return s.saes.find((x) => sameSource(s.saeOrigins[x.id], want.source) && (want.hook === undefined || x.cfg.hookName === want.hook))?.id ?? null;
  };
  const pendingSaes = new Set<number>();
  const interventions: InterventionDraft[] = e.interventions.map((d) => {
    const draft: InterventionDraft = {
      id: newInterventionId(), enabled: d.enabled, hook: d.hook, type: d.type, dose: d.dose, rotateBy: d.rotateBy, mode: d.mode,
      vectorId: vectorId(d.vector), source: d.source, head: d.head, positions: d.positions, steps: d.steps,
      ...(d.experts ? { experts: [...d.experts] } : {}),
    };
    if (d.sae) {
      const id = loadedSae(d.sae.index);
      if (id) return { ...draft, saeFeature: { sae: id, feature: d.sae.feature } };
      pendingSaes.add(d.sae.index);
      return { ...draft, enabled: false, saePending: { sae: e.saes[d.sae.index], feature: d.sae.feature } };
    }
    // a clamp saved without its SAE (an older version) cannot run: off, and the notice says why
    return d.type === 'sae_clamp' ? { ...draft, enabled: false } : draft;
  });
  const sw = e.view.sweep;
  store.setState({
    prompt: e.prompt,
    chatTemplate: e.chatTemplate,
    system: e.system,
    tools: e.tools.map((t) => structuredClone(t)),
    enableThinking: e.enableThinking,
    good: { mode: e.good.mode, value: e.good.value },
    bad: { mode: e.bad.mode, value: e.bad.value },
    generation: { ...e.generation },
    vectors,
    interventions,
    selectedIntervention: null,
    ...(sw ? { sweepSettings: { layers: sw.layers, doses: sw.doses, site: sw.site, type: sw.type, vectorId: vectorId(sw.vector) } } : {}),
    view: viewOf(e.view.name, RESTORABLE_VIEWS),
    showTables: e.view.showTables,
    showDifference: e.view.showDifference,
    sinkEps: e.view.sinkEps,
    heatmapScale: e.view.heatmapScale,
    activationsHook: e.view.hook ?? DEFAULT_ACTIVATIONS_HOOK,
    tokenSelection: e.view.selection,
    captured: null,
  });
  return { missing, pendingSaes: [...pendingSaes] };
}

/**
 * The shortest decimal that reads back as the same float32 (at most 9 significant digits, IEEE 754
 * §5.12.2): a vector's values in a file or link are float32, so printing them with a double's 17
 * digits only lengthens the text. Exact: Math.fround(shortestF32(x)) === Math.fround(x).
 */
export function shortestF32(x: number): number {
  const f = Math.fround(x);
  if (f === 0 || !Number.isFinite(f)) return f;
  for (let p = 1; p < 9; p++) {
    const y = Number(f.toPrecision(p));
    if (Math.fround(y) === f) return y;
  }
  return Number(f.toPrecision(9));
}

/**
 * The experiment as a QR code carries it (poster mode): the vectors' values are kept, so it reruns
 * the same, but the contrastive texts they were built from (their provenance, most of a link's
 * length) are left out; the file and the copied link keep them.
 */
export function qrExperiment(e: Experiment): Experiment {
  return { ...e, vectors: e.vectors.map((v) => ({ ...v, provenance: { ...v.provenance, positive: [], negative: [] } })) };
}

/** The experiment as JSON text (a file's content). */
export function experimentJson(e: Experiment): string {
  return JSON.stringify(e, null, 2) + '\n';
}

/**
 * The link hash of an experiment: `#x=…`, or with `short` the QR code's `#q=…` (its difference from
 * LINK_BASE, lib/link_delta.ts); vectors inside when it stays under MAX_HASH_CHARS.
 * @returns the hash and the names of the vectors left out (their values are null in the link).
 */
export function experimentHash(e: Experiment, opts: { short?: boolean } = {}): { hash: string; missing: string[] } {
  const write = (x: Experiment) => opts.short
    ? `#${DELTA_HASH_KEY}=${LZString.compressToEncodedURIComponent(JSON.stringify(linkDelta(LINK_BASE, JSON.parse(JSON.stringify(x)))))}`
    : `#${HASH_KEY}=${LZString.compressToEncodedURIComponent(JSON.stringify(x))}`;
  const full = write(e);
  if (full.length <= MAX_HASH_CHARS || !e.vectors.length) return { hash: full, missing: [] };
  const light = { ...e, vectors: e.vectors.map((v) => ({ ...v, values: null })) };
  return { hash: write(light), missing: e.vectors.map((v) => v.name) };
}

/**
 * The experiment in a location hash, or null when the hash holds none.
 * @throws ExperimentError 'corrupt' when it does not decompress or parse; 'version' / 'invalid' as readExperiment.
 */
export function experimentFromHash(hash: string): Experiment | null {
  const m = new RegExp(`^#?(${HASH_KEY}|${DELTA_HASH_KEY})=(.*)$`).exec(hash);
  if (!m) return null;
  const text = LZString.decompressFromEncodedURIComponent(m[2]);
  if (!text) throw new ExperimentError('corrupt', 'the link is damaged: its experiment could not be decompressed (was it cut off when copied?)');
  if (m[1] === HASH_KEY) return readExperiment(text);
  let delta: unknown;
  try { delta = JSON.parse(text); } catch { throw new ExperimentError('corrupt', 'the link is damaged: its experiment is not JSON'); }
  if (typeof delta !== 'object' || delta === null || Array.isArray(delta)) throw new ExperimentError('corrupt', 'the link is damaged: its experiment is not an object');
  return readExperiment(JSON.stringify(applyLinkDelta(LINK_BASE, delta as Record<string, unknown>)));
}

/** The views an experiment may name; another name (from a newer app) opens the margin heatmap. */
export function viewOf(name: string, known: readonly ViewName[]): ViewName {
  return (known as readonly string[]).includes(name) ? (name as ViewName) : 'margins';
}
