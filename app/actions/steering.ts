/**
 * Placing interventions from the views (heatmap cells, token ranges, sweep points). These only
 * edit the experiment; the next analysis or generation runs them.
 */
import { useStore } from '../store';
import type { PositionSelector } from '../../workers/protocol';
import type { InterventionDraft } from '../store/steering';
import { hookOfLensRow, vectorWidth } from '../lib/hooks';
import { pickVector } from '../lib/pick_vector';
import { loadStaleText, loadedNow } from '../lib/model_identity';
import { buildVector, loadDefaultSet } from './vectors';

/**
 * The library vector a new intervention at `hook` starts with (lib/pick_vector.ts: one built at that
 * hook first), never one built on another model than the loaded one (lib/intervention_fit.ts).
 */
function defaultVector(hook: string): string | null {
  const { vectors, info } = useStore.getState();
  const ours = info ? vectors.filter((v) => v.model === null || v.model === info.label) : vectors;
  return pickVector(ours, hook, info ? vectorWidth(hook, info, false) : null);
}

/** α an intervention with this library vector starts with: the vector's own (LibraryEntry.alpha), else 1. */
function alphaOf(vectorId: string | null): number {
  return useStore.getState().vectors.find((v) => v.id === vectorId)?.alpha ?? 1;
}

/** A new `add` intervention (every step) at a hook and positions, with its vector's α (alphaOf). */
function draft(hook: string, positions: PositionSelector, patch: Partial<InterventionDraft> = {}): Omit<InterventionDraft, 'id'> {
  const vectorId = patch.vectorId !== undefined ? patch.vectorId : defaultVector(hook);
  return {
    enabled: true, hook, type: 'add', dose: alphaOf(vectorId), rotateBy: 'theta', mode: 'project', vectorId,
    source: '', head: null, positions, steps: null, ...patch,
  };
}

/** The hook a new intervention starts at when nothing says where: the residual stream after the block before the last. */
export function defaultHook(): string {
  const n = useStore.getState().info?.nLayers ?? 1;
  return `blocks.${Math.max(0, n - 2)}.hook_resid_post`;
}

/**
 * What a click on a margin-heatmap cell did: placed an intervention, or placed nothing because no
 * vector in the library was built at the cell's hook ('empty': the library is empty; 'other-hook':
 * it has vectors from other hooks only, `fallback` naming the one pickVector would take).
 */
export type LensCellPlacement =
  | { placed: true; id: number; hook: string }
  | { placed: false; hook: string; row: number; col: number; reason: 'empty' }
  | { placed: false; hook: string; row: number; col: number; reason: 'other-hook'; fallback: { id: string; name: string; hook: string | null } };

/**
 * Adds an `add` intervention at a cell of the margin heatmap: its layer's residual stream, at that
 * token, with the newest vector built at that hook. Places nothing when the library has none built
 * there, since CAA directions are layer-specific (Rimsky et al. arXiv 2312.06681 §4) and an `add`
 * without a vector steers nothing: the caller offers to build one there, or (`anyHook`) to place the
 * newest vector of the hook's width from another hook anyway.
 */
export function placeAtLensCell(row: number, col: number, anyHook = false): LensCellPlacement {
  const hook = hookOfLensRow(row);
  const { vectors } = useStore.getState();
  if (!vectors.length) return { placed: false, hook, row, col, reason: 'empty' };
  if (!anyHook && !vectors.some((v) => v.hook === hook)) {
    const v = vectors.find((x) => x.id === defaultVector(hook))!;
    return { placed: false, hook, row, col, reason: 'other-hook', fallback: { id: v.id, name: v.name, hook: v.hook } };
  }
  return { placed: true, id: useStore.getState().addIntervention(draft(hook, [col])), hook };
}

/**
 * For a heatmap cell clicked with an empty library: builds the CAA vector of the default contrastive
 * set (public/steering/happy_sad.json) at the cell's hook, then places it at the cell.
 * @returns the placement, or null when the set could not be loaded or the build failed (the banner says why).
 */
export async function buildDefaultAndPlace(row: number, col: number): Promise<LensCellPlacement | null> {
  await loadDefaultSet();
  const set = useStore.getState().contrastSet;
  if (!set) return null;
  const hook = hookOfLensRow(row);
  const positive = set.positive.map((t) => t.trim()).filter(Boolean), negative = set.negative.map((t) => t.trim()).filter(Boolean);
  const v = await buildVector({ method: 'caa', hook, positive, negative, position: 'last' }, `CAA ${set.name}`, set.suggested?.alpha);
  return v ? placeAtLensCell(row, col) : null;
}

