import { useStore } from '../store';
import { interventionLabel } from '../lib/specs';
import type { WindowSettings } from '../store/window';

const SCORES: { kind: WindowSettings['score']; title: string; arg: string; hint: string }[] = [
  { kind: 'mean', title: 'mean margin over the last M steps', arg: 'M', hint: 'all N' },
  { kind: 'margin', title: 'margin at step S', arg: 'S', hint: 'a step 0 … N − 1' },
  { kind: 'contains', title: 'the text contains…', arg: 'text', hint: '+1 when it appears, −1 when not' },
];

/**
 * The intervention window's setup — which intervention, N new tokens, the last start step K and
 * the outcome score — bound to the window settings, so the Window view and the report's changeable
 * panel edit the same setup. Test ids are `${prefix}-intervention`, `-n`, `-k`, `-score`, `-score-arg`.
 */
export function WindowSetupFields({ prefix }: { prefix: string }) {
  const set = useStore((s) => s.windowSettings);
  const update = useStore((s) => s.setWindowSettings);
  const list = useStore((s) => s.interventions);
  const score = SCORES.find((x) => x.kind === set.score)!;
  return (
    <>
      <label>Intervention
        <select data-testid={`${prefix}-intervention`} value={set.interventionId ?? ''} onChange={(e) => update({ interventionId: e.target.value === '' ? null : Number(e.target.value) })}>
          <option value="">every enabled one</option>
          {list.map((d, i) => <option key={d.id} value={d.id}>{interventionLabel(i + 1)}: {d.type} at {d.hook}</option>)}
        </select>
      </label>
      <label title="N: new tokens of each continuation">New tokens N
        <input type="number" min={1} max={256} className="short" data-testid={`${prefix}-n`} value={set.maxNewTokens} onChange={(e) => update({ maxNewTokens: Number(e.target.value) })} />
      </label>
      <label title="Last start step K (empty = N − 1)">Last start K
        <input className="short" data-testid={`${prefix}-k`} value={set.kMax} placeholder="N − 1" onChange={(e) => update({ kMax: e.target.value })} />
      </label>
      <label>Outcome
        <select data-testid={`${prefix}-score`} value={set.score} onChange={(e) => update({ score: e.target.value as WindowSettings['score'], scoreArg: '' })}>
          {SCORES.map((x) => <option key={x.kind} value={x.kind}>{x.title}</option>)}
        </select>
      </label>
      <label title={score.hint}>{score.arg}
        <input className={set.score === 'contains' ? undefined : 'short'} data-testid={`${prefix}-score-arg`} value={set.scoreArg} placeholder={score.hint} onChange={(e) => update({ scoreArg: e.target.value })} spellCheck={false} />
      </label>
      {list.length === 0 && <span className="muted">Place an intervention first (Interventions list, left).</span>}
    </>
  );
}
