/**
 * SAEs across a reload of the same model (another weight storage, a fresh GPU device): the worker
 * unloads every SAE with the model it replaces, so each one that was loaded is read again from
 * where it came from, the active one stays active, and the SAE feature interventions follow their
 * SAE to its new id. One that cannot be read again is named in a notice, and its interventions are
 * switched off (they would steer with a feature that is no longer there).
 */
import { useStore } from '../store';
import type { SaeSource } from '../../workers/protocol';
import { loadSae, saeSourceOf } from './sae';

/** The SAEs loaded before a reload: each with its source (null when unknown) and hook, and the active one. */
export interface LoadedSaes {
  saes: { id: string; label: string; hook: string; source: SaeSource | null }[];
  active: string | null;
}

/** What is loaded now, to be read again after the model reload (loadedSaes → reload → reattachSaes). */
export function loadedSaes(): LoadedSaes {
  const s = useStore.getState();
  return { saes: s.saes.map((x) => ({ id: x.id, label: x.label, hook: x.cfg.hookName, source: saeSourceOf(x.id) ?? null })), active: s.activeSae };
}

/**
 * Loads `before`'s SAEs again into the reloaded model, in their order, and moves the feature
 * interventions and the active SAE to the new ids.
 * @returns the labels of the SAEs that could not be loaded again (also shown in a notice).
 */
export async function reattachSaes(before: LoadedSaes): Promise<string[]> {
  const newId = new Map<string, string>();
  const lost: string[] = [];
  for (const x of before.saes) {
    const id = x.source ? await loadSae(x.source, x.hook) : null;
    if (id) newId.set(x.id, id);
    else lost.push(x.label);
  }
  const s = useStore.getState();
  for (const d of s.interventions) {
    const old = d.saeFeature?.sae;
    if (!old || !before.saes.some((x) => x.id === old)) continue;
    const id = newId.get(old);
    s.updateIntervention(d.id, id ? { saeFeature: { ...d.saeFeature!, sae: id } } : { enabled: false });
  }
  const active = before.active && newId.get(before.active);
  if (active) useStore.getState().setActiveSae(active);
  if (lost.length) {
    s.setExperimentNotice({
      what: `The model was reloaded, which unloaded ${lost.length === 1 ? 'an SAE' : 'SAEs'}: ${lost.join(', ')}`,
      why: 'It could not be read again (see the message above). Load it again in the SAE features view; its feature interventions are switched off until then.',
    });
  }
  return lost;
}