/** Adds an intervention on a range of prompt tokens, at the hook of the intervention open in the editor (else the default). */
export function placeOnTokens(start: number, end: number): void {
  const s = useStore.getState();
  const open = s.interventions.find((d) => d.id === s.selectedIntervention);
  const hook = open?.hook ?? defaultHook();
  s.addIntervention(draft(hook, end - start === 1 ? [start] : { start, end }));
  s.setTokenSelection(null);
}

/** Adds an intervention with default settings (all positions, every step). */
export function addDefaultIntervention(): void {
  useStore.getState().addIntervention(draft(defaultHook(), 'all'));
}

/**
 * What Apply on a library row did: the intervention it set (added, or the one with that vector at
 * that hook it replaced), where, and with which α; `refused` is why it was left switched off (it does
 * not fit the loaded model: lib/intervention_fit.ts gateEnable), absent when it is on.
 */
export interface AppliedVector { id: number; replaced: boolean; hook: string; alpha: number; refused?: string }

/** Writes `point` into `target` (opened in the editor) or, with none, adds it; the store's enable check applies either way. @returns the intervention's id. */
function placeInto(target: InterventionDraft | undefined, point: Omit<InterventionDraft, 'id'>): number {
  const s = useStore.getState();
  if (!target) return s.addIntervention(point);
  s.updateIntervention(target.id, point);
  s.selectIntervention(target.id);
  return target.id;
}

/**
 * Applies a library vector (Apply in its row): an `add` of it with its α (LibraryEntry.alpha) at the
 * hook it was computed at (the default hook when the file did not say), at all positions, every
 * step, opened in the editor. It replaces an `add` of that vector at that hook already in the list
 * (two would add their doses, α1 + α2), else it is added. One that does not fit the loaded model
 * (a vector built on another, a layer it has not) is left switched off with its reason (`refused`).
 * @returns what it set, or null for a vector no longer in the library.
 */
export function applyVector(vectorId: string): AppliedVector | null {
  const s = useStore.getState();
  const v = s.vectors.find((x) => x.id === vectorId);
  if (!v) return null;
  const hook = v.hook ?? defaultHook();
  const point = draft(hook, 'all', { vectorId });
  const target = s.interventions.find((d) => d.hook === hook && d.vectorId === vectorId && d.type === 'add');
  const id = placeInto(target, point);
  const set = useStore.getState().interventions.find((d) => d.id === id)!;
  return { id, replaced: target !== undefined, hook, alpha: point.dose, ...(set.enabled ? {} : { refused: set.offReason }) };
}

/** Types a sweep point can be loaded into: the sweep's own (a dose on a vector). */
const SWEEP_TYPES: readonly InterventionDraft['type'][] = ['add', 'add_norm_preserving', 'rotate'];

/**
 * Loads point (layer li, dose di) of the sweep on display into the list: its hook, type, dose and
 * vector at all positions, every step, as the sweep ran it. It replaces, rather than joins, the
 * intervention an earlier pick from this sweep was loaded into, else one of the sweep's types at
 * that hook with that vector: two there would add their doses (α1 + α2), which the sweep did not
 * measure. Otherwise it is added. It is opened in the editor. A sweep of another load (another
 * model, or the same one with other weights or on another backend) places nothing: its doses were
 * measured on other numbers (lib/model_identity.ts).
 * @returns its id and whether it replaced one; `stale` saying why nothing was placed; or null when
 *   no sweep is on display.
 */
export function placeFromSweep(li: number, di: number): { id: number; replaced: boolean } | { stale: string } | null {
  const s = useStore.getState();
  const sw = s.sweep;
  if (!sw) return null;
  const why = loadStaleText(sw.modelLabel, sw.computedWith, loadedNow(s));
  if (why) return { stale: `This sweep is stale — ${why}: run the sweep again to pick a dose.` };
  const hook = sw.result.hooks[li];
  const point = draft(hook, 'all', { type: sw.type, dose: sw.result.doses[di], vectorId: sw.vectorId, rotateBy: 'theta' });
  const target = s.interventions.find((d) => d.id === sw.pickedId)
    ?? s.interventions.find((d) => d.hook === hook && d.vectorId === sw.vectorId && SWEEP_TYPES.includes(d.type));
  const id = placeInto(target, point);
  s.setSweepPick(id);
  return { id, replaced: target !== undefined };
}
