import { useStore } from '../store';
import type { AppliedIntervention } from '../store/results';
import { doseText } from '../lib/steered';
import { steeringName, steeringNow } from '../lib/stale';

/**
 * "· steered by #1, #3" after a view's title when its result was computed under interventions
 * (nothing else). The numbers are their places in the list now; one edited, switched off or removed
 * since is named so. The tooltip gives each as it was applied.
 */
export function SteeredTag({ steering, testId }: { steering: readonly AppliedIntervention[]; testId: string }) {
  const list = useStore((s) => s.interventions);
  if (!steering.length) return null;
  const now = steeringNow(steering, list);
  const detail = steering.map(({ draft }, i) => `${steeringName(now[i])}: ${draft.type} ${doseText(draft)} at ${draft.hook}`).join('\n');
  return <span className="steered-tag" data-testid={testId} title={detail}> · steered by {now.map((x) => steeringName(x)).join(', ')}</span>;
}
