/**
 * The workbench's state ↔ the experiment file (workers/engine/experiment.ts): what is saved to
 * a file, a link and local storage, and how a loaded experiment is put back into the store.
 * Never includes a Hub token.
 */
import LZString from 'lz-string';
import { EXPERIMENT_FORMAT, EXPERIMENT_VERSION, ExperimentError, readExperiment, type Experiment, type ExperimentModel } from '../../workers/shared';
import type { ModelSource } from '../../workers/protocol';
import type { AppState } from '../store';
import type { ViewName } from '../store/ui';
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

/** The experiment's `modelB` (v3): model B's source as modelOf writes it, or nothing when no model B is loaded or loading. */
export function modelBOf(s: Pick<AppState, 'modelB'>, bundled: readonly string[]): { modelB?: ExperimentModel } {
  const m = modelOf(s.modelB?.source ?? null, bundled);
  return m ? { modelB: m } : {};
}

/** The experiment as the workbench holds it now (vectors with their values). */
export function snapshot(s: AppState, bundled: readonly string[]): Experiment {
  const vectorIndex = new Map(s.vectors.map((v, i) => [v.id, i]));
  const saeIndex = new Map(s.saes.map((x, i) => [x.id, i]));
  const index = (id: string | null) => (id !== null && vectorIndex.has(id) ? vectorIndex.get(id)! : null);
  return {
    format: EXPERIMENT_FORMAT,
    version: EXPERIMENT_VERSION,
    model: modelOf(s.lastLoad?.source ?? null, bundled) ?? { kind: 'bundled', name: bundled[0] ?? 'stories260K' },
    ...modelBOf(s, bundled),
    prompt: s.prompt,
    chatTemplate: s.chatTemplate,
    good: s.good,
    bad: s.bad,
    generation: s.generation,
    vectors: s.vectors.map((v) => ({ name: v.name, hook: v.hook, model: v.model, dModel: v.dModel, provenance: v.provenance, createdAt: v.createdAt, values: Array.from(v.vector, shortestF32) })),
    interventions: s.interventions.map((d) => ({
      enabled: d.enabled, hook: d.hook, type: d.type, dose: d.dose, rotateBy: d.rotateBy, mode: d.mode, vector: index(d.vectorId),
      source: d.source, head: d.head, positions: d.positions, steps: d.steps,
      sae: d.saeFeature && saeIndex.has(d.saeFeature.sae) ? { index: saeIndex.get(d.saeFeature.sae)!, feature: d.saeFeature.feature } : null,
    })),
    saes: s.saes.map((x) => ({ source: s.saeOrigins[x.id] ?? { kind: 'local', name: x.label }, hook: x.cfg.hookName, label: x.label })),
    view: {
      name: s.view, showDifference: s.showDifference, showTables: s.showTables, sinkEps: s.sinkEps, heatmapScale: s.heatmapScale,
      hook: s.activationsHook, selection: s.tokenSelection,
      sweep: { layers: s.sweepSettings.layers, doses: s.sweepSettings.doses, site: s.sweepSettings.site, type: s.sweepSettings.type, vector: index(s.sweepSettings.vectorId) },
    },
  };
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
