/**
 * Intervention window (DESIGN.md §3 "Intervention window": is there still time to intervene?).
 * For a generation of N new tokens, regenerate with the intervention switched on from step k
 * onward, for k = 0..K, score each continuation's outcome, and find the point of no return: the
 * last k whose outcome still has the opposite sign of the unsteered outcome (SafeThink-style early
 * correction: how late can a steering vector still change where the text goes?).
 *
 * Steps follow DESIGN.md §2: step 0 is the prompt pass (it draws new token 0), step s the pass
 * that reads new token s − 1 (and draws token s). Variant k is unsteered before step k, so its
 * tokens 0..k−1 are the unsteered generation's and so are its KV-cache rows before the first
 * position the intervention touches: the unsteered sequence is the reference of a PrefixCache
 * (model/kv_prefix.ts), snapshotted once, and each variant restores it and computes only its
 * steered steps (Σ(N − k) token passes instead of (K + 1)·(n_prompt + N)). k ≥ N never switches
 * the intervention on: that variant is the unsteered generation.
 *
 * Every variant generates exactly N tokens (EOS does not stop it), so every step has a margin.
 * Sampling (temperature > 0) replays the unsteered generation's random draws for steps < k.
 */
import type { Engine } from '../engine';
import type { FutureInput, PromptInput } from '../prompt';
import type { Intervention } from '../model/intervention';
import { firstTouchedPosition, forwardSpan, stepOfPosition } from '../model/span';
import { PrefixCache } from '../model/kv_prefix';
import { assertHook } from '../model/hooks';
import { logSoftmaxCpu } from '../ops/logits.cpu';
import { rowMargin } from '../analysis/margin';
import { sampleToken, seededRandom } from '../analysis/sampling';
import type { Progress } from '../progress';
import type { SharedPrefix } from '../decision_point';

/** How a continuation is scored. */
export type WindowScore =
  /** Δ = log p(good) − log p(bad) (first-token sets) in the distribution new token `step` is drawn from. */
  | { kind: 'margin'; step: number }
  /** Mean of Δ over the last `last` steps (N − last … N − 1). */
  | { kind: 'mean'; last: number }
  /** +1 when the continuation's text contains `text`, −1 when it does not. */
  | { kind: 'contains'; text: string };

export interface WindowRequest extends PromptInput {
  good: FutureInput;
  bad: FutureInput;
  /** The intervention(s) switched on from step k (each within its own step window, if it has one). */
  interventions: readonly Intervention[];
  /** N: new tokens per continuation. */
  maxNewTokens: number;
  /** Last start step K (default N − 1: every step that runs); k = 0..K. */
  kMax?: number;
  /** Default: the mean margin over all N steps. */
  score?: WindowScore;
  /** 0 = greedy (default). */
  temperature?: number;
  topK?: number;
  seed?: number;
}

/** One continuation: its new tokens and the margin at each step. */
export interface WindowContinuation {
  ids: number[];
  tokens: string[];
  text: string;
  /** Δ at each step [N]. */
  margins: number[];
  outcome: number;
}

export interface WindowResult {
  /** The futures' shared prefix, teacher-forced after the prompt (decision_point.ts), or null: the generations continue after it. */
  sharedPrefix?: SharedPrefix | null;
  /** Start steps k = 0..K. */
  ks: number[];
  /** Outcome of the continuation steered from step k [K + 1]. */
  outcome: number[];
  /** The continuations, one per k (same order as ks). */
  variants: WindowContinuation[];
  /** The generation without the intervention (k > N). */
  unsteered: WindowContinuation;
  /**
   * The last k whose outcome has the opposite sign of the unsteered outcome (steering from k still
   * flips it); null when no k flips it, or the unsteered outcome is 0.
   */
  pointOfNoReturn: number | null;
  score: WindowScore;
  promptIds: number[];
  maxNewTokens: number;
}

/** The intervention restricted to steps ≥ k (intersected with its own step window). */
function fromStep(iv: Intervention, k: number): Intervention {
  return { ...iv, steps: { start: Math.max(k, iv.steps?.start ?? 0), end: iv.steps?.end ?? Number.POSITIVE_INFINITY } };
}

/** The outcome of a continuation under a score. */
function scoreOf(score: WindowScore, margins: readonly number[], text: string): number {
  switch (score.kind) {
    case 'margin': return margins[score.step];
    case 'mean': {
      let s = 0;
      for (let i = margins.length - score.last; i < margins.length; i++) s += margins[i];
      return s / score.last;
    }
    case 'contains': return text.includes(score.text) ? 1 : -1;
  }
}

/** The point of no return: the last k whose outcome's sign is opposite to the unsteered one. */
export function pointOfNoReturn(ks: readonly number[], outcome: readonly number[], unsteered: number): number | null {
  const s0 = Math.sign(unsteered);
  let last: number | null = null;
  if (s0 === 0) return null;
  ks.forEach((k, i) => { if (Math.sign(outcome[i]) === -s0 && (last === null || k > last)) last = k; });
  return last;
}

/** @throws Error for a score that does not fit N steps. */
function checkScore(score: WindowScore, N: number): void {
  if (score.kind === 'margin' && !(Number.isInteger(score.step) && score.step >= 0 && score.step < N)) throw new Error(`score step ${score.step} is outside the generation's steps 0..${N - 1}`);
  if (score.kind === 'mean' && !(Number.isInteger(score.last) && score.last >= 1 && score.last <= N)) throw new Error(`score over the last ${score.last} steps: give 1..${N} (the generation has ${N} steps)`);
  if (score.kind === 'contains' && score.text === '') throw new Error('score "contains" needs the text to look for');
}

