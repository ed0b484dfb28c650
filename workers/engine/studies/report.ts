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
 *   r ≥ 0.5 at some position, and those positions (Heimersheim & Nanda arXiv 2404.15255) — from
 *   block 1 on: row 0 is the embeddings, which differ only at the tokens that differ, and patching
 *   one there puts the clean prompt's token itself into the corrupted run (r ≈ 1 by construction,
 *   an artefact of the corruption, not a finding about the model). The report names that row apart
 *   (causal.trivial).
 * - changeable: the point of no return of the intervention window (the last start step k that still
 *   flips the outcome), when an intervention is given.
 * Over a prompt set each prompt's lens curve is multiplied by its final sign (margin toward its own
 * answer) and curves are averaged; the headline row is the rule on the mean curve, with a
 * percentile-bootstrap interval over prompts (analysis/bootstrap.ts); the same for the recovery curve,
 * the window's outcome per step (toward each prompt's unsteered outcome) and the probe's held-out
 * accuracy per row (over the labelled examples). Over one prompt it says so.
 * Futures that open with the same tokens (a chat template's think block, a tool call's opening) are
 * measured after that shared prefix, teacher-forced as part of each prompt: every study it runs
 * resolves its futures at the decision point (Engine.decisionPoint, decision_point.ts).
 */
import type { Engine } from '../engine';
import type { FutureInput, PromptInput } from '../prompt';
import { chatTurn } from '../prompt';
import type { Intervention } from '../model/intervention';
import { bootstrapMean, bootstrapStatistic, type BootstrapOptions } from '../analysis/bootstrap';
import { patchingGrid, type PatchingResult } from './patching';
import { probeLayers, type ProbeOptions, type ProbePosition } from './probe';
import { interventionWindow, pointOfNoReturn, type WindowScore } from './window';
import type { SharedPrefix } from '../decision_point';
import type { Progress } from '../progress';

/** A prompt pair of the report: the clean prompt, and its corruption for patching (null: lens only). */
export interface ReportPrompt { clean: string; corrupt: string | null }

/** A labelled prompt set (io/prompt_set.ts): the probe's two classes, and the prompts of the intervals. */
export interface ReportLabelledSet {
  positive: readonly string[];
  negative: readonly string[];
  /** Class names [negative, positive]. */
  classes?: [string, string];
  /** Token the probe reads (default the last). */
  position?: ProbePosition;
}

/** The changeable panel's intervention window (studies/window.ts), run on every prompt. */
export interface ReportWindow {
  /** The intervention(s) switched on from step k, resolved for one prompt (its token length and N). */
  interventions: (p: PromptInput & { nPrompt: number }) => Promise<Intervention[]> | Intervention[];
  /** N: new tokens per continuation. */
  maxNewTokens: number;
  /** Last start step K (default N − 1). */
  kMax?: number;
  /** Default: the mean margin over all N steps. */
  score?: WindowScore;
}

export interface ReportRequest {
  /** The prompt the report is about (its patching grid is shown). */
  clean: string;
  corrupt: string;
  /** More prompt pairs: with them the report gives bootstrap intervals over all of them. */
  set?: readonly ReportPrompt[];
  /**
   * A labelled set: the probe of the visible panel runs on it, and its prompts join `set`, each
   * paired for patching with the prompt of the other class at the same index (labelledPairs).
   */
  labelled?: ReportLabelledSet;
  /** Probe settings (folds, seed, λ), as in studies/probe.ts. */
  probe?: ProbeOptions;
  /** The intervention window of the changeable panel (absent: not computed). */
  window?: ReportWindow;
  chatTemplate?: boolean;
  /** With the chat template: the system prompt and tools of every prompt of the report (an agent's decision point: tool-call futures name a tool). */
  system?: string;
  tools?: Record<string, unknown>[];
  /** With the chat template: the template's enable_thinking for every prompt (PromptInput.enableThinking). */
  enableThinking?: boolean;
  good: FutureInput;
  bad: FutureInput;
  /** |Δ| (nats) the lens margin must reach to count as visible (default 0.1). */
  threshold?: number;
  bootstrap?: BootstrapOptions;
}

export const CAUSAL_RECOVERY = 0.5;

/**
 * The first block the causal rule reads: blocks.0.hook_resid_pre is the token embedding (plus the
 * position's, for learned positions), equal in both runs wherever the tokens agree (r = 0 there) and
 * the clean token itself where they differ (r ≈ 1 by construction), so it answers nothing.
 */
