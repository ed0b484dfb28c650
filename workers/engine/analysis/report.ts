/**
 * The decision-point report (DESIGN.md §3): for a prompt (or a prompt set) and two futures, the
 * three answers side by side, on one layer axis and one step axis.
 *
 * Layers are residual-stream rows l = 0 … n_layers: row 0 the embeddings (= blocks.0.hook_resid_pre),
 * row l the stream after block l − 1 (= blocks.l.hook_resid_pre), row n_layers the final one — the
 * logit lens's rows, so the three panels line up.
 * - visible: the earliest row from which the lens margin at the last prompt position keeps its final
 *   sign, with |Δ| ≥ threshold there (nostalgebraist 2020 logit lens); and the earliest prompt
 *   position from which the final-layer margin keeps that sign with |Δ| ≥ threshold. The probe's
 *   first layer at 95 % of its best accuracy (Alain & Bengio arXiv 1610.01644) when a labelled set is given.
 * - causal: the earliest block l whose hook_resid_pre patch (denoising, final margin) recovers
 *   r ≥ 0.5 at some position, and those positions (Heimersheim & Nanda arXiv 2404.15255).
 * - changeable: the point of no return of the intervention window (the last start step k that still
 *   flips the outcome), when an intervention is given.
 * Over a prompt set each prompt's lens curve is multiplied by its final sign (margin toward its own
 * answer) and curves are averaged; the headline row is the rule on the mean curve, with a
 * percentile-bootstrap interval over prompts (batch/bootstrap.ts). Over one prompt it says so.
 */
import type { Engine } from '../engine';
import type { FutureInput } from '../api';
import { bootstrapMean, bootstrapStatistic, type BootstrapOptions } from '../batch/bootstrap';
import { patchingGrid, type PatchingResult } from './patching';

/** A prompt pair of the report: the clean prompt, and its corruption for patching (null: lens only). */
export interface ReportPrompt { clean: string; corrupt: string | null }

export interface ReportRequest {
  /** The prompt the report is about (its patching grid is shown). */
  clean: string;
  corrupt: string;
  /** More prompts: with them the report gives bootstrap intervals over all of them. */
  set?: readonly ReportPrompt[];
  chatTemplate?: boolean;
  good: FutureInput;
  bad: FutureInput;
  /** |Δ| (nats) the lens margin must reach to count as visible (default 0.1). */
  threshold?: number;
  bootstrap?: BootstrapOptions;
}

export const CAUSAL_RECOVERY = 0.5;

/** One prompt's numbers. */
export interface PromptNumbers {
  clean: string;
  corrupt: string | null;
  /** Lens margin at the last prompt position per row [n_layers + 1]. */
  lensLast: number[];
  /** Sign of the final-layer margin at the last position (+1 favours good). */
  finalSign: 1 | -1;
  visibleLayer: number | null;
  visibleToken: number | null;
  /** max over positions of r per block [n_layers] (null without a corruption). */
  maxRecovery: number[] | null;
  causalLayer: number | null;
  causalPositions: number[];
}

export interface ReportResult {
  nPrompts: number;
  /** "one prompt", or "n prompts" with the interval method. */
  label: string;
  threshold: number;
  causalRecovery: number;
  nLayers: number;
  visible: {
    layer: number | null;
    token: number | null;
    /** Mean lens margin toward the final answer per row [n_layers + 1]. */
    curve: number[];
    band: [number[], number[]] | null;
    interval: [number, number] | null;
  };
  causal: {
    layer: number | null;
    positions: number[];
    /** Mean over prompts of max_t r per block [n_layers]. */
    curve: number[];
    band: [number[], number[]] | null;
    interval: [number, number] | null;
    /** Prompts of the set left out of patching (no corruption, or of another token length). */
    skipped: number;
  };
  /**
   * Probe curve on this layer axis (analysis/probe.ts probeLayers over a labelled set: its rows are
   * already 0 = embeddings, l + 1 = after block l) — null until the probe module is wired in here.
   */
  probe: { firstLayer95: number | null; accuracy: number[]; controlAccuracy: number[] } | null;
  /**
   * The intervention window (analysis/window.ts interventionWindow: outcome per start step k and
   * the point of no return) — null until the window module is wired in here.
   */
  changeable: { pointOfNoReturn: number | null; ks: number[]; outcome: number[] } | null;
  /** The main prompt pair's resid_pre denoising grid (the causal panel's heatmap). */
  patching: PatchingResult;
  prompts: PromptNumbers[];
}

export interface ReportProgress { done: number; total: number; stage: string }

/**
 * Earliest index i such that every value from i on is > 0 and the value at i is ≥ threshold
 * (the smallest index at the threshold within the trailing run of positive values); null if none.
 */
export function firstStable(aligned: readonly number[], threshold: number): number | null {
  let first: number | null = null;
  for (let i = aligned.length - 1; i >= 0 && aligned[i] > 0; i--) if (aligned[i] >= threshold) first = i;
  return first;
}

/** Earliest index whose value reaches `at`; null if none. */
function firstAtLeast(xs: readonly number[], at: number): number | null {
  const i = xs.findIndex((x) => x >= at);
  return i < 0 ? null : i;
}

