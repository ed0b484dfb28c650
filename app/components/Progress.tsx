import { useEffect, useState } from 'react';
import { useStore } from '../store';
import { cancelRunning } from '../actions/job';
import { bytes } from '../lib/format';

/** The running job: what it is, how far it got (bytes while loading, tokens while generating), and Cancel where possible. */
export function Progress() {
  const job = useStore((s) => s.job);
  const load = useStore((s) => s.loadProgress);
  const gen = useStore((s) => s.gen);
  const [now, setNow] = useState(() => performance.now());
  useEffect(() => {
    if (!job) return;
    const t = setInterval(() => setNow(performance.now()), 200);
    return () => clearInterval(t);
  }, [job]);
  if (!job) return null;
  let detail = '';
  let fraction: number | null = null;
  if (job.kind === 'load' && load) {
    detail = load.stage;
    if (load.loaded !== undefined) {
      detail += load.total ? ` · ${bytes(load.loaded)} of ${bytes(load.total)}` : ` · ${bytes(load.loaded)}`;
      if (load.total) fraction = load.loaded / load.total;
    }
    if (load.bytesPerSecond) detail += ` · ${bytes(load.bytesPerSecond)}/s`;
    if (load.etaSeconds !== undefined && Number.isFinite(load.etaSeconds)) detail += ` · ${Math.ceil(load.etaSeconds)} s left`;
  } else if (job.kind === 'generate' && gen) {
    detail = `${gen.events.length} of ${gen.maxNewTokens} tokens`;
    fraction = gen.events.length / Math.max(1, gen.maxNewTokens);
  }
  const seconds = Math.max(0, (now - job.startedAt) / 1000);
  return (
    <div className="progress" role="status" data-testid="progress" data-job={job.kind}>
      <span className="spinner" aria-hidden="true" />
      <strong>{job.label}</strong>
      {detail && <span data-testid="progress-detail">{detail}</span>}
      {fraction === null ? <progress aria-label={job.label} /> : <progress aria-label={job.label} value={fraction} max={1} />}
      <span className="muted">{seconds.toFixed(1)} s</span>
      {job.cancellable && <button type="button" data-testid="cancel-job" onClick={cancelRunning}>Cancel</button>}
    </div>
  );
}
