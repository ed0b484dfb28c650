import { useMemo } from 'react';
import { useStore } from '../store';
import { decisionPointTokens, type RunTokens } from '../lib/decision_point_tokens';
import { futureKey } from '../lib/futures';

/**
 * The positions a run at the decision point has (lib/decision_point_tokens.ts): the prompt's tokens
 * and the futures' shared prefix after them, as far as the resolved future chips show it before
 * Analyse runs; null before the prompt is tokenized. The intervention editor's default position (the
 * last token) is their last, whatever the strip shows; the strip itself shows the store's tokens.
 */
export function useDecisionPointTokens(): RunTokens | null {
  const shown = useStore((s) => s.promptTokens);
  const chips = useStore((s) => s.futureChips);
  const goodKey = useStore((s) => futureKey(s, s.good));
  const badKey = useStore((s) => futureKey(s, s.bad));
  return useMemo(() => (shown ? decisionPointTokens(shown, chips, { good: goodKey, bad: badKey }) : null), [shown, chips, goodKey, badKey]);
}
