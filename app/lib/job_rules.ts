/**
 * What a new request does while a job runs (issue #8 fault 10: a newer request is never dropped
 * silently): Analyse queues behind any job but a model load; loading a model cancels a running
 * cancellable job (a generation, sweep, branch tree, batch, …) instead of waiting for it to end.
 * Pure rules; the actions and buttons read them.
 */
import type { Job } from '../store/ui';

/** Whether a model load now cancels the running job (true) rather than waiting behind it; a load never cancels another load. */
export function loadCancels(job: Job | null): boolean {
  return job !== null && job.cancellable && job.kind !== 'load';
}

/** Whether the load buttons are disabled: a job runs that a load would not cancel. */
export function loadBlocked(job: Job | null): boolean {
  return job !== null && !loadCancels(job);
}

/** What Analyse does now: run, queue behind the running job, or nothing (no model ready). */
export function analyseAction(job: Job | null, modelReady: boolean): 'run' | 'queue' | 'unavailable' {
  if (!modelReady || job?.kind === 'load') return 'unavailable';
  return job ? 'queue' : 'run';
}

/**
 * Why an action's button is disabled while a job runs — "waiting for: Building the report" — for
 * its title (tooltip); undefined when no job runs. A load that would cancel the job says so instead
 * (the load buttons use loadCancels).
 */
export function waitingFor(job: Job | null): string | undefined {
  if (!job) return undefined;
  return `waiting for: ${job.label}${job.cancellable ? ' (Cancel it in the progress bar)' : ''}`;
}
