/**
 * A probe under an intervention (issue 25, part 3: "is the evaluator still valid on the transformed
 * distribution?"). The linear probes of probe.ts are trained on the unsteered residual stream as
 * always; every prompt is then run again under the intervention and the same probes are read there:
 * - held-out accuracy and AUROC unsteered vs steered: example i is scored, unsteered and steered, by
 *   the probe of its cross-validation fold, which was trained on the other folds' unsteered
 *   activations only (analysis/logistic.ts crossValidate's `also`);
 * - the shift of the probe score: the probe fitted on every unsteered example (fitProbe, a logit
 *   b + w·x in the activations' own units) applied to each example steered and unsteered; the mean
 *   change over the set with a percentile bootstrap interval (analysis/bootstrap.ts);
 * - the shift of the behaviour the probe is meant to measure: the margin Δ = log p(good) − log p(bad)
 *   of the futures' first tokens (token sets: logsumexp, DESIGN.md §3 "Margin") after the whole
 *   prompt, mean change over the set with its interval; optionally whether greedy text of N new
 *   tokens contains the good future's tokens, unsteered vs steered;
 * - per row a flag (analysis/probe_shift.ts) when the score moves and the behaviour does not (the
 *   probe reads the vector) or the behaviour moves and the score does not, each shift measured
 *   against the distance between the classes' means before (threshold τ). A row the intervention
 *   does not reach (every steered activation equal to the unsteered one: a layer before its hook)
 *   gets no flag — it cannot see the intervention, so its silence says nothing about the probe.
 * The unsteered and the steered activations are read at the same token (ProbePosition) of the same
 * full-prompt runs that give the margins.
 */
import type { Engine } from '../engine';
import type { SharedPrefix } from '../decision_point';
import type { FutureInput, PromptInput, ResolvedFuture } from '../prompt';
import { promptWith } from '../prompt';
import type { Intervention } from '../model/intervention';
import type { Progress } from '../progress';
import { auroc } from '../analysis/auroc';
import { bootstrapMean, type MeanInterval } from '../analysis/bootstrap';
import { crossValidate, fitProbe } from '../analysis/logistic';
import { rowMargin } from '../analysis/margin';
import { classGap, DEFAULT_MOVE_THRESHOLD, linearScores, probeFlag, type ProbeFlag } from '../analysis/probe_shift';
import { logSoftmaxCpu } from '../ops/logits.cpu';
import { assertClassesDiffer, probeActivations, probeFolds, readIndex, type ProbeRequest, type ProbeResult } from './probe';

export interface ProbeUnderRequest extends ProbeRequest {
  /** The two futures whose margin is the behaviour the probe is meant to measure. */
  good: FutureInput;
  bad: FutureInput;
  /**
   * The intervention(s) of prompt p's run (resolved per prompt: 'prompt' / 'generated' positions and
   * patch sources depend on it). Called for every prompt before any forward pass.
   */
  interventions: (p: PromptInput) => Promise<Intervention[]> | Intervention[];
  /** Greedy new tokens per prompt and run to look for the good future in (0 or absent: no generation). */
  generate?: number;
  /** τ of the flags (analysis/probe_shift.ts; default 0.25). */
  threshold?: number;
}

/** Whether the good future appears in greedy generated text, per prompt [n] and as a fraction. */
export interface TargetInText {
  /** New tokens generated per prompt and run. */
  newTokens: number;
  unsteered: boolean[];
  steered: boolean[];
  rateUnsteered: number;
  rateSteered: number;
}

