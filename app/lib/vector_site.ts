/**
 * What the intervention editor says when a library vector is applied at another hook than the one
 * it was computed at. Applying a steering vector at another layer is a legitimate choice (CAA
 * vectors often act at nearby layers too, Rimsky et al. arXiv 2312.06681; the dose–response sweep
 * applies one vector at every layer on purpose), so this is information, not an error: the width
 * check (lib/hooks.ts vectorWidth) is what refuses a vector that cannot be applied.
 */
import { sameHookPoint } from './hooks';

/** The note for a vector computed at `computedAt` applied at `appliedAt`; null when they are one point (blocks.2.hook_resid_post = blocks.3.hook_resid_pre) or the vector does not say where it was computed. */
export function vectorSiteNote(vector: { name: string; hook: string | null }, appliedAt: string, fromSweep: boolean): string | null {
  if (!vector.hook || sameHookPoint(vector.hook, appliedAt)) return null;
  return fromSweep
    ? `${appliedAt} is the layer picked on the dose–response curve; ${vector.name} was computed at ${vector.hook}.`
    : `${vector.name} was computed at ${vector.hook} and is applied here at ${appliedAt}: a steering vector often carries to nearby layers, but not always as strongly (the Dose–response view compares layers).`;
}
