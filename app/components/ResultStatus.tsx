import { useMemo } from 'react';
import { useStore, type AppState } from '../store';
import type { AnalysisResult } from '../store/results';
import { pairStaleParts, setStaleParts, staleParts, staleText, type PairRun, type SetRun, type StaleNames, type StalePart } from '../lib/stale';
import { windowApplied } from '../actions/window';
import { setLines } from '../actions/probe';
import { reloadedSince } from '../lib/model_identity';
import { AnalyseButton } from './AnalyseButton';
import { useWaitingFor } from './useWaitingFor';
import { useChatTurn } from './useExperimentRequest';

/** The model ready now; null while none is (loading, or the last load failed). */
const readyModel = (s: AppState) => (s.modelStatus === 'ready' ? s.modelLabel : null);
/** Its identity (model · weight storage · backend, lib/model_identity.ts); null while none is ready. */
const readyIdentity = (s: AppState) => (s.modelStatus === 'ready' ? s.modelIdentity : null);

/** What changed since the analysis on display (empty: it answers the experiment as edited). */
export function useStaleParts(r: AnalysisResult | null): StalePart[] {
  const model = useStore(readyModel);
  const identity = useStore(readyIdentity);
  const prompt = useStore((s) => s.prompt);
  const turn = useChatTurn();
  const good = useStore((s) => s.good);
  const bad = useStore((s) => s.bad);
  const interventions = useStore((s) => s.interventions);
  return useMemo(() => (r ? staleParts(r, { model, identity, prompt, ...turn, good, bad, interventions }) : []), [r, model, identity, prompt, turn, good, bad, interventions]);
}

/**
 * What changed since a run on the Patching view's prompt pair (a patching grid, the decision-point
 * report): the load, the pair or its chat turn, the futures, and the interventions of its window.
 */
export function usePairStaleParts(r: PairRun | null): StalePart[] {
  const model = useStore(readyModel);
  const identity = useStore(readyIdentity);
  const pair = useStore((s) => s.patchingSettings);
  const turn = useChatTurn();
  const good = useStore((s) => s.good);
  const bad = useStore((s) => s.bad);
  const interventions = useStore((s) => s.interventions);
  const chosen = useStore((s) => s.windowSettings.interventionId);
  return useMemo(() => (r ? pairStaleParts(r, {
    model, identity, clean: pair.clean, corrupt: pair.corrupt, ...turn, good, bad,
    windowSteering: r.windowSteering ? windowApplied(interventions, chosen) : [],
  }) : []), [r, model, identity, pair, turn, good, bad, interventions, chosen]);
}

/** What changed since a run over the Probes view's labelled set (the probes): the load, a prompt of the set, or the chat turn it rendered with. */
export function useSetStaleParts(r: SetRun | null): StalePart[] {
  const model = useStore(readyModel);
  const identity = useStore(readyIdentity);
  const positive = useStore((s) => s.probeSettings.positive);
  const negative = useStore((s) => s.probeSettings.negative);
  const turn = useChatTurn();
  return useMemo(() => (r ? setStaleParts(r, { model, identity, positive: setLines(positive), negative: setLines(negative), ...turn }) : []), [r, model, identity, positive, negative, turn]);
}

/** A prompt as a label: quoted, the first 60 characters. */
export function promptLabel(prompt: string): string {
  const one = prompt.replace(/\s+/g, ' ').trim();
  return `“${one.length > 60 ? `${one.slice(0, 59)}…` : one}”`;
}

/**
 * A line above a result that no longer answers the experiment: "from the previous model (<name>)"
 * once another model is loaded or a load failed; "stale — computed with <model · storage · backend>"
 * (with the button) when the same model was loaded again with other weights or on another backend
 * (`computedWith`, lib/model_identity.ts); and "stale — press Analyse" when the prompt, futures or
 * interventions changed since the analysis, naming the prompt it was computed for (`computedFor`)
 * when the prompt is what changed.
 * @param noun what the result is ("analysis", "generation"); rerun the button that recomputes it
 *   (default: Analyse, which queues while a job runs); names the view's own words for a part
 *   ("the prompt pair").
 */
export function ResultStatus({ model, computedWith, stale = [], testId, computedFor, noun = 'analysis', rerun, names }: {
  model: string; computedWith?: string; stale?: readonly StalePart[]; testId: string; computedFor?: string; noun?: string;
  rerun?: { label: string; run: () => void }; names?: StaleNames;
}) {
  const current = useStore(readyModel);
  const identity = useStore(readyIdentity);
  const busy = useStore((s) => s.job !== null);
  const waiting = useWaitingFor();
  const previous = current !== model;
  const reloaded = computedWith !== undefined && reloadedSince(computedWith, model, { label: current, identity });
  const changed = staleText(stale, names);
  if (!previous && !changed && !reloaded) return null;
  const parts = reloaded && !stale.includes('load') ? ['load', ...stale] : stale;
  const forPrompt = computedFor !== undefined && stale.includes('prompt') ? <> (computed for the prompt <span data-testid={`${testId}-prompt`}>{promptLabel(computedFor)}</span>)</> : null;
  const button = rerun
    ? <button type="button" className="small" data-testid={`${testId}-rerun`} title={waiting} disabled={busy} onClick={rerun.run}>{rerun.label}</button>
    : <AnalyseButton small testId={`${testId}-analyse`} />;
  const load = reloaded ? <span data-testid={`${testId}-load`}>computed with {computedWith} ({identity} is loaded now){changed ? ', and ' : ''}</span> : null;
  return (
    <p className="stale-note" role="status" data-testid={testId} data-stale={parts.join(' ')} data-previous-model={previous ? model : undefined}>
      {previous && <span data-testid={`${testId}-model`}>From the previous model ({model}){current ? `; ${current} is loaded now` : '; no model is loaded now'}. </span>}
      {(changed || reloaded) && (current
        ? <><strong>Stale</strong> — {load}{changed && <>{changed} since this {noun}{forPrompt}</>}: press {rerun?.label ?? 'Analyse'}.{' '}{button}</>
        : <><strong>Stale</strong> — {changed} since this {noun}{forPrompt}.</>)}
    </p>
  );
}

/** Laid over a figure whose result is stale (the figure dims it: `.figure.stale`); `action` recomputes it (default: press Analyse). */
export function StaleOverlay({ testId, action = 'press Analyse' }: { testId: string; action?: string }) {
  const ready = useStore((s) => s.modelStatus === 'ready');
  return <div className="stale-overlay" data-testid={testId} aria-hidden="true">{ready ? `Stale — ${action}` : 'Stale'}</div>;
}
