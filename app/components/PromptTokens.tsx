import { useMemo } from 'react';
import { useStore } from '../store';
import { appliedInterventions } from '../lib/specs';
import { promptMarks } from '../lib/steered';
import { TokenStrip } from './TokenStrip';

/**
 * The experiment panel's prompt tokens: the strip with the position under the pointer highlighted,
 * the tokens the enabled interventions steer marked, and the selection to steer. Its own component
 * so that hovering a view (the focus position) or a token selection re-renders this strip only,
 * not the whole workbench.
 */
export function PromptTokens() {
  const tokens = useStore((s) => s.promptTokens);
  const focus = useStore((s) => s.focusPosition);
  const interventions = useStore((s) => s.interventions);
  const selection = useStore((s) => s.tokenSelection);
  const setTokenSelection = useStore((s) => s.setTokenSelection);
  const marks = useMemo(() => (tokens ? promptMarks(appliedInterventions(interventions), tokens.ids.length) : []), [tokens, interventions]);
  if (!tokens) return null;
  return (
    <div>
      <h3 className="strip-title">Prompt tokens <span className="muted">({tokens.ids.length}; drag or shift-click to select tokens to steer)</span></h3>
      <TokenStrip tokens={tokens.tokens} ids={tokens.ids} highlight={focus} marks={marks} selection={selection} onSelect={setTokenSelection} />
    </div>
  );
}