/**
 * Runs the window as one job: the unsteered generation, then the variants k = K … 0.
 * @param onProgress after each token pass, done/total counted in token passes (the reference
 *   prefill of the unsteered sequence counts as one).
 * @param signal checked before each token pass; when aborted the job throws signal.reason.
 * @throws Error for N < 1, K outside 0..N−1, a bad score, prompt, future or intervention hook, or
 *   a prompt plus N tokens longer than the context.
 */
export async function interventionWindow(engine: Engine, req: WindowRequest, onProgress?: (p: Progress) => void, signal?: AbortSignal): Promise<WindowResult> {
  const N = req.maxNewTokens;
  if (!Number.isInteger(N) || N < 1) throw new Error(`max new tokens must be a positive integer (got ${N})`);
  const K = req.kMax ?? N - 1;
  if (!Number.isInteger(K) || K < 0 || K > N - 1) throw new Error(`the last start step K = ${K} must be in 0..${N - 1} (a start at step ≥ N steers nothing: that is the unsteered run)`);
  const score = req.score ?? { kind: 'mean', last: N };
  checkScore(score, N);
  if (req.interventions.length === 0) throw new Error('the intervention window needs an intervention to switch on');
  for (const iv of req.interventions) assertHook(engine.spec, iv.hook);
  const { promptIds, good, bad, input, sharedPrefix } = engine.decisionPoint(req, req.good, req.bad);
  const T = promptIds.length;
  const model = engine.model;
  if (T + N > model.contextLength) throw new Error(`the prompt (${T} tokens) plus ${N} new tokens do not fit the context of ${model.contextLength} tokens`);
  const temperature = req.temperature ?? 0, topK = req.topK ?? 0, seed = req.seed ?? 0;
  const total = N + 1 + Array.from({ length: K + 1 }, (_, k) => N - k).reduce((a, b) => a + b, 0);
  let done = 0;
  const tick = () => onProgress?.({ done: ++done, total });

  const g = await engine.generate({ ...req, ...input, good: { ids: good.sequences }, bad: { ids: bad.sequences }, interventions: [], maxNewTokens: N, stopAtEos: false, temperature, topK, seed }, tick, signal);
  signal?.throwIfAborted();
  const base: WindowContinuation = { ids: g.ids, tokens: g.tokens, text: g.text, margins: g.margins, outcome: scoreOf(score, g.margins, g.text) };
  // The positions the N steps read: the prompt and new tokens 0..N−2.
  const seq = [...promptIds, ...g.ids.slice(0, N - 1)];
  const kv = new PrefixCache(model);
  await kv.reference(seq, { nPrompt: T, logits: 'none' });
  tick();
  const snap = kv.snapshot()!;
  const variants: WindowContinuation[] = new Array(K + 1);
  try {
    for (let k = K; k >= 0; k--) {
      const ivs = req.interventions.map((iv) => fromStep(iv, k));
      const p = Math.min(...ivs.map((iv) => firstTouchedPosition(iv, T, seq.length)));
      if (p === Number.POSITIVE_INFINITY) { // never switched on within N steps
        variants[k] = { ...base };
        continue;
      }
      const s = stepOfPosition(p, T); // the first steered step (k, or later where the intervention's own window starts later)
      const rand = seededRandom(seed);
      if (temperature > 0) for (let i = 0; i < s; i++) rand(); // the draws of the unsteered tokens 0..s−1
      const ids = g.ids.slice(0, s), margins = g.margins.slice(0, s);
      await new Promise((r) => setTimeout(r, 0)); // lets a cancel message in between passes (worker)
      signal?.throwIfAborted();
      kv.restore(snap);
      let lp = (await kv.runFrom(p, s === 0 ? promptIds : seq.slice(0, T + s), { nPrompt: T, interventions: ivs, logits: 'last' })).logits!;
      for (let step = s; ; step++) {
        tick();
        const logProbs = logSoftmaxCpu(lp, lp.length);
        margins.push(rowMargin(logProbs, good.firstIds, bad.firstIds));
        ids.push(sampleToken(logProbs, temperature, topK, rand));
        if (step + 1 >= N) break;
        await new Promise((r) => setTimeout(r, 0));
        signal?.throwIfAborted();
        const all = [...promptIds, ...ids];
        lp = (await forwardSpan(model, all, T + step, T + step + 1, { nPrompt: T, interventions: ivs, logits: 'last' })).logits!;
      }
      const v: WindowContinuation = { ids, tokens: engine.tokenStrings(ids, promptIds), text: engine.continuationText(promptIds, ids), margins, outcome: 0 };
      v.outcome = scoreOf(score, v.margins, v.text);
      variants[k] = v;
    }
  } finally {
    kv.release(snap);
  }
  onProgress?.({ done: total, total });
  const ks = Array.from({ length: K + 1 }, (_, k) => k);
  const outcome = variants.map((v) => v.outcome);
  return { ks, outcome, variants, unsteered: base, pointOfNoReturn: pointOfNoReturn(ks, outcome, base.outcome), score, promptIds, maxNewTokens: N, sharedPrefix };
}
