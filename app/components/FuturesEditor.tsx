import { useEffect } from 'react';
import { useStore } from '../store';
import type { FutureDraft } from '../store/experiment';
import type { ResolvedFuture } from '../../workers/protocol';
import { visibleToken } from '../lib/format';
import { futureKey } from '../lib/futures';
import { errorPlace, futureError } from '../lib/input_errors';
import { resolveFutures } from '../actions/analyse';

/** The tokens a future resolved to; dimmed and marked while they are for an earlier text or prompt. */
function Resolved({ f, stale, testId }: { f: ResolvedFuture; stale: boolean; testId: string }) {
  return (
    <span className={`resolved${stale ? ' stale' : ''}`} data-testid={testId} data-first-ids={f.firstIds.join(' ')} data-stale={stale ? 'true' : 'false'}
      title={stale ? 'Tokens of the text before your last edit; updating…' : 'The tokens this future reads as after the prompt'}>
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

/** The tool a tool-call future's JSON names, or '' while it names none. */
function calledTool(value: string): string {
  try {
    const v = JSON.parse(value) as { name?: unknown };
    return typeof v?.name === 'string' ? v.name : '';
  } catch {
    return '';
  }
}

/** A tool-call future's JSON value → its arguments ({} while it holds none or no JSON). */
function callArguments(value: string): Record<string, unknown> {
  try {
    const a = (JSON.parse(value) as { arguments?: unknown })?.arguments;
    return a && typeof a === 'object' && !Array.isArray(a) ? (a as Record<string, unknown>) : {};
  } catch {
    return {};
  }
}

/**
 * Picks the called tool from the experiment's tools and fills its arguments: one field per property
 * of the tool's parameters (JSON-schema "properties"; a string property takes the text as is, any
 * other the JSON typed). The future's value stays the call's JSON, editable in the field too.
 */
function ToolPicker({ which, draft, set }: { which: 'good' | 'bad'; draft: FutureDraft; set: (patch: Partial<FutureDraft>) => void }) {
  const tools = useStore((s) => s.tools);
  const name = calledTool(draft.value);
  const args = callArguments(draft.value);
  const write = (tool: string, a: Record<string, unknown>) => set({ value: JSON.stringify({ name: tool, arguments: a }) });
  const spec = tools.find((t) => t.function.name === name);
  const props = Object.entries(((spec?.function.parameters as { properties?: Record<string, { type?: unknown }> } | undefined)?.properties) ?? {});
  const setArg = (k: string, type: unknown, text: string) => {
    let v: unknown = text;
    if (type !== 'string') {
      try { v = JSON.parse(text); } catch { v = text; }
    }
    const next = { ...args };
    if (text === '') delete next[k];
    else next[k] = v;
    write(name, next);
  };
  return (
    <div className="tool-pick">
      <select aria-label={`${which} tool`} data-testid={`${which}-tool`} value={name} onChange={(e) => write(e.target.value, args)}>
        <option value="" disabled>{tools.length ? 'tool…' : 'no tools in this experiment'}</option>
        {tools.map((t) => <option key={t.function.name} value={t.function.name}>{t.function.name}</option>)}
      </select>
      {props.map(([k, p]) => (
        <label key={k} className="tool-arg">
          {k}{' '}
          <input data-testid={`${which}-arg-${k}`} spellCheck={false} value={args[k] === undefined ? '' : typeof args[k] === 'string' ? (args[k] as string) : JSON.stringify(args[k])} onChange={(e) => setArg(k, p?.type, e.target.value)} />
        </label>
      ))}
    </div>
  );
}

function FutureRow({ which, title }: { which: 'good' | 'bad'; title: string }) {
  const draft = useStore((s) => s[which]);
  const setFuture = useStore((s) => s.setFuture);
  const chips = useStore((s) => s.futureChips[which]);
  const key = useStore((s) => futureKey(s, s[which]));
  const bannerWhy = useStore((s) => s.failure?.why ?? null);
  const set = (patch: Partial<FutureDraft>) => setFuture(which, { ...draft, ...patch });
  const stale = chips?.key !== key;
  // Its own error, said once: under the field, or only in the banner once Analyse failed with it (the field is outlined then).
  const error = chips && 'error' in chips && !stale ? futureError(chips.error) : null;
  const place = errorPlace(error, bannerWhy);
  return (
    <div className={`future future-${which}`}>
      <label htmlFor={`future-${which}`}>{title}</label>
      <input
        id={`future-${which}`}
        data-testid={`${which}-future`}
        value={draft.value}
        onChange={(e) => set({ value: e.target.value })}
        spellCheck={false}
        placeholder={draft.mode === 'text' ? ' Tom| Tommy' : draft.mode === 'ids' ? '274 287 | 317' : '{"name": "read_file", "arguments": {"path": "notes.txt"}}'}
        aria-invalid={error ? true : undefined}
        className={place === 'banner' ? 'invalid' : undefined}
        title={place === 'banner' ? error ?? undefined : undefined}
      />
      <select aria-label={`${title} written as`} data-testid={`${which}-mode`} value={draft.mode} onChange={(e) => set({ mode: e.target.value as FutureDraft['mode'] })}>
        <option value="text">text</option>
        <option value="ids">token ids</option>
        <option value="tool">tool call</option>
      </select>
      {draft.mode === 'tool' && <ToolPicker which={which} draft={draft} set={set} />}
      {chips && 'resolved' in chips && <Resolved f={chips.resolved} stale={stale} testId={`${which}-resolved`} />}
      {place === 'note' && <span className="resolved note" data-testid={`${which}-unresolved`}>{error}</span>}
    </div>
  );
}

/** The two competing futures, their tokens shown as they are typed. Text: "|" separates alternatives (a token set); ids: integers, "|" between alternatives. */
export function FuturesEditor() {
  const prompt = useStore((s) => s.prompt);
  const chatTemplate = useStore((s) => s.chatTemplate);
  const system = useStore((s) => s.system);
  const tools = useStore((s) => s.tools);
  const enableThinking = useStore((s) => s.enableThinking);
  const good = useStore((s) => s.good);
  const bad = useStore((s) => s.bad);
  const info = useStore((s) => s.info);
  useEffect(() => {
    const t = setTimeout(() => void resolveFutures(), 250);
    return () => clearTimeout(t);
  }, [prompt, chatTemplate, system, tools, enableThinking, good, bad, info]);
  return (
    <fieldset className="futures">
      <legend>Futures <span className="muted">Δ = log p(good) − log p(bad)</span></legend>
      <FutureRow which="good" title="Good" />
      <FutureRow which="bad" title="Bad" />
      <p className="hint">Text is tokenized after the prompt (a leading space matters); "|" separates alternatives. A tool call is the tokens the chat template writes for it.</p>
    </fieldset>
  );
}