export const FIRST_CAUSAL_BLOCK = 1;

/** Positions where the clean and corrupted prompts hold different tokens (equal token lengths). */
export function differingPositions(cleanIds: readonly number[], corruptIds: readonly number[]): number[] {
  return cleanIds.flatMap((id, t) => (id !== corruptIds[t] ? [t] : []));
}

/**
 * The causal rule on a curve of max_t r per block [n_layers]: the earliest block from
 * FIRST_CAUSAL_BLOCK on whose value reaches `at` (CAUSAL_RECOVERY); null if none.
 */
export function firstCausalBlock(maxRecovery: readonly number[], at = CAUSAL_RECOVERY): number | null {
  for (let l = FIRST_CAUSAL_BLOCK; l < maxRecovery.length; l++) if (maxRecovery[l] >= at) return l;
  return null;
}

/** One prompt's intervention window: outcome per start step k and without the intervention. */
export interface PromptWindow {
  outcome: number[];
  unsteered: number;
  pointOfNoReturn: number | null;
}

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
  /** The intervention window on this prompt (null: no window asked, or it could not run here). */
  window: PromptWindow | null;
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
    /** The causal rule's block (FIRST_CAUSAL_BLOCK on), and the main pair's positions with r ≥ 0.5 there. */
    layer: number | null;
    positions: number[];
    /**
     * Row 0 of the main pair, left out of the rule: the positions whose tokens differ (the only ones
     * a patch of the embeddings changes) and the largest r among them (≈ 1 by construction).
     */
    trivial: { positions: number[]; recovery: number };
    /** Mean over prompts of max_t r per block [n_layers] (row 0 included, as measured). */
    curve: number[];
    band: [number[], number[]] | null;
    interval: [number, number] | null;
    /** Prompts of the set left out of patching (no corruption, or of another token length). */
    skipped: number;
  };
  /**
   * Linear probes on the labelled set (studies/probe.ts), on the lens's row axis (0 = embeddings,
   * l + 1 = after block l); null without a labelled set. Band and interval: percentile bootstrap
   * over the examples of their held-out predictions (the folds' fits are not redone).
   */
  probe: {
    firstLayer95: number;
    /** Held-out accuracy per row [n_layers + 1], its band, and the shuffled-label control. */
    accuracy: number[];
    band: [number[], number[]];
    interval: [number, number] | null;
    controlAccuracy: number[];
    auroc: number[];
    classes: [string, string];
    nPositive: number;
    nNegative: number;
    folds: number;
  } | null;
  /**
   * The intervention window (studies/window.ts); null without one. One prompt: its outcome per
   * start step k as the window computes it. A set: the mean over prompts of outcome × sign(unsteered
   * outcome) (toward each prompt's own unsteered outcome, so a flip is < 0), with a band per k and a
   * bootstrap interval of the point of no return.
   */
  changeable: {
    pointOfNoReturn: number | null;
    ks: number[];
    outcome: number[];
    /** The unsteered outcome (one prompt), or the mean |unsteered outcome| (a set). */
    unsteered: number;
    band: [number[], number[]] | null;
    interval: [number, number] | null;
    score: WindowScore;
    maxNewTokens: number;
    /** Prompts of the set whose window could not run (intervention does not fit) or whose unsteered outcome is 0. */
    skipped: number;
  } | null;
  /** The main prompt pair's resid_pre denoising grid (the causal panel's heatmap). */
  patching: PatchingResult;
  /**
   * The main prompt's futures' shared prefix, teacher-forced after each prompt so every panel reads the
   * decision point where the futures first differ (decision_point.ts); null when they share none.
   */
  sharedPrefix?: SharedPrefix | null;
  prompts: PromptNumbers[];
}

export interface ReportProgress extends Progress { stage: string }

/**
 * Earliest index i such that every value from i on is > 0 and the value at i is ≥ threshold
 * (the smallest index at the threshold within the trailing run of positive values); null if none.
 */
export function firstStable(aligned: readonly number[], threshold: number): number | null {
  let first: number | null = null;
  for (let i = aligned.length - 1; i >= 0 && aligned[i] > 0; i--) if (aligned[i] >= threshold) first = i;
  return first;
}

