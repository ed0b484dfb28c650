import { useMemo } from 'react';
import { useStore, type AppState } from '../store';
import type { AnalysisResult } from '../store/results';
import { staleParts, staleText, type StalePart } from '../lib/stale';
import { AnalyseButton } from './AnalyseButton';
import { useWaitingFor } from './useWaitingFor';

/** The model ready now; null while none is (loading, or the last load failed). */
const readyModel = (s: AppState) => (s.modelStatus === 'ready' ? s.modelLabel : null);

/** What changed since the analysis on display (empty: it answers the experiment as edited). */
export function useStaleParts(r: AnalysisResult | null): StalePart[] {
  const model = useStore(readyModel);
  const prompt = useStore((s) => s.prompt);
  const chatTemplate = useStore((s) => s.chatTemplate);
  const good = useStore((s) => s.good);
  const bad = useStore((s) => s.bad);
  const interventions = useStore((s) => s.interventions);
  return useMemo(() => (r ? staleParts(r, { model, prompt, chatTemplate, good, bad, interventions }) : []), [r, model, prompt, chatTemplate, good, bad, interventions]);
}

/** A prompt as a label: quoted, the first 60 characters. */
export function promptLabel(prompt: string): string {
  const one = prompt.replace(/\s+/g, ' ').trim();
  return `“${one.length > 60 ? `${one.slice(0, 59)}…` : one}”`;
}

/**
 * A line above a result that no longer answers the experiment: "from the previous model (<name>)"
 * once another model is loaded or a load failed, and "stale — press Analyse" (with the button)
 * when the prompt, futures or interventions changed since the analysis, naming the prompt it was
 * computed for (`computedFor`) when the prompt is what changed.
 * @param noun what the result is ("analysis", "generation"); rerun the button that recomputes it
 *   (default: Analyse, which queues while a job runs).
 */
export function ResultStatus({ model, stale = [], testId, computedFor, noun = 'analysis', rerun }: {
  model: string; stale?: readonly StalePart[]; testId: string; computedFor?: string; noun?: string;
  rerun?: { label: string; run: () => void };
}) {
  const current = useStore(readyModel);
  const busy = useStore((s) => s.job !== null);
  const waiting = useWaitingFor();
  const previous = current !== model;
  const changed = staleText(stale);
  if (!previous && !changed) return null;
  const forPrompt = computedFor !== undefined && stale.includes('prompt') ? <> (computed for the prompt <span data-testid={`${testId}-prompt`}>{promptLabel(computedFor)}</span>)</> : null;
  const button = rerun
    ? <button type="button" className="small" data-testid={`${testId}-rerun`} title={waiting} disabled={busy} onClick={rerun.run}>{rerun.label}</button>
    : <AnalyseButton small testId={`${testId}-analyse`} />;
  return (
    <p className="stale-note" role="status" data-testid={testId} data-stale={stale.join(' ')} data-previous-model={previous ? model : undefined}>
      {previous && <span data-testid={`${testId}-model`}>From the previous model ({model}){current ? `; ${current} is loaded now` : '; no model is loaded now'}. </span>}
      {changed && (current
        ? <><strong>Stale</strong> — {changed} since this {noun}{forPrompt}: press {rerun?.label ?? 'Analyse'}.{' '}{button}</>
        : <><strong>Stale</strong> — {changed} since this {noun}{forPrompt}.</>)}
    </p>
  );
}

/** Laid over a figure whose result is stale (the figure dims it: `.figure.stale`). */
export function StaleOverlay({ testId }: { testId: string }) {
  const ready = useStore((s) => s.modelStatus === 'ready');
  return <div className="stale-overlay" data-testid={testId} aria-hidden="true">{ready ? 'Stale — press Analyse' : 'Stale'}</div>;
}
