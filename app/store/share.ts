import type { StateCreator } from 'zustand';
import type { AppState } from './index';

/** A message about an experiment link, file or stored state: why it could not be restored, or what is missing. */
export interface ExperimentNotice {
  /** What happened ("This link could not be opened"). */
  what: string;
  /** Why, and what to do. */
  why: string;
  /**
   * The file or link could not be read at all, so nothing of it is on screen: the user's next
   * successful Analyse (of the experiment on screen) clears the notice (keptAfterAnalyse). Notices
   * about a restored experiment (a vector left out, a model not loaded) describe what is on screen
   * and stay until the next restore or dismiss.
   */
  unread?: boolean;
  /**
   * The interventions (their ids) the notice is about, e.g. SAE feature interventions left off:
   * once every one of them is deleted the notice goes (removeIntervention).
   */
  interventions?: number[];
  /** The notice of the check on loading another model (actions/model.ts checkInterventionsFit): recomputed, or cleared, on each model change. */
  fit?: true;
  /** 'info': news, not a failure (interventions switched on again); shown in the info colours. Default: an error. */
  tone?: 'info';
}

/**
 * The notice after an Analyse succeeded: an unread file's or link's is cleared — the error is
 * the user's last one of that kind, and the experiment now on screen works — unless the Analyse
 * was a restore's own rerun (`restoring`). Never cleared on a timer or when a job starts.
 */
export function keptAfterAnalyse(n: ExperimentNotice | null, restoring: boolean): ExperimentNotice | null {
  return n?.unread && !restoring ? null : n;
}

/** The sharing slice: the notice about the last restore (kept apart from job errors, which each new job clears). */
export interface ShareSlice {
  experimentNotice: ExperimentNotice | null;
  /** True while an experiment is being restored (the link is not rewritten meanwhile). */
  restoring: boolean;
  setExperimentNotice(n: ExperimentNotice | null): void;
  setRestoring(on: boolean): void;
}

export const createShareSlice: StateCreator<AppState, [], [], ShareSlice> = (set) => ({
  experimentNotice: null,
  restoring: false,
  setExperimentNotice: (experimentNotice) => set({ experimentNotice }),
  setRestoring: (restoring) => set({ restoring }),
});
