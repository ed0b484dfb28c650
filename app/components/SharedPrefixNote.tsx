import type { SharedPrefix } from '../../workers/protocol';
import { quotedToken } from '../lib/format';

/**
 * The one line a result shows when its futures open with the same tokens and the engine moved the
 * decision point after them (workers/engine/decision_point.ts: SharedPrefix.note, e.g. "decision
 * point after the shared prefix `<think>…`, 9 tokens"), with the first tokens compared there
 * (SharedPrefix.differ), and that positions count the prefix: an intervention at the last token acts
 * at the decision point (studies/resolve_interventions.ts atDecisionPoint). The same text in every view.
 * @param reads what reads that position ("every panel reads" in the report).
 * @param tokens false where one line stands for several prompts whose first tokens differ (Batch).
 */
export function SharedPrefixNote({ shared, reads = 'the margins read', tokens = true, testId }: { shared?: SharedPrefix | null; reads?: string; tokens?: boolean; testId: string }) {
  if (!shared) return null;
  return (
    <p className="muted" data-testid={testId}>
      {shared.note}: {reads} the first tokens where the futures differ{tokens ? `, ${quotedToken(shared.differ[0])} vs ${quotedToken(shared.differ[1])}` : null}; positions count the prefix: the last token, and an intervention placed there, is the decision point
    </p>
  );
}
