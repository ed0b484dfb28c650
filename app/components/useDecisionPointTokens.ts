import { useMemo } from 'react';
import { useStore } from '../store';
import { decisionPointTokens, type RunTokens } from '../lib/decision_point_tokens';
import { futureKey } from '../lib/futures';

/**
 * The token strip's positions as a run at the decision point has them (lib/decision_point_tokens.ts):
 * the prompt's tokens and the futures' shared prefix after them, marked; null before the prompt is
 * tokenized. The strip draws these and the intervention editor's "last token" is their last.
 */
export function useDecisionPointTokens(): RunTokens | null {
  const shown = useStore((s) => s.promptTokens);
  const chips = useStore((s) => s.futureChips);
  const goodKey = useStore((s) => futureKey(s, s.good));
  const badKey = useStore((s) => futureKey(s, s.bad));
  return useMemo(() => (shown ? decisionPointTokens(shown, chips, { good: goodKey, bad: badKey }) : null), [shown, chips, goodKey, badKey]);
}
