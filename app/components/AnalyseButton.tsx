import { useStore } from '../store';
import { analyse } from '../actions/analyse';
import { analyseAction } from '../lib/job_rules';

/**
 * Analyse: runs now, or — while another job runs — queues the analysis to run when that job ends
 * (label "Analyse (queued)"; the progress bar says so), so a click after an edit is never dropped.
 * Disabled only while no model is ready (none loaded, or one loading).
 */
export function AnalyseButton({ testId = 'analyse', small = false }: { testId?: string; small?: boolean }) {
  const job = useStore((s) => s.job);
  const ready = useStore((s) => s.modelStatus === 'ready');
  const queued = useStore((s) => s.queued !== null);
  const action = analyseAction(job, ready);
  const title = action === 'queue' ? `Queues the analysis: it runs when “${job!.label}” ends, on the experiment as edited then` : undefined;
  return (
    <button type="button" className={small ? 'small' : 'primary'} data-testid={testId} data-queued={queued || undefined} disabled={action === 'unavailable'} title={title} onClick={() => void analyse()}>
      {queued ? 'Analyse (queued)' : 'Analyse'}
    </button>
  );
}
