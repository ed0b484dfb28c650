import type { LibraryEntry } from '../store/vectors';
import type { InterventionDraft } from '../store/steering';
import { isPerHead, vectorWidth, type Dims } from './hooks';
import { needsVector } from './specs';

/**
 * The library vector a new intervention at `hook` starts with: the newest one built at that hook
 * (its provenance hook, e.g. a CAA vector from blocks.2.hook_resid_post), else the newest whose
 * width fits the hook, else the newest. A vector from another hook is only a fallback: CAA
 * directions are layer-specific (Rimsky et al. arXiv 2312.06681 §4).
 * @param width the hook's vector width (d_model, or d_head for per-head hooks); null when unknown.
 * @returns the vector's id, or null for an empty library (the caller must say a vector is needed).
 */
export function pickVector(vectors: readonly LibraryEntry[], hook: string, width: number | null): string | null {
  const fits = width === null ? vectors : vectors.filter((v) => v.dModel === width);
  return (fits.filter((v) => v.hook === hook).at(-1) ?? fits.at(-1) ?? vectors.at(-1))?.id ?? null;
}

/**
 * The interventions after `added` joined the library: one that takes a vector but has none (placed
 * with "+ Add" before any vector existed) now starts with the one pickVector chooses for its hook,
 * when that vector fits the hook's width. Every other intervention is returned unchanged.
 * @param dims the model's widths (d_model, d_head …); null before a model is loaded (no width check).
 */
export function adoptVectors(list: readonly InterventionDraft[], vectors: readonly LibraryEntry[], dims: Dims | null): InterventionDraft[] {
  return list.map((d) => {
    if (d.vectorId !== null || !needsVector(d)) return d;
    const width = dims ? vectorWidth(d.hook, dims, isPerHead(d.hook) && d.head !== null) : null;
    const id = pickVector(vectors, d.hook, width);
    const fits = id !== null && (width === null || vectors.find((v) => v.id === id)!.dModel === width);
    return fits ? { ...d, vectorId: id } : d;
  });
}
