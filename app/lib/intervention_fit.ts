/**
 * Whether the interventions of the list still fit the model loaded now: after a model change an
 * intervention made for the previous one must not steer the new one silently (DESIGN.md §2
 * Interventions: "nothing applies to a model it was not made for"). One that does not fit is
 * switched off with the reason kept in its row; nothing is removed.
 */
import type { ModelInfo } from '../../workers/protocol';
import type { InterventionDraft } from '../store/steering';
import type { LibraryEntry } from '../store/vectors';
import { isPerHead, vectorWidth } from './hooks';
import { needsVector } from './specs';

/** The fields of the loaded model the check reads. */
export type FitModel = Pick<ModelInfo, 'label' | 'nLayers' | 'dModel' | 'nHeads' | 'nKvHeads' | 'dHead' | 'dMlp' | 'hookNames'>;

/**
 * Why intervention `d` does not fit model `m`, in words, or null when it fits: its hook is not
 * one of the model's (a layer past its last, a router hook on a dense model), its head is not one
 * of the model's heads, its library vector's width is not the hook's width (d_model, d_mlp,
 * n_heads·d_head, d_head for one head: lib/hooks.ts vectorWidth), or its vector was built on
 * another model (LibraryVector.model, the engine label; a file that names no model is judged on its
 * width only).
 * @param vectors the library, to find `d.vectorId` in.
 */
export function misfitReason(d: InterventionDraft, vectors: readonly LibraryEntry[], m: FitModel): string | null {
  const layer = /^blocks\.(\d+)\./.exec(d.hook)?.[1];
  if (layer !== undefined && Number(layer) >= m.nLayers) return `layer ${layer} does not exist in ${m.label} (layers 0..${m.nLayers - 1})`;
  if (!m.hookNames.includes(d.hook)) return `${m.label} has no hook ${d.hook}`;
  if (d.head !== null && isPerHead(d.hook) && d.head >= m.nHeads) return `head ${d.head} does not exist in ${m.label} (heads 0..${m.nHeads - 1})`;
  const v = needsVector(d) ? vectors.find((x) => x.id === d.vectorId) : undefined;
  if (!v) return null;
  const width = vectorWidth(d.hook, m, isPerHead(d.hook) && d.head !== null);
  if (width !== null && v.dModel !== width) return `its vector ${v.name} is ${v.dModel} wide, ${d.hook} of ${m.label} takes ${width}`;
  if (v.model !== null && v.model !== m.label) return `its vector ${v.name} was built on ${v.model}, not ${m.label}`;
  return null;
}

/**
 * The list after a model change: each enabled intervention that does not fit `m` (misfitReason)
 * switched off with `offReason` set; every other one unchanged.
 * @returns the new list and the ids switched off (empty when all fit).
 */
export function switchOffMisfits(list: readonly InterventionDraft[], vectors: readonly LibraryEntry[], m: FitModel): { list: InterventionDraft[]; off: number[] } {
  const off: number[] = [];
  const out = list.map((d) => {
    const why = d.enabled ? misfitReason(d, vectors, m) : null;
    if (!why) return d;
    off.push(d.id);
    return { ...d, enabled: false, offReason: why };
  });
  return { list: out, off };
}
