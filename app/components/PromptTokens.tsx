import { useMemo } from 'react';
import { useStore } from '../store';
import { appliedInterventions } from '../lib/specs';
import { promptMarks } from '../lib/steered';
import { TokenStrip } from './TokenStrip';
import { PREFIX_TITLE } from '../lib/decision_point_tokens';

/**
 * The experiment panel's prompt tokens: the strip with the position under the pointer highlighted,
 * the tokens the enabled interventions steer marked, and the selection to steer. Its own component
 * so that hovering a view (the focus position) or a token selection re-renders this strip only,
 * not the whole workbench. After an analysis whose futures share a prefix, the prefix's tokens end
 * the strip, marked as teacher-forced (store promptTokens.prefix): the margins are read after them.
 * A prompt longer than the model's context keeps its strip (trials saw it vanish with the error): the tokens that fit, and how many more lie past the context.
 */
export function PromptTokens() {
  const tokens = useStore((s) => s.promptTokens);
  const focus = useStore((s) => s.focusPosition);
  const interventions = useStore((s) => s.interventions);
  const selection = useStore((s) => s.tokenSelection);
  const setTokenSelection = useStore((s) => s.setTokenSelection);
  const context = useStore((s) => s.info?.contextLength ?? Infinity);
  const shown = useMemo(() => (tokens && tokens.ids.length > context ? { ids: tokens.ids.slice(0, context), tokens: tokens.tokens.slice(0, context), prefix: Math.max(0, (tokens.prefix ?? 0) - (tokens.ids.length - context)) } : tokens), [tokens, context]);
  const marks = useMemo(() => (shown ? promptMarks(appliedInterventions(interventions), shown.ids.length) : []), [shown, interventions]);
  if (!tokens || !shown) return null;
  const past = tokens.ids.length - shown.ids.length;
  return (
    <div>
      <h3 className="strip-title">Prompt tokens <span className="muted">({tokens.ids.length}{tokens.prefix ? `, the last ${tokens.prefix} the ${PREFIX_TITLE}` : ''}; drag or shift-click to select tokens to steer)</span></h3>
      <TokenStrip tokens={shown.tokens} ids={shown.ids} prefix={shown.prefix} highlight={focus} marks={marks} selection={selection} onSelect={setTokenSelection} />
      {past > 0 && (
        <p className="note strip-past" data-testid="tokens-past-context">
          … and {past} more token{past === 1 ? '' : 's'} past the model&apos;s {context}-token context: shorten the prompt by at least {past} token{past === 1 ? '' : 's'} to run it.
        </p>
      )}
    </div>
  );
}
