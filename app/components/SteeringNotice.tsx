import { useStore } from '../store';
import { appliedInterventions } from '../lib/specs';
import { interventionText } from '../lib/steered';

/**
 * Above a multi-prompt run (the batch study): a visible notice that it runs under the enabled
 * interventions, naming each, and where to switch them off. Nothing when none is enabled.
 */
export function SteeringNotice({ testId }: { testId: string }) {
  const list = useStore((s) => s.interventions);
  const vectors = useStore((s) => s.vectors);
  const applied = appliedInterventions(list);
  if (!applied.length) return null;
  const one = applied.length === 1;
  return (
    <p className="steering-notice" data-testid={testId}>
      <strong>Runs under {applied.length} intervention{one ? '' : 's'}:</strong> {applied.map((a) => interventionText(a, vectors)).join('; ')}
      {` — switch ${one ? 'it' : 'them'} off in the Interventions list (left) to run the model unsteered.`}
    </p>
  );
}
