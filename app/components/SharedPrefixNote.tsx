import type { ResolvedFuture, SharedPrefix } from '../../workers/protocol';
import { quotedToken } from '../lib/format';

/**
 * The one line a result shows when its futures open with the same tokens and the engine moved the
 * decision point after them (workers/engine/decision_point.ts: SharedPrefix.note, e.g. "decision
 * point after the shared prefix `<think>…`, 9 tokens"), with the first tokens compared there, and
 * that positions count the prefix: an intervention at the last token acts at the decision point
 * (studies/resolve_interventions.ts atDecisionPoint).
 * @param reads what reads that position ("every panel reads" in the report).
 */
export function SharedPrefixNote({ shared, good, bad, reads = 'the margins read', testId }: { shared?: SharedPrefix | null; good?: ResolvedFuture; bad?: ResolvedFuture; reads?: string; testId: string }) {
  if (!shared) return null;
  const first = (f: ResolvedFuture) => quotedToken(f.tokens[0][0]);
  return (
    <p className="muted" data-testid={testId}>
      {shared.note}: {reads} the first tokens where the futures differ{good && bad ? `, ${first(good)} vs ${first(bad)}` : null}; positions count the prefix: the last token, and an intervention placed there, is the decision point
    </p>
  );
}
