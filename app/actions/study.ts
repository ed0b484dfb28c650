import * as Comlink from 'comlink';
import { useStore } from '../store';
import type { JobKind } from '../store/ui';
import type { Progress, ProgressStudy, StudyRequest, StudyResult } from '../../workers/protocol';
import { runJob } from './job';
import { inOrder } from './worker';
import { currentIdentity } from './identity';

/** How a study's run is named in the progress bar and the error banner. */
export interface StudyJob {
  /** The progress bar's label: "Lens entropy per layer". */
  label: string;
  /** The banner's title when it fails: "Could not compute the lens entropy". */
  what: string;
  /** Steps expected before the first progress report (default 1). */
  total?: number;
}

/**
 * Runs study `name` of the studies' table (engine/studies/registry.ts) in the worker as a
 * cancellable job of its own kind (a view lists it in its row's `job`, app/views/registry.ts):
 * progress into the progress bar, the result with its request and model load into the store's
 * `studies[name]` (store/studies.ts), a failure into the banner. Cancel keeps the result on display.
 * (A ProgressStudy reports a Progress, or a shape extending it, first: that is what the bar reads.)
 * @returns the result, or null when it failed or was cancelled.
 */
export async function runStudy<N extends ProgressStudy & JobKind>(name: N, req: StudyRequest<N>, job: StudyJob): Promise<StudyResult<N> | null> {
  return runJob(name, job.label, job.what, async () => {
    const s = useStore.getState();
    s.setJobSteps({ done: 0, total: job.total ?? 1 });
    const onProgress = Comlink.proxy((p: Progress) => useStore.getState().setJobSteps(p));
    const result = await inOrder((w) => (w[name] as unknown as (r: StudyRequest<N>, p: typeof onProgress) => Promise<StudyResult<N>>)(req, onProgress));
    useStore.getState().setStudy(name, { request: req, result, modelLabel: s.modelLabel ?? '', computedWith: currentIdentity() });
    return result;
  }, { cancellable: true });
}
