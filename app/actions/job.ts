import { useStore } from '../store';
import type { Job } from '../store/ui';
import { messageOf } from './worker';

/**
 * Runs a long job: marks it in the store (the progress bar and disabled buttons read it), clears
 * the previous error, and on failure shows the banner with what failed and the worker's reason.
 * Results already on display are left alone. @returns the job's value, or null when it failed.
 */
export async function runJob<T>(kind: Job['kind'], label: string, what: string, body: () => Promise<T>, cancellable = false): Promise<T | null> {
  const { setJob, setFailure } = useStore.getState();
  setFailure(null);
  setJob({ kind, label, startedAt: performance.now(), cancellable });
  try {
    return await body();
  } catch (e) {
    setFailure({ what, why: messageOf(e) });
    return null;
  } finally {
    setJob(null);
  }
}
