import type { AppliedIntervention } from '../store/results';
import { doseText } from '../lib/steered';

/** "· steered by #1, #3" after a view's title when its result was computed under interventions (nothing else). */
export function SteeredTag({ steering, testId }: { steering: readonly AppliedIntervention[]; testId: string }) {
  if (!steering.length) return null;
  const detail = steering.map(({ n, draft }) => `#${n}: ${draft.type} ${doseText(draft)} at ${draft.hook}`).join('\n');
  return <span className="steered-tag" data-testid={testId} title={detail}> · steered by {steering.map((x) => `#${x.n}`).join(', ')}</span>;
}
