import { useStore } from '../store';
import type { StudyRun } from '../store/studies';
import type { StudyName, StudyRequest } from '../../workers/protocol';
import { loadedNow, loadStaleness } from '../lib/model_identity';

/** A study's result on display, and what makes it stale now. */
export interface StudyOnDisplay<N extends StudyName> {
  run: StudyRun<N> | null;
  /** 'model' / 'load': computed on another model or load (lib/model_identity.ts); 'request': the view would ask otherwise now; null: up to date. */
  stale: 'model' | 'load' | 'request' | null;
  /** The study runs now (the job of its kind). */
  running: boolean;
}

/**
 * The latest result of study `name` (actions/study.ts runStudy), for its view, compared with the
 * model ready now and with `requestNow`, the request the view would send now (as JSON).
 */
export function useStudy<N extends StudyName>(name: N, requestNow?: StudyRequest<N>): StudyOnDisplay<N> {
  const run = useStore((s) => (s.studies[name] ?? null) as StudyRun<N> | null);
  const modelStatus = useStore((s) => s.modelStatus);
  const modelLabel = useStore((s) => s.modelLabel);
  const modelIdentity = useStore((s) => s.modelIdentity);
  const running = useStore((s) => s.job?.kind === name);
  if (!run) return { run, stale: null, running };
  const load = loadStaleness(run.modelLabel, run.computedWith, loadedNow({ modelStatus, modelLabel, modelIdentity }));
  const request = requestNow !== undefined && JSON.stringify(requestNow) !== JSON.stringify(run.request) ? 'request' : null;
  return { run, stale: load ?? request, running };
}