/** First row whose value reaches 95 % of the best row's (the probe's rule, studies/probe.ts). */
export function firstAt95(xs: readonly number[]): number {
  const best = Math.max(...xs);
  return xs.findIndex((x) => x >= 0.95 * best);
}

/**
 * The report's prompt pairs of a labelled set: every prompt, paired for patching with the prompt of
 * the other class at the same index (positive i ↔ negative i: in public/probes/he_she.json that is
 * the same sentence with the name swapped); a prompt without a partner is lens only. Pairs of
 * different token lengths are skipped by the report (counted in causal.skipped).
 */
export function labelledPairs(set: ReportLabelledSet): ReportPrompt[] {
  return [
    ...set.positive.map((clean, i) => ({ clean, corrupt: set.negative[i] ?? null })),
    ...set.negative.map((clean, i) => ({ clean, corrupt: set.positive[i] ?? null })),
  ];
}

/**
 * Builds the report.
 * @param onProgress per prompt and stage (lens, patching, window), and once for the probes.
 * @param signal checked between prompts and inside each patching grid, window and probe.
 * @throws Error for a bad prompt or future, a main prompt pair of different token lengths, an
 *   intervention that does not fit the main prompt, or a labelled set the probe refuses (fewer
 *   than 2 prompts in a class, a position outside a prompt).
 */
