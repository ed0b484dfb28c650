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

/** What the interventions draw on besides the model: the vector library, and the SAEs loaded now (store `saes`, by id). */
export interface FitLibrary {
  vectors: readonly LibraryEntry[];
  saes: readonly { id: string }[];
}

/**
 * Why intervention `d` does not fit model `m`, in words, or null when it fits: its hook is not
 * one of the model's (a layer past its last, a router hook on a dense model), its head is not one
 * of the model's heads, its library vector's width is not the hook's width (d_model, d_mlp,
 * n_heads·d_head, d_head for one head: lib/hooks.ts vectorWidth), or its vector was built on
 * another model (LibraryVector.model, the engine label; a file that names no model is judged on its
 * width only), or it is an SAE feature intervention whose SAE is not loaded (a restored one waiting for
 * its SAE, `saePending`, or one whose SAE was unloaded with the model it was opened for).
 * @param lib the library, to find `d.vectorId` in, and the SAEs loaded now.
 */
export function misfitReason(d: InterventionDraft, lib: FitLibrary, m: FitModel): string | null {
  const layer = /^blocks\.(\d+)\./.exec(d.hook)?.[1];
  if (layer !== undefined && Number(layer) >= m.nLayers) return `layer ${layer} does not exist in ${m.label} (layers 0..${m.nLayers - 1})`;
  if (!m.hookNames.includes(d.hook)) return `${m.label} has no hook ${d.hook}`;
  if (d.head !== null && isPerHead(d.hook) && d.head >= m.nHeads) return `head ${d.head} does not exist in ${m.label} (heads 0..${m.nHeads - 1})`;
  if (d.saePending) return `its SAE ${d.saePending.sae.label || 'of the experiment'} is not loaded yet: open it in the SAE features view`;
  if (d.saeFeature && !lib.saes.some((x) => x.id === d.saeFeature!.sae)) return 'its SAE is not loaded (an SAE is unloaded with the model it was opened for): open it in the SAE features view and place the feature again';
  const v = needsVector(d) ? lib.vectors.find((x) => x.id === d.vectorId) : undefined;
  if (!v) return null;
  const width = vectorWidth(d.hook, m, isPerHead(d.hook) && d.head !== null);
  if (width !== null && v.dModel !== width) return `its vector ${v.name} is ${v.dModel} wide, ${d.hook} of ${m.label} takes ${width}`;
  if (v.model !== null && v.model !== m.label) return `its vector ${v.name} was built on ${v.model}, not ${m.label}`;
  return null;
}

/**
 * The one gate for switching an intervention on (Apply, + Add, a heatmap or sweep placement, a
 * ticked row, an edit of an enabled one): `d` as it may be stored. One that does not fit the loaded
 * model (misfitReason) is kept switched off with the reason in `offReason`, so nothing built for
 * another model steers this one; one that is off keeps its reason only while it still applies.
 * With no model loaded nothing is checked.
 * @returns `d`, or a copy switched off / with its reason cleared or updated.
 */
export function gateEnable(d: InterventionDraft, lib: FitLibrary, m: FitModel | null): InterventionDraft {
  if (!m) return d;
  if (d.enabled) {
    const why = misfitReason(d, lib, m);
    return why ? { ...d, enabled: false, offReason: why, refused: true } : d;
  }
  if (d.offReason === undefined) return d;
  const why = misfitReason(d, lib, m);
  return why ? (why === d.offReason ? d : { ...d, offReason: why }) : { ...d, offReason: undefined, refused: undefined };
}

/**
 * The list after a model change, recomputed for model `m` as it is loaded now: each enabled
 * intervention that does not fit (misfitReason) is switched off with `offReason` set and `autoOff`
 * marked (this check unticked it); each off one's reason is recomputed for `m`, and one that fits
 * again loses its reason, and is ticked again when this check had unticked it (the user's
 * experiment as it was). One the user switched off stays off.
 * @returns the new list (a row it leaves as it was is the same object), the ids that do not fit `m`
 *   (`off`, each off with its reason) and the ids ticked again (`back`).
 */
export function recheckForModel(list: readonly InterventionDraft[], lib: FitLibrary, m: FitModel): { list: InterventionDraft[]; off: number[]; back: number[] } {
  const off: number[] = [], back: number[] = [];
  const out = list.map((d) => {
    if (!d.enabled && d.offReason === undefined) return d;
    const why = misfitReason(d, lib, m);
    if (why) {
      off.push(d.id);
      return d.enabled ? { ...d, enabled: false, offReason: why, autoOff: true } : why === d.offReason ? d : { ...d, offReason: why };
    }
    if (d.enabled) return d;
    if (d.autoOff) back.push(d.id);
    return { ...d, enabled: d.autoOff === true, offReason: undefined, autoOff: undefined, refused: undefined };
  });
  return { list: out, off, back };
}
