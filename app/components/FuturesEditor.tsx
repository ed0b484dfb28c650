import { useStore } from '../store';
import type { FutureDraft } from '../store/experiment';
import type { ResolvedFuture } from '../../workers/protocol';
import { visibleToken } from '../lib/format';

function Resolved({ f, testId }: { f: ResolvedFuture; testId: string }) {
  return (
    <span className="resolved" data-testid={testId} data-first-ids={f.firstIds.join(' ')}>
      {f.sequences.map((seq, i) => (
        <span key={i} className="alt">
          {seq.map((id, j) => (
            <span key={j} className="tok" title={`id ${id}`}>{visibleToken(f.tokens[i][j])}<sub>{id}</sub></span>
          ))}
        </span>
      ))}
    </span>
  );
}

function FutureRow({ which, title }: { which: 'good' | 'bad'; title: string }) {
  const draft = useStore((s) => s[which]);
  const setFuture = useStore((s) => s.setFuture);
  const resolved = useStore((s) => s.result?.analysis[which]);
  const set = (patch: Partial<FutureDraft>) => setFuture(which, { ...draft, ...patch });
  return (
    <div className={`future future-${which}`}>
      <label htmlFor={`future-${which}`}>{title}</label>
      <input
        id={`future-${which}`}
        data-testid={`${which}-future`}
        value={draft.value}
        onChange={(e) => set({ value: e.target.value })}
        spellCheck={false}
        placeholder={draft.mode === 'text' ? ' Tom| Tommy' : '274 287 | 317'}
      />
      <select aria-label={`${title} written as`} data-testid={`${which}-mode`} value={draft.mode} onChange={(e) => set({ mode: e.target.value as FutureDraft['mode'] })}>
        <option value="text">text</option>
        <option value="ids">token ids</option>
      </select>
      {resolved && <Resolved f={resolved} testId={`${which}-resolved`} />}
    </div>
  );
}

/** The two competing futures. Text: "|" separates alternatives (a token set); ids: integers, "|" between alternatives. */
export function FuturesEditor() {
  return (
    <fieldset className="futures">
      <legend>Futures <span className="muted">Δ = log p(good) − log p(bad)</span></legend>
      <FutureRow which="good" title="Good" />
      <FutureRow which="bad" title="Bad" />
      <p className="hint">Text is tokenized after the prompt (a leading space matters); "|" separates alternatives.</p>
    </fieldset>
  );
}
