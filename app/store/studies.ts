import type { StateCreator } from 'zustand';
import type { AppState } from './index';
import type { StudyName, StudyRequest, StudyResult } from '../../workers/protocol';

/**
 * One study's result on display with what it answers: the request it was run with (a view compares
 * it with the request it would send now) and the model load (lib/model_identity.ts loadStaleness).
 */
export interface StudyRun<N extends StudyName> {
  request: StudyRequest<N>;
  result: StudyResult<N>;
  modelLabel: string;
  /** The model load it was computed with (store modelIdentity: model · weight storage · backend). */
  computedWith: string;
}

/** The latest run of each study started through actions/study.ts runStudy, by study name. */
export type StudyRuns = { [N in StudyName]?: StudyRun<N> };

/** The studies slice: a result per study (engine/studies/registry.ts), so a new study's view needs no store file of its own. */
export interface StudiesSlice {
  studies: StudyRuns;
  setStudy<N extends StudyName>(name: N, run: StudyRun<N> | null): void;
}

export const createStudiesSlice: StateCreator<AppState, [], [], StudiesSlice> = (set) => ({
  studies: {},
  setStudy: (name, run) => set((s) => {
    const studies = { ...s.studies };
    if (run) (studies as Record<string, unknown>)[name] = run;
    else delete studies[name];
    return { studies };
  }),
});
