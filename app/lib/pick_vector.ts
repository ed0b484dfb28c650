import type { LibraryEntry } from '../store/vectors';

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
