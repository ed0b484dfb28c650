import { runStudy } from '../actions/study';
import { useStore } from '../store';
import { useStudy } from '../components/useStudy';
import { SignedBars } from '../components/SignedBars';
import { quotedToken, signed, visibleToken } from '../lib/format';
import { waitingFor } from '../lib/job_rules';
import type { BranchTree, StudyRequest } from '../../workers/protocol';
import { treePrompt, type TreePath } from '../../workers/shared';

type Span = { label: string; start: number; end: number };

/**
 * The prompt's sentences as spans (a span ends after a token holding ".", "!", "?" or a newline; a
 * leading BOS is left out), each labelled by its first words.
 */
export function sentenceSpans(tokens: readonly string[], bos: boolean): Span[] {
  const out: Span[] = [];
  let start = bos ? 1 : 0;
  const close = (end: number) => {
    if (end <= start) return;
    const text = tokens.slice(start, end).join('').trim();
    const words = text.split(/\s+/);
    out.push({ label: `${out.length + 1}: ${words.slice(0, 3).join(' ')}${words.length > 3 ? ' …' : ''}`, start, end });
    start = end;
  };
  tokens.forEach((t, i) => { if (i >= start && /[.!?\n]/.test(t)) close(i + 1); });
  close(tokens.length);
  return out;
}

/**
 * The recursive flow of one fork point's decision (studies/flow.ts with the branch's own tokens as
 * the continuation): the margin between the chosen token and the most likely other one at that
 * position, handed back through the branch's earlier new tokens to the prompt's sentences, on the
 * tree's own prompt as it was rendered (its chat template, system prompt and tools). Runs
 * the `flow` study, the runner's `flow` (unsteered, as the Attribution view).
 */
export function ForkFlow({ tree, path, position }: { tree: BranchTree; path: TreePath; position: number }) {
  const job = useStore((s) => s.job);
  const steered = useStore((s) => s.forkDraw.steered);
  const T = tree.promptIds.length;
  const top = path.top[position];
  const chosen = path.ids[position];
  const alt = top?.ids.find((id) => id !== chosen);
  const bos = /^<.*>$/.test(tree.promptTokens[0] ?? '');
  const req: StudyRequest<'flow'> | undefined = position >= T && alt !== undefined ? {
    ...treePrompt(tree), good: { ids: [[chosen]] }, bad: { ids: [[alt]] },
    spans: sentenceSpans(tree.promptTokens, bos), continuation: path.ids.slice(T, position), faithfulness: false,
  } : undefined;
  const flow = useStudy('flow', req);
  if (!req || !top || alt === undefined) return <p className="hint" data-testid="fork-flow-hint">Pick a new token (not a prompt token) with an alternative to trace its decision back to the prompt.</p>;
  const altToken = top.tokens[top.ids.indexOf(alt)];
  const f = flow.run && flow.stale === null ? flow.run.result : null;
  const topTokens = f ? Array.from(f.attribution, (v, i) => ({ i, v })).sort((a, b) => Math.abs(b.v) - Math.abs(a.v)).slice(0, 5) : [];
  return (
    <div className="figure fork-flow" data-testid="fork-flow">
      <h4>Which prompt sentences carried this choice? <span className="muted">(flow attribution, recursive through the {position - T} new tokens before it)</span></h4>
      <p className="hint">
        Δ = log p({quotedToken(path.tokens[position])}) − log p({quotedToken(altToken)}) at this position, split over the prompt’s tokens: each head’s value-weighted reads projected on Δ,
        layer by layer; the earlier new tokens hand their credit back to the tokens that made them (FlashTrace-style). The same numbers as <code>branchpoint flow --generated {position - T}</code> on a greedy trunk.
        {steered ? ' Read on the model without the interventions.' : ''}
      </p>
      <button type="button" data-testid="fork-flow-run" disabled={!!job} title={waitingFor(job)}
        onClick={() => void runStudy('flow', req, { label: 'Flow back to the prompt', what: 'Could not trace the decision back' })}>Trace back to the prompt</button>
      {f && (
        <>
          <p className="muted" data-testid="fork-flow-caption" data-margin={f.margin} data-bias={f.bias}>
            Δ = <span className="mono">{signed(f.margin, 3)}</span> nats · Σ tokens + constants = {signed(f.frozenMargin, 3)} (frozen norms; constants {signed(f.bias, 3)}) ·
            {' '}{f.hops.length} new tokens handed back · top tokens: {topTokens.map((t) => `${visibleToken(f.tokens[t.i])} ${signed(t.v, 2)}`).join(', ')}
          </p>
          <SignedBars rows={[...(bos ? [{ label: `BOS ${f.tokens[0]}`, value: f.attribution[0], color: '#6e7781' }] : []), ...f.spans.map((s) => ({ label: s.label, value: s.value }))]} width={560} testId="fork-flow-spans" label="flow attribution of the fork's decision per prompt sentence" />
        </>
      )}
    </div>
  );
}
