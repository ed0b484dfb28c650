import { useEffect, useRef, useState } from 'react';
import { useStore } from '../store';
import type { Job, JobKind } from '../store/ui';
import type { LoadProgress } from '../../workers/protocol';
import { cancelRunning, dropQueued } from '../actions/job';
import { bytes } from '../lib/format';
import { duration, nextEta, type EtaState } from '../lib/time_left';

/** What a job's steps count, where it counts them. */
const STEP_UNITS: Partial<Record<JobKind, string>> = { sweep: 'forward passes', forks: 'continuations', batch: 'prompts', branch: 'tokens', patching: 'patched runs', report: 'stages' };

/** What a load is doing, by its stage (a trial read "Loading stories260K ready" while the load went on). */
const LOAD_STAGES: Record<LoadProgress['stage'], string> = {
  config: 'reading the config', weights: 'weights', upload: 'uploading the weights', tokenizer: 'tokenizer',
  kernels: 'compiling GPU kernels', ready: 'weights and tokenizer loaded · starting the engine',
};

/** The running job: what it is, how far it got (bytes while loading, tokens while generating, steps of a sweep or a vector), Cancel where possible, and what is queued behind it. */
export function Progress() {
  const job = useStore((s) => s.job);
  const load = useStore((s) => s.loadProgress);
  const gen = useStore((s) => s.gen);
  const steps = useStore((s) => s.jobSteps);
  const queued = useStore((s) => s.queued);
  const [now, setNow] = useState(() => performance.now());
  // the time left of this job: where its pace is measured from, and what was shown last (lib/time_left.ts)
  const eta = useRef<{ job: Job | null; state: EtaState }>({ job: null, state: { base: null, shown: null } });
  useEffect(() => {
    if (!job) return;
    const t = setInterval(() => setNow(performance.now()), 200);
    return () => clearInterval(t);
  }, [job]);
  // It sits at the foot of the side column (styles.css .side-column), so a job starting or ending moves nothing in the views.
  if (!job) return null;
  let detail = '';
  let fraction: number | null = null;
  if (job.kind === 'load' && load) {
    detail = LOAD_STAGES[load.stage];
    if (load.loaded !== undefined) {
      detail += load.total ? ` · ${bytes(load.loaded)} of ${bytes(load.total)}` : ` · ${bytes(load.loaded)}`;
      if (load.total) fraction = load.loaded / load.total;
    }
    if (load.bytesPerSecond) detail += ` · ${bytes(load.bytesPerSecond)}/s`;
    if (load.etaSeconds !== undefined && Number.isFinite(load.etaSeconds)) detail += ` · ${Math.ceil(load.etaSeconds)} s left`;
  } else if (job.kind === 'generate' && gen) {
    const run = gen.steered && !gen.steered.final ? gen.steered : gen;
    detail = `${run.events.length} of ${gen.maxNewTokens} tokens`;
    fraction = run.events.length / Math.max(1, gen.maxNewTokens);
  }
  const seconds = Math.max(0, (now - job.startedAt) / 1000);
  if (!(job.kind === 'load' && load) && !(job.kind === 'generate' && gen) && steps) {
    detail = `${steps.done} of ${steps.total} ${STEP_UNITS[job.kind] ?? 'texts read'}${steps.note ? ` · ${steps.note}` : ''}`;
    const work = steps.work ?? steps;
    fraction = work.done / Math.max(1, work.total);
    // at the job's own pace after its first steps, once measured, counting down between estimates (lib/time_left.ts)
    if (eta.current.job !== job) eta.current = { job, state: { base: null, shown: null } };
    eta.current.state = nextEta(eta.current.state, seconds, steps);
    const shown = eta.current.state.shown;
    if (shown) detail += ` · ${duration(shown.seconds)} left`;
  }
  const waiting = `Other actions wait for it (their buttons are disabled${job.kind === 'load' ? '; one model load at a time' : ''})${job.kind === 'load' ? '' : '; Analyse queues behind it'}.`;
  return (
    <div className="progress" role="status" data-testid="progress" data-job={job.kind}>
      <span className="spinner" aria-hidden="true" />
      <strong>{job.label}</strong>
      {detail && <span className="detail" data-testid="progress-detail">{detail}</span>}
      {fraction === null ? <progress aria-label={job.label} /> : <progress aria-label={job.label} value={fraction} max={1} />}
      <span className="muted">{seconds.toFixed(1)} s</span>
      {job.cancellable && <button type="button" data-testid="cancel-job" onClick={cancelRunning}>Cancel</button>}
      <span className="muted waiting" data-testid="progress-waiting">{waiting}</span>
      {queued && (
        <span className="queued" data-testid="queued">
          Queued: {queued.label} — runs when this ends, on the experiment as edited then.{' '}
          <button type="button" className="small" data-testid="drop-queued" onClick={dropQueued}>Unqueue</button>
        </span>
      )}
    </div>
  );
}