export async function decisionReport(engine: Engine, req: ReportRequest, onProgress?: (p: ReportProgress) => void, signal?: AbortSignal): Promise<ReportResult> {
  const L = engine.spec.nLayers;
  const threshold = req.threshold ?? 0.1;
  if (!(threshold >= 0)) throw new Error(`threshold ${threshold}: give |Δ| in nats, ≥ 0`);
  const turn = chatTurn(req);
  const prompts: ReportPrompt[] = [{ clean: req.clean, corrupt: req.corrupt }, ...(req.set ?? []), ...(req.labelled ? labelledPairs(req.labelled) : [])];
  const win = req.window;
  const stages = win ? 3 : 2;
  const total = prompts.length * stages + (req.labelled ? 1 : 0);
  let done = 0;
  const numbers: PromptNumbers[] = [];
  let main: PatchingResult | null = null;
  let skipped = 0, windowSkipped = 0;
  let windowMeta: { ks: number[]; score: WindowScore; maxNewTokens: number } | null = null;
  let shared: SharedPrefix | null = null;
  for (const [i, p] of prompts.entries()) {
    signal?.throwIfAborted();
    const input: PromptInput = { prompt: p.clean, ...turn };
    const a = await engine.analyse({ ...input, good: req.good, bad: req.bad });
    if (i === 0) shared = a.sharedPrefix;
    onProgress?.({ done: ++done, total, stage: `lens ${i + 1}/${prompts.length}` });
    const T = a.ids.length;
    const lensLast = Array.from({ length: L + 1 }, (_, l) => a.lensMargin[l * T + T - 1]);
    const finalSign: 1 | -1 = lensLast[L] >= 0 ? 1 : -1;
    const visibleLayer = firstStable(lensLast.map((x) => x * finalSign), threshold);
    const visibleToken = firstStable(Array.from(a.finalMargin, (x) => x * finalSign), threshold);
    let maxRecovery: number[] | null = null, causalLayer: number | null = null, causalPositions: number[] = [];
    if (p.corrupt) {
      try {
        const g = await patchingGrid(engine, { clean: p.clean, corrupt: p.corrupt, ...turn, good: req.good, bad: req.bad, hook: 'resid_pre' }, undefined, signal);
        if (i === 0) main = g;
        maxRecovery = Array.from({ length: L }, (_, l) => Math.max(...g.recovery.subarray(l * g.nCols, (l + 1) * g.nCols)));
        causalLayer = firstCausalBlock(maxRecovery);
        if (causalLayer !== null) causalPositions = Array.from(g.recovery.subarray(causalLayer * g.nCols, (causalLayer + 1) * g.nCols)).flatMap((r, t) => (r >= CAUSAL_RECOVERY ? [t] : []));
      } catch (e) {
        if (i === 0 || signal?.aborted) throw e;
        skipped++; // a set prompt whose pair cannot be patched (lengths differ, equal margins): lens only
      }
    } else if (i > 0) {
      skipped++;
    }
    onProgress?.({ done: ++done, total, stage: `patching ${i + 1}/${prompts.length}` });
    let window: PromptWindow | null = null;
    if (win) {
      try {
        // resolved for the run the window makes: the prompt at its decision point, T tokens
        const at = a.sharedPrefix ? { ...input, forcedIds: a.sharedPrefix.ids } : input;
        const interventions = await win.interventions({ ...at, nPrompt: T });
        const w = await interventionWindow(engine, { ...input, good: req.good, bad: req.bad, interventions, maxNewTokens: win.maxNewTokens, kMax: win.kMax, score: win.score }, undefined, signal);
        window = { outcome: w.outcome, unsteered: w.unsteered.outcome, pointOfNoReturn: w.pointOfNoReturn };
        windowMeta ??= { ks: w.ks, score: w.score, maxNewTokens: w.maxNewTokens };
      } catch (e) {
        if (i === 0 || signal?.aborted) throw e;
        windowSkipped++; // an intervention that does not fit this prompt (positions, context): no window here
      }
      onProgress?.({ done: ++done, total, stage: `window ${i + 1}/${prompts.length}` });
    }
    numbers.push({ clean: p.clean, corrupt: p.corrupt, lensLast, finalSign, visibleLayer, visibleToken, maxRecovery, causalLayer, causalPositions, window });
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

  let probe: ReportResult['probe'] = null;
  if (req.labelled) {
    signal?.throwIfAborted();
    const ls = req.labelled;
    const pr = await probeLayers(engine, { ...req.probe, positive: ls.positive, negative: ls.negative, classes: ls.classes, position: ls.position, ...chatTurn(req) }, undefined, signal);
    onProgress?.({ done: ++done, total, stage: 'probes' });
    // Per example, 1 where its held-out prediction is right, per row: the curves the bootstrap resamples.
    const correct = Array.from({ length: ls.positive.length + ls.negative.length }, (_, i) => {
      const y = i < ls.positive.length ? 1 : 0;
      return pr.heldOut.map((s) => ((s[i] > 0 ? 1 : 0) === y ? 1 : 0));
    });
    probe = {
      firstLayer95: pr.firstLayer95, accuracy: pr.accuracy, band: band(correct),
      interval: bootstrapStatistic(correct, firstAt95, opts).interval,
      controlAccuracy: pr.controlAccuracy, auroc: pr.auroc, classes: pr.classes, nPositive: pr.nPositive, nNegative: pr.nNegative, folds: pr.folds,
    };
  }

  let changeable: ReportResult['changeable'] = null;
  if (win && windowMeta) {
    const { ks } = windowMeta;
    if (!set) {
      const w = m.window!;
      changeable = { ...windowMeta, pointOfNoReturn: w.pointOfNoReturn, outcome: w.outcome, unsteered: w.unsteered, band: null, interval: null, skipped: 0 };
    } else {
      // Toward each prompt's own unsteered outcome: positive = not flipped, negative = flipped.
      const ws = numbers.flatMap((n) => (n.window && n.window.unsteered !== 0 ? [n.window] : []));
      const curves = ws.map((w) => w.outcome.map((o) => o * Math.sign(w.unsteered)));
      const unsteered = ws.reduce((acc, w) => acc + Math.abs(w.unsteered), 0) / ws.length;
      const outcome = meanCurve(curves);
      changeable = {
        ...windowMeta, outcome, unsteered, pointOfNoReturn: pointOfNoReturn(ks, outcome, unsteered),
        band: band(curves), interval: bootstrapStatistic(curves, (c) => pointOfNoReturn(ks, c, 1), opts).interval,
        skipped: windowSkipped + numbers.filter((n) => n.window?.unsteered === 0).length,
      };
    }
  }

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
      layer: recov.length > 1 ? firstCausalBlock(causalCurve) : m.causalLayer,
      positions: m.causalPositions,
      trivial: (() => {
        const positions = differingPositions(g.cleanIds, g.corruptIds);
        return { positions, recovery: positions.length ? Math.max(...positions.map((t) => g.recovery[t])) : 0 };
      })(),
      curve: causalCurve,
      band: recov.length > 1 ? band(recov) : null,
      interval: recov.length > 1 ? bootstrapStatistic(recov, (c) => firstCausalBlock(c), opts).interval : null,
      skipped,
    },
    probe,
    changeable,
    patching: g,
    sharedPrefix: shared,
    prompts: numbers,
  };
}