/**
 * Builds the report.
 * @param onProgress per prompt and stage.
 * @param signal checked between prompts and inside each patching grid.
 * @throws Error for a bad prompt or future, or a main prompt pair of different token lengths.
 */
export async function decisionReport(engine: Engine, req: ReportRequest, onProgress?: (p: ReportProgress) => void, signal?: AbortSignal): Promise<ReportResult> {
  const L = engine.spec.nLayers;
  const threshold = req.threshold ?? 0.1;
  if (!(threshold >= 0)) throw new Error(`threshold ${threshold}: give |Δ| in nats, ≥ 0`);
  const prompts: ReportPrompt[] = [{ clean: req.clean, corrupt: req.corrupt }, ...(req.set ?? [])];
  const total = prompts.length * 2;
  let done = 0;
  const numbers: PromptNumbers[] = [];
  let main: PatchingResult | null = null;
  let skipped = 0;
  for (const [i, p] of prompts.entries()) {
    signal?.throwIfAborted();
    const a = await engine.analyse({ prompt: p.clean, chatTemplate: req.chatTemplate, good: req.good, bad: req.bad });
    onProgress?.({ done: ++done, total, stage: `lens ${i + 1}/${prompts.length}` });
    const T = a.ids.length;
    const lensLast = Array.from({ length: L + 1 }, (_, l) => a.lensMargin[l * T + T - 1]);
    const finalSign: 1 | -1 = lensLast[L] >= 0 ? 1 : -1;
    const visibleLayer = firstStable(lensLast.map((x) => x * finalSign), threshold);
    const visibleToken = firstStable(Array.from(a.finalMargin, (x) => x * finalSign), threshold);
    let maxRecovery: number[] | null = null, causalLayer: number | null = null, causalPositions: number[] = [];
    if (p.corrupt) {
      try {
        const g = await patchingGrid(engine, { clean: p.clean, corrupt: p.corrupt, chatTemplate: req.chatTemplate, good: req.good, bad: req.bad, hook: 'resid_pre' }, undefined, signal);
        if (i === 0) main = g;
        maxRecovery = Array.from({ length: L }, (_, l) => Math.max(...g.recovery.subarray(l * g.nCols, (l + 1) * g.nCols)));
        causalLayer = firstAtLeast(maxRecovery, CAUSAL_RECOVERY);
        if (causalLayer !== null) causalPositions = Array.from(g.recovery.subarray(causalLayer * g.nCols, (causalLayer + 1) * g.nCols)).flatMap((r, t) => (r >= CAUSAL_RECOVERY ? [t] : []));
      } catch (e) {
        if (i === 0 || signal?.aborted) throw e;
        skipped++; // a set prompt whose pair cannot be patched (lengths differ, equal margins): lens only
      }
    } else if (i > 0) {
      skipped++;
    }
    onProgress?.({ done: ++done, total, stage: `patching ${i + 1}/${prompts.length}` });
    numbers.push({ clean: p.clean, corrupt: p.corrupt, lensLast, finalSign, visibleLayer, visibleToken, maxRecovery, causalLayer, causalPositions });
  }
  const g = main!;
  const set = numbers.length > 1;
  const opts = req.bootstrap ?? {};
  const aligned = numbers.map((n) => n.lensLast.map((x) => x * n.finalSign));
  const recov = numbers.flatMap((n) => (n.maxRecovery ? [n.maxRecovery] : []));
  const meanCurve = (curves: number[][]) => curves[0].map((_, j) => curves.reduce((acc, c) => acc + c[j], 0) / curves.length);
  // Per-row mean with its percentile interval (the band), and the interval of the rule on resampled means.
  const band = (curves: number[][]): [number[], number[]] => {
    const rows = curves[0].map((_, j) => bootstrapMean(curves.map((c) => c[j]), { ...opts, seed: (opts.seed ?? 0) + j }));
    return [rows.map((x) => x.lo), rows.map((x) => x.hi)];
  };
  const visibleCurve = meanCurve(aligned), causalCurve = meanCurve(recov);
  const m = numbers[0];
  return {
    nPrompts: numbers.length,
    label: set ? `${numbers.length} prompts: means with 95 % percentile-bootstrap intervals over prompts (${opts.resamples ?? 2000} resamples)` : 'one prompt: no interval (give a prompt set for bootstrap intervals)',
    threshold, causalRecovery: CAUSAL_RECOVERY, nLayers: L,
    visible: {
      layer: set ? firstStable(visibleCurve, threshold) : m.visibleLayer,
      token: m.visibleToken,
      curve: visibleCurve,
      band: set ? band(aligned) : null,
      interval: set ? bootstrapStatistic(aligned, (c) => firstStable(c, threshold), opts).interval : null,
    },
    causal: {
      layer: recov.length > 1 ? firstAtLeast(causalCurve, CAUSAL_RECOVERY) : m.causalLayer,
      positions: m.causalPositions,
      curve: causalCurve,
      band: recov.length > 1 ? band(recov) : null,
      interval: recov.length > 1 ? bootstrapStatistic(recov, (c) => firstAtLeast(c, CAUSAL_RECOVERY), opts).interval : null,
      skipped,
    },
    probe: null,
    changeable: null,
    patching: g,
    prompts: numbers,
  };
}
