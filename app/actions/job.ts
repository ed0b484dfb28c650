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
  const ticket = ++jobTicket;
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
    // A job a newer one replaced (a generation a load cancelled) must not clear the newer one's mark.
    if (ticket === jobTicket) {
      setJob(null);
      runQueued();
    }
  }
}

/** The latest job started; a job ends the mark only when it is still the latest. */
let jobTicket = 0;

/** Starts the queued action, if any, now that no job runs. */
function runQueued(): void {
  const s = useStore.getState();
  if (!s.queued || s.job) return;
  const q = s.queued;
  s.setQueued(null);
  void q.run();
}

/**
 * Queues `run` to start when the running job ends (the progress bar shows it queued); asking again
 * while one is queued keeps that one (it reads the experiment when it starts, so it uses the latest edits).
 * @returns a promise that settles when the queued run has finished or was dropped.
 */
export function queueAfterJob(label: string, run: () => Promise<void>): Promise<void> {
  const s = useStore.getState();
  if (s.queued) return s.queued.done;
  let finish!: () => void;
  const done = new Promise<void>((r) => { finish = r; });
  s.setQueued({ label, done, drop: finish, run: async () => { try { await run(); } finally { finish(); } } });
  return done;
}

/** Drops the queued action (the progress bar's "Unqueue"); a caller waiting on it resumes. */
export function dropQueued(): void {
  const q = useStore.getState().queued;
  if (!q) return;
  useStore.getState().setQueued(null);
  q.drop();
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
