import type { StateCreator } from 'zustand';
import type { AppState } from './index';
import { mergeSetter } from './merge_setter';
import type { AblateMode, InterventionType, PositionSelector } from '../../workers/protocol';
import type { ExperimentSae } from '../../workers/shared';
import { gateEnable } from '../lib/intervention_fit';

/**
 * An intervention as the user edits it (DESIGN.md §2 Interventions). It becomes the engine's JSON
 * spec through lib/specs.ts when an analysis, generation or sweep is run.
 */
export interface InterventionDraft {
  /** Stable key (the list's numbers #1, #2 … are places in the list, not ids). */
  id: number;
  enabled: boolean;
  hook: string;
  type: InterventionType;
  /** α (add, add_norm_preserving); θ in radians or t (rotate, see rotateBy). */
  dose: number;
  rotateBy: 'theta' | 't';
  /** ablate: zero, mean (the vector is the mean activation) or project (the vector's direction is removed). */
  mode: AblateMode;
  /** Library vector id (every type but patch and ablate zero). */
  vectorId: string | null;
  /** patch: the prompt whose activations at the hook are patched in; patch_route: the prompt whose chosen experts are. */
  source: string;
  /** ban_experts / force_experts (mixture-of-experts routers): the expert ids. */
  experts?: number[];
  /** Per-head hooks (attn.hook_q/k/v/z): the head steered; null = the whole row. */
  head: number | null;
  positions: PositionSelector;
  /** Generation steps [start, end) (0 = the prompt pass); end null = to the end; null = every step. */
  steps: { start: number; end: number | null } | null;
  /**
   * An SAE feature (placed from the SAE view): with type add its unit decoder row is the vector;
   * with sae_clamp the feature is clamped to `dose`. `sae` is the loaded SAE's id.
   */
  saeFeature?: { sae: string; feature: number };
  /**
   * An SAE feature intervention restored from an experiment whose SAE is not loaded (yet): the SAE
   * as the experiment names it and the feature. It stays switched off until that SAE is loaded
   * (actions/experiment.ts restoreSaes), and the experiment keeps naming it meanwhile.
   */
  saePending?: { sae: ExperimentSae; feature: number };
  /**
   * Why it was switched off when another model was loaded (lib/intervention_fit.ts: a layer, head
   * or width that model has not, or a vector built on another model); cleared when the user ticks
   * it again. Session only: not part of the experiment file.
   */
  offReason?: string;
  /** Switched off by the fit check on loading another model or restoring an experiment (not by the user): ticked again when a model it fits is loaded. Session only. */
  autoOff?: boolean;
  /** The user's last attempt to switch it on was refused (lib/intervention_fit.ts gateEnable): `offReason` says why. Session only. */
  refused?: boolean;
}

/** The dose–response sweep as set up in its view. */
export interface SweepSettings {
  /** Block indices, as typed ("1,2,3", "0-4" or "all"). */
  layers: string;
  /** Doses, as typed ("-8,-4,0,4,8"). */
  doses: string;
  /** The hook within each block, e.g. "hook_resid_post" (the sweep steers blocks.{l}.<site>). */
  site: string;
  type: 'add' | 'add_norm_preserving' | 'rotate';
  vectorId: string | null;
}

/** The steering slice: the interventions of the experiment (in order of application) and the sweep setup. */
export interface SteeringSlice {
  interventions: InterventionDraft[];
  /** Intervention open in the editor. */
  selectedIntervention: number | null;
  sweepSettings: SweepSettings;
  /**
   * Adds an intervention at the end of the list and opens it in the editor; one that does not fit
   * the loaded model is added switched off with its reason (lib/intervention_fit.ts gateEnable).
   * @returns its id.
   */
  addIntervention(d: Omit<InterventionDraft, 'id'>): number;
  /** Edits one; switching it on (or editing an enabled one) into a misfit leaves it off with its reason (gateEnable). */
  updateIntervention(id: number, patch: Partial<Omit<InterventionDraft, 'id'>>): void;
  removeIntervention(id: number): void;
  /** Moves an intervention one place up (-1) or down (+1): the order of application at a shared hook. */
  moveIntervention(id: number, by: -1 | 1): void;
  selectIntervention(id: number | null): void;
  setSweepSettings(patch: Partial<SweepSettings>): void;
}

let nextId = 1;

/** A fresh intervention id (store ids are never reused; lib/experiment_state.ts apply takes them for a restored list). */
export function newInterventionId(): number {
  return nextId++;
}

export const createSteeringSlice: StateCreator<AppState, [], [], SteeringSlice> = (set) => ({
  interventions: [],
  selectedIntervention: null,
  sweepSettings: { layers: 'all', doses: '-8,-4,-2,0,2,4,8', site: 'hook_resid_post', type: 'add', vectorId: null },
  addIntervention: (d) => {
    const id = newInterventionId();
    set((s) => ({ interventions: [...s.interventions, gateEnable({ ...d, id }, s, s.info)], selectedIntervention: id }));
    return id;
  },
  updateIntervention: (id, patch) => set((s) => ({ interventions: s.interventions.map((d) => (d.id === id ? gateEnable({ ...d, ...patch }, s, s.info) : d)) })),
  removeIntervention: (id) => set((s) => {
    const interventions = s.interventions.filter((d) => d.id !== id);
    const named = s.experimentNotice?.interventions;
    // a notice about interventions (an SAE not loaded) goes with the last of them
    const gone = named !== undefined && !named.some((n) => interventions.some((d) => d.id === n));
    return { interventions, selectedIntervention: s.selectedIntervention === id ? null : s.selectedIntervention, ...(gone ? { experimentNotice: null } : {}) };
  }),
  moveIntervention: (id, by) => set((s) => {
    const i = s.interventions.findIndex((d) => d.id === id);
    const j = i + by;
    if (i < 0 || j < 0 || j >= s.interventions.length) return {};
    const list = [...s.interventions];
    [list[i], list[j]] = [list[j], list[i]];
    return { interventions: list };
  }),
  selectIntervention: (selectedIntervention) => set({ selectedIntervention }),
  setSweepSettings: mergeSetter(set, 'sweepSettings'),
});
