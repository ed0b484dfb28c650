import { useStore } from '../store';
import type { Failure, Job } from '../store/ui';
import { messageOf, worker } from './worker';

export interface JobOptions {
  /** The worker can stop it (cancel(): generations and downloads). */
  cancellable?: boolean;
  /** A retry to offer in the banner for some failures (e.g. "Load anyway" after a size refusal). */
  retryFor?: (e: Error) => Failure['retry'] | undefined;
}

/**
 * Runs a long job: marks it in the store (the progress bar and disabled buttons read it), clears
 * the previous error, and on failure shows the banner with what failed and the worker's reason
 * (a cancelled job shows none). Results already on display are left alone.
 * @returns the job's value, or null when it failed or was cancelled.
 */
export async function runJob<T>(kind: Job['kind'], label: string, what: string, body: () => Promise<T>, opts: JobOptions = {}): Promise<T | null> {
  const { setJob, setFailure } = useStore.getState();
  setFailure(null);
  setJob({ kind, label, startedAt: performance.now(), cancellable: opts.cancellable ?? false });
  try {
    return await body();
  } catch (e) {
    if (!(e instanceof Error && e.name === 'CancelledError')) {
      setFailure({ what, why: messageOf(e), retry: e instanceof Error ? opts.retryFor?.(e) : undefined });
    }
    return null;
  } finally {
    setJob(null);
  }
}

/** Renames the running job, for a job of several stages (the progress bar says which one runs). */
export function relabelJob(label: string): void {
  const { job, setJob } = useStore.getState();
  if (job) setJob({ ...job, label });
}

/** Asks the worker to stop what it is doing (a generation after the current token, a download in flight). */
export function cancelRunning(): void {
  void worker().cancel();
}
