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
import { doseKey, interventionSpec, needsVector as needsEngineVector } from '../../workers/shared';

/** How messages and marks name the intervention at place n (1-based) of the list. */
export function interventionLabel(n: number): string {
  return `intervention #${n}`;
}

/** The enabled interventions in list order (the order of application at a shared hook), with their places. */
export function appliedInterventions(list: readonly InterventionDraft[]): AppliedIntervention[] {
  return list.flatMap((draft, i) => (draft.enabled ? [{ n: i + 1, draft }] : []));
}

export { doseKey };

/** Whether the draft's type takes a library vector (an SAE feature brings its own decoder row). */
export function needsVector(d: Pick<InterventionDraft, 'type' | 'mode' | 'saeFeature'>): boolean {
  return d.type !== 'sae_clamp' && !d.saeFeature && needsEngineVector(d);
}

/**
 * A draft placed from the SAE view as a spec: `add` with the feature's unit decoder row as the
 * vector ({sae, feature}), or `sae_clamp` clamping the feature to the draft's dose.
 * @throws Error prefixed by `label` when a clamp names no feature.
 */
function saeSpec(d: InterventionDraft, label: string): InterventionSpec {
  if (!d.saeFeature) throw new Error(`${label}: a clamp needs an SAE feature: place it from the SAE view`);
  const { sae, feature } = d.saeFeature;
  const spec: InterventionSpec = { hook: d.hook, type: d.type, positions: d.positions };
  if (d.type === 'sae_clamp') Object.assign(spec, { sae, feature, value: d.dose });
  else spec.vector = { sae, feature };
  const key = doseKey(d);
  if (key) spec[key] = d.dose;
  if (d.steps) spec.steps = d.steps.end === null ? { start: d.steps.start } : { start: d.steps.start, end: d.steps.end };
  return spec;
}

/**
 * One intervention as a spec, its vector inline.
 * @throws Error naming the intervention when its vector is missing from the library or a patch has no source prompt.
 */
export function toSpec({ n, draft: d }: AppliedIntervention, vectors: readonly LibraryEntry[]): InterventionSpec {
  if (d.type === 'sae_clamp' || d.saeFeature) return saeSpec(d, interventionLabel(n));
  const v = needsVector(d) ? vectors.find((x) => x.id === d.vectorId) : undefined;
  if (needsVector(d) && !v && d.vectorId) throw new Error(`${interventionLabel(n)}: its vector is no longer in the library; pick another`);
  return interventionSpec(d, v?.vector ?? null, isPerHead(d.hook), interventionLabel(n));
}

/** The specs of the enabled interventions for a request, with the labels errors use, and what was applied. */
export function specRequest(list: readonly InterventionDraft[], vectors: readonly LibraryEntry[]): { specs: InterventionSpec[]; specLabels: string[]; applied: AppliedIntervention[] } {
  const applied = appliedInterventions(list);
  return { specs: applied.map((a) => toSpec(a, vectors)), specLabels: applied.map((a) => interventionLabel(a.n)), applied };
}
