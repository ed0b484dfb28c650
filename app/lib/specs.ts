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
import { interventionSpec, needsVector } from '../../workers/engine/io/experiment';

/** How messages and marks name the intervention at place n (1-based) of the list. */
export function interventionLabel(n: number): string {
  return `intervention #${n}`;
}

/** The enabled interventions in list order (the order of application at a shared hook), with their places. */
export function appliedInterventions(list: readonly InterventionDraft[]): AppliedIntervention[] {
  return list.flatMap((draft, i) => (draft.enabled ? [{ n: i + 1, draft }] : []));
}

export { doseKey, needsVector } from '../../workers/engine/io/experiment';

/**
 * One intervention as a spec, its vector inline.
 * @throws Error naming the intervention when its vector is missing from the library or a patch has no source prompt.
 */
export function toSpec({ n, draft: d }: AppliedIntervention, vectors: readonly LibraryEntry[]): InterventionSpec {
  const v = needsVector(d) ? vectors.find((x) => x.id === d.vectorId) : undefined;
  if (needsVector(d) && !v && d.vectorId) throw new Error(`${interventionLabel(n)}: its vector is no longer in the library; pick another`);
  return interventionSpec(d, v?.vector ?? null, isPerHead(d.hook), interventionLabel(n));
}

/** The specs of the enabled interventions for a request, with the labels errors use, and what was applied. */
export function specRequest(list: readonly InterventionDraft[], vectors: readonly LibraryEntry[]): { specs: InterventionSpec[]; specLabels: string[]; applied: AppliedIntervention[] } {
  const applied = appliedInterventions(list);
  return { specs: applied.map((a) => toSpec(a, vectors)), specLabels: applied.map((a) => interventionLabel(a.n)), applied };
}