/** The probes as probe.ts computes them (unsteered), and the same probes read under the intervention. */
export interface ProbeUnderResult extends ProbeResult {
  /** The futures' shared prefix, teacher-forced after the prompt (decision_point.ts) of the first prompt, or null: the margins are read after it. */
  sharedPrefix?: SharedPrefix | null;
  /** Held-out accuracy and AUROC of each row's fold probes on the steered activations [rows]. */
  accuracySteered: number[];
  aurocSteered: number[];
  /** Held-out decision value of each steered example per row [rows][n] (beside `heldOut`, unsteered). */
  heldOutSteered: Float64Array[];
  /** The probe fitted on every unsteered example, per row: score(x) = bias + weights·x, weights [rows][d]. */
  weights: Float64Array[];
  bias: number[];
  /** Its score of each example unsteered and steered [rows][n] (logits). */
  scoreUnsteered: Float64Array[];
  scoreSteered: Float64Array[];
  /** Mean over the set of score(steered) − score(unsteered) with a 95 % bootstrap interval, per row. */
  scoreShift: MeanInterval[];
  /** mean score of the positive class − of the negative class, unsteered, per row. */
  scoreGap: number[];
  /** Δ of each prompt (positives first) unsteered and steered [n], nats. */
  marginUnsteered: number[];
  marginSteered: number[];
  /** Mean over the set of Δ steered − Δ unsteered with a 95 % bootstrap interval, nats. */
  behaviourShift: MeanInterval;
  /** mean Δ of the positive class − of the negative class, unsteered, nats. */
  marginGap: number;
  /** Per row: whether the intervention reaches it (some steered activation differs from the unsteered one). */
  reached: boolean[];
  /** Per row: 'reads-vector', 'misses-behaviour' or null (analysis/probe_shift.ts); null where the intervention does not reach. */
  flag: ProbeFlag[];
  threshold: number;
  /** With `generate`: the good future in the greedy text. */
  target?: TargetInText;
}

/** Whether one of the future's token sequences occurs contiguously in ids. */
function containsFuture(ids: readonly number[], f: ResolvedFuture): boolean {
  return f.sequences.some((seq) => ids.some((_, i) => i + seq.length <= ids.length && seq.every((t, j) => ids[i + j] === t)));
}

/**
 * Trains the probes on the unsteered runs and reads them under the intervention (module docstring).
 * Two forward passes per prompt (unsteered, steered), plus 2 × `generate` token passes with generation.
 * @param onProgress after each prompt's runs and each row's probes.
 * @param signal checked between forward passes and rows; when aborted it throws signal.reason.
 * @throws Error, before any forward pass, for a set with fewer than 2 prompts per class, two sets of
 *   the same prompts, a bad prompt, position or future, an intervention that does not resolve for a
 *   prompt (named by its label), no intervention at all, a generate count that is not a whole number
 *   in 0 … 4096 or a τ that is negative or not finite; later, as probeActivations for
 *   indistinguishable classes.
 */
