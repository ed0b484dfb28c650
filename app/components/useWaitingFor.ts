import { useStore } from '../store';
import { waitingFor } from '../lib/job_rules';

/** The tooltip of a button a running job disables: "waiting for: <job>" (lib/job_rules.ts), undefined when none runs. */
export function useWaitingFor(): string | undefined {
  return useStore((s) => waitingFor(s.job));
}
