/**
 * The decision-point report for two models side by side (DESIGN.md §3 "Model comparison": how
 * post-training reshapes a decision): the one report of studies/report.ts built on model A and on
 * model B for the same prompt pair (or prompt set) and futures, and the difference B − A of its three
 * answers — visible layer (residual row), causal layer (block) and point of no return (step).
 *
 * Over a prompt set each model's answers carry the report's own percentile-bootstrap intervals
 * (analysis/bootstrap.ts bootstrapStatistic over prompts), and the difference carries a paired one:
 * each resample draws the same prompts for A and B, applies the report's rule to each model's mean
 * curve and takes B's answer minus A's (Efron & Tibshirani 1993, ch. 13; a resample where either
 * rule is undefined is left out, `defined` says how many were kept). Over one prompt the
 * difference has no interval.
 */
import type { Engine } from '../engine';
import { bootstrapStatistic } from '../analysis/bootstrap';
import { decisionReport, firstCausalBlock, firstStable, type ReportProgress, type ReportRequest, type ReportResult } from './report';
import { pointOfNoReturn } from './window';

/** B − A of one answer of the report. */
export interface ReportDifference {
  /** Model A's and model B's answer (the report's headline; null where the rule finds none). */
  a: number | null;
  b: number | null;
  /** b − a (layers or steps); null when either is null. */
  value: number | null;
  /** Paired percentile-bootstrap interval of B − A over the prompts both models answer; null over one prompt or when never defined. */
  interval: [number, number] | null;
  /** Fraction of resamples where both rules were defined (1 over one prompt with both answers, 0 without). */
  defined: number;
  /** Prompts in the pairing (those where both models have the curve). */
  nPaired: number;
}

/** The two reports and their differences. */
export interface ReportPairResult {
  labelA: string;
  labelB: string;
  a: ReportResult;
  b: ReportResult;
  /** B − A of: the visible layer (residual rows, 0 = embed), the causal layer (blocks, FIRST_CAUSAL_BLOCK on), the point of no return (steps; null without a window). */
  difference: { visibleLayer: ReportDifference; causalLayer: ReportDifference; pointOfNoReturn: ReportDifference | null };
}

/** The request: studies/report.ts ReportRequest, with the window's interventions resolved per model. */
export interface ReportPairRequest extends Omit<ReportRequest, 'window'> {
  /** The window, its interventions resolved for each model (the same specs: a vector built on one model is applied to both). */
  window?: Omit<NonNullable<ReportRequest['window']>, 'interventions'> & {
    interventions: (engine: Engine, p: Parameters<NonNullable<ReportRequest['window']>['interventions']>[0]) => ReturnType<NonNullable<ReportRequest['window']>['interventions']>;
  };
}

/**
 * B − A of one rule over per-prompt curves (null curve: that prompt has none in that model): the
 * headline values given, and the paired bootstrap of rule(mean of B's curves) − rule(mean of A's).
 */
function difference(
  a: number | null, b: number | null, curvesA: readonly (number[] | null)[], curvesB: readonly (number[] | null)[],
  rule: (mean: number[]) => number | null, set: boolean, opts: ReportRequest['bootstrap'],
): ReportDifference {
  const value = a !== null && b !== null ? b - a : null;
  const paired = curvesA.flatMap((ca, i) => (ca && curvesB[i] ? [[...ca, ...curvesB[i]!]] : []));
  const nPaired = paired.length;
  if (!set || nPaired < 2) return { a, b, value, interval: null, defined: value === null ? 0 : 1, nPaired };
  const m = paired[0].length / 2;
  const stat = (mean: number[]) => {
    const ra = rule(mean.slice(0, m)), rb = rule(mean.slice(m));
    return ra === null || rb === null ? null : rb - ra;
  };
  const { interval, defined } = bootstrapStatistic(paired, stat, opts ?? {});
  return { a, b, value, interval, defined, nPaired };
}

/**
 * Builds the decision-point report on A and on B (studies/report.ts decisionReport, the same
 * request) and the differences B − A of visible layer, causal layer and point of no return.
 * @param onProgress done/total over both reports (A's stages first), stages named "A: …" / "B: …".
 * @param signal checked between prompts and inside every grid and window of both reports.
 * @throws Error when the models have different numbers of layers (B − A of a layer index would mean
 *   nothing), and as decisionReport throws for either model.
 */
export async function decisionReportPair(a: Engine, b: Engine, req: ReportPairRequest, onProgress?: (p: ReportProgress) => void, signal?: AbortSignal): Promise<ReportPairResult> {
  if (a.spec.nLayers !== b.spec.nLayers) throw new Error(`the two-model report needs models of the same depth: model A [${a.label}] has ${a.spec.nLayers} layers, model B [${b.label}] ${b.spec.nLayers} (B − A of a layer would compare different rows)`);
  const one = (e: Engine, who: 'A' | 'B', offset: () => number) => {
    const { window: w, ...rest } = req;
    const window = w && { ...w, interventions: (p: Parameters<typeof w.interventions>[1]) => w.interventions(e, p) };
    return decisionReport(e, { ...rest, window }, onProgress && ((p) => onProgress({ done: offset() + p.done, total: 2 * p.total, stage: `${who}: ${p.stage}` })), signal);
  };
  let totalA = 0;
  const ra = await one(a, 'A', () => 0);
  totalA = ra.nPrompts * (req.window ? 3 : 2) + (req.labelled ? 1 : 0);
  const rb = await one(b, 'B', () => totalA);
  const set = ra.nPrompts > 1, opts = req.bootstrap;
  const aligned = (r: ReportResult) => r.prompts.map((p) => p.lensLast.map((x) => x * p.finalSign));
  const recovery = (r: ReportResult) => r.prompts.map((p) => p.maxRecovery);
  const toward = (r: ReportResult) => r.prompts.map((p) => (p.window && p.window.unsteered !== 0 ? p.window.outcome.map((o) => o * Math.sign(p.window!.unsteered)) : null));
  const threshold = ra.threshold;
  const ks = ra.changeable?.ks;
  return {
    labelA: a.label, labelB: b.label, a: ra, b: rb,
    difference: {
      visibleLayer: difference(ra.visible.layer, rb.visible.layer, aligned(ra), aligned(rb), (c) => firstStable(c, threshold), set, opts),
      causalLayer: difference(ra.causal.layer, rb.causal.layer, recovery(ra), recovery(rb), (c) => firstCausalBlock(c), set, opts),
      pointOfNoReturn: ra.changeable && rb.changeable && ks
        ? difference(ra.changeable.pointOfNoReturn, rb.changeable.pointOfNoReturn, toward(ra), toward(rb), (c) => pointOfNoReturn(ks, c, 1), set, opts)
        : null,
    },
  };
}