export async function probeUnderIntervention(engine: Engine, req: ProbeUnderRequest, onProgress?: (p: Progress) => void, signal?: AbortSignal): Promise<ProbeUnderResult> {
  const L = engine.spec.nLayers, d = engine.spec.dModel;
  const position = req.position ?? 'last';
  const threshold = req.threshold ?? DEFAULT_MOVE_THRESHOLD;
  const N = req.generate ?? 0;
  if (!(Number.isFinite(threshold) && threshold >= 0)) throw new Error(`the move threshold τ must be a finite number ≥ 0 (got ${threshold})`);
  if (!(Number.isInteger(N) && N >= 0 && N <= 4096)) throw new Error(`generate must be a whole number of new tokens in 0 … 4096 (got ${N})`);
  if (Math.min(req.positive.length, req.negative.length) < 2) throw new Error(`a probe needs at least 2 prompts in each set for cross-validation (got ${req.positive.length} positive, ${req.negative.length} negative)`);
  assertClassesDiffer(req.positive, req.negative, req.classes);
  const texts = [...req.positive, ...req.negative];
  const labels = Uint8Array.from(texts, (_, i) => (i < req.positive.length ? 1 : 0));
  const n = texts.length;
  // Everything that can be refused is read before the first forward pass.
  const prompts = texts.map((prompt) => {
    const dp = engine.decisionPoint(promptWith(prompt, req), req.good, req.bad);
    return { p: dp.input, ids: dp.promptIds, t: readIndex(position, dp.promptIds.length, prompt), good: dp.good, bad: dp.bad, sharedPrefix: dp.sharedPrefix };
  });
  const interventions: Intervention[][] = [];
  for (const { p } of prompts) interventions.push(await req.interventions(p));
  if (interventions.every((x) => x.length === 0)) throw new Error('a probe under an intervention needs an intervention: none was given (or none is enabled)');

  const hooks = ['blocks.0.hook_resid_pre', ...Array.from({ length: L }, (_, l) => `blocks.${l}.hook_resid_post`)];
  const rowsU = hooks.map(() => new Float32Array(n * d)), rowsS = hooks.map(() => new Float32Array(n * d));
  const marginUnsteered: number[] = [], marginSteered: number[] = [];
  const readTokens: string[] = [], readPositions: number[] = [];
  const inText: [boolean[], boolean[]] = [[], []];
  const total = n * (N > 0 ? 4 : 2) + hooks.length;
  let done = 0;
  const step = async () => {
    await new Promise((r) => setTimeout(r, 0)); // lets a cancel message in between forwards (worker)
    signal?.throwIfAborted();
  };
  for (let i = 0; i < n; i++) {
    const { p, ids, t, good, bad } = prompts[i];
    for (const [k, ivs] of [[], interventions[i]].entries()) {
      await step();
      const { captured, logits } = await engine.run(ids, { capture: hooks, interventions: ivs, logits: 'last' });
      const rows = k === 0 ? rowsU : rowsS;
      hooks.forEach((h, r) => rows[r].set(captured.get(h)!.subarray(t * d, (t + 1) * d), i * d));
      (k === 0 ? marginUnsteered : marginSteered).push(rowMargin(logSoftmaxCpu(logits, logits.length), good.firstIds, bad.firstIds));
      onProgress?.({ done: ++done, total });
      if (N > 0) {
        await step();
        const gen = await engine.generate({ ...p, good: { ids: good.sequences }, bad: { ids: bad.sequences }, maxNewTokens: N, temperature: 0, interventions: ivs }, undefined, signal);
        inText[k].push(containsFuture(gen.ids, good));
        onProgress?.({ done: ++done, total });
      }
    }
    readPositions.push(t);
    readTokens.push(engine.tokenStrings(ids.slice(0, t + 1))[t]);
  }

  const base = probeActivations(rowsU, labels, d, req, () => {
    signal?.throwIfAborted();
    onProgress?.({ done: ++done, total });
  });
  const { fold } = probeFolds(labels, req);
  const l2 = req.l2 ?? 1;
  const marginShifts = marginSteered.map((m, i) => m - marginUnsteered[i]);
  const behaviourShift = bootstrapMean(marginShifts);
  const marginGap = classGap(marginUnsteered, labels);
  const out: Omit<ProbeUnderResult, keyof ProbeResult | 'behaviourShift' | 'marginGap' | 'marginUnsteered' | 'marginSteered' | 'threshold' | 'target'> = {
    accuracySteered: [], aurocSteered: [], heldOutSteered: [], weights: [], bias: [], scoreUnsteered: [], scoreSteered: [], scoreShift: [], scoreGap: [], reached: [], flag: [],
  };
  for (let r = 0; r < hooks.length; r++) {
    const cv = crossValidate(rowsU[r], labels, n, d, fold, l2, rowsS[r]);
    const held = cv.alsoScores!;
    let right = 0;
    for (let i = 0; i < n; i++) if ((held[i] > 0 ? 1 : 0) === labels[i]) right++;
    out.accuracySteered.push(right / n);
    out.aurocSteered.push(auroc(held, labels));
    out.heldOutSteered.push(held);
    const probe = fitProbe(rowsU[r], labels, n, d, l2);
    const su = linearScores(rowsU[r], n, probe.w, probe.b), ss = linearScores(rowsS[r], n, probe.w, probe.b);
    const shift = bootstrapMean(Array.from(ss, (s, i) => s - su[i]));
    const gap = classGap(su, labels);
    out.weights.push(probe.w);
    out.bias.push(probe.b);
    out.scoreUnsteered.push(su);
    out.scoreSteered.push(ss);
    out.scoreShift.push(shift);
    out.scoreGap.push(gap);
    const reached = rowsS[r].some((x, k) => x !== rowsU[r][k]);
    out.reached.push(reached);
    out.flag.push(reached ? probeFlag({ shift: shift.mean, gap }, { shift: behaviourShift.mean, gap: marginGap }, threshold) : null);
  }
  const rate = (xs: boolean[]) => xs.filter(Boolean).length / xs.length;
  return {
    ...base, hooks, classes: req.classes ?? ['negative', 'positive'],
    nPositive: req.positive.length, nNegative: req.negative.length, position, readTokens, readPositions,
    seed: req.seed ?? 0, l2, sharedPrefix: prompts[0].sharedPrefix,
    ...out, marginUnsteered, marginSteered, behaviourShift, marginGap, threshold,
    ...(N > 0 ? { target: { newTokens: N, unsteered: inText[0], steered: inText[1], rateUnsteered: rate(inText[0]), rateSteered: rate(inText[1]) } } : {}),
  };
}
