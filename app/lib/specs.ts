/**
 * The interventions as edited (store/steering.ts) → the engine's JSON specs
 * (workers/engine/steering/spec.ts), which the worker validates against the model and run.
 * Only what the draft itself lacks is reported here; the worker reports the rest (hook, width,
 * positions, step window).
 */
import type { InterventionSpec } from '../../workers/protocol';
import type { InterventionDraft } from '../store/steering';
import type { LibraryEntry } from '../store/vectors';
import type { AppliedIntervention } from '../store/results';
import { isPerHead } from './hooks';

/** How messages and marks name the intervention at place n (1-based) of the list. */
export function interventionLabel(n: number): string {
  return `intervention #${n}`;
}

/** The enabled interventions in list order (the order of application at a shared hook), with their places. */
export function appliedInterventions(list: readonly InterventionDraft[]): AppliedIntervention[] {
  return list.flatMap((draft, i) => (draft.enabled ? [{ n: i + 1, draft }] : []));
}

/** Whether the draft's type takes a library vector. */
export function needsVector(d: Pick<InterventionDraft, 'type' | 'mode'>): boolean {
  return d.type !== 'patch' && !(d.type === 'ablate' && d.mode === 'zero');
}

/** The spec key the dose sets, or null for types without a dose. */
export function doseKey(d: Pick<InterventionDraft, 'type' | 'rotateBy'>): 'alpha' | 'theta' | 't' | null {
  if (d.type === 'add' || d.type === 'add_norm_preserving') return 'alpha';
  return d.type === 'rotate' ? d.rotateBy : null;
}

/**
 * One intervention as a spec, its vector inline.
 * @throws Error naming the intervention when its vector is missing from the library or a patch has no source prompt.
 */
export function toSpec({ n, draft: d }: AppliedIntervention, vectors: readonly LibraryEntry[]): InterventionSpec {
  const fail = (msg: string): never => { throw new Error(`${interventionLabel(n)}: ${msg}`); };
  const spec: InterventionSpec = { hook: d.hook, type: d.type, positions: d.positions };
  const key = doseKey(d);
  if (key) spec[key] = d.dose;
  if (d.type === 'ablate') spec.mode = d.mode;
  if (needsVector(d)) {
    const v = vectors.find((x) => x.id === d.vectorId);
    if (!v) fail(d.vectorId ? 'its vector is no longer in the library; pick another' : 'pick a vector (build or import one in the Vectors tab)');
    spec.vector = v!.vector;
  }
  if (d.type === 'patch') {
    if (d.source.trim() === '') fail('patch needs a source prompt whose activations are patched in');
    spec.source = d.source;
  }
  if (d.head !== null && isPerHead(d.hook)) spec.head = d.head;
  if (d.steps) spec.steps = d.steps.end === null ? { start: d.steps.start } : { start: d.steps.start, end: d.steps.end };
  return spec;
}

/** The specs of the enabled interventions for a request, with the labels errors use, and what was applied. */
export function specRequest(list: readonly InterventionDraft[], vectors: readonly LibraryEntry[]): { specs: InterventionSpec[]; specLabels: string[]; applied: AppliedIntervention[] } {
  const applied = appliedInterventions(list);
  return { specs: applied.map((a) => toSpec(a, vectors)), specLabels: applied.map((a) => interventionLabel(a.n)), applied };
}
