/**
 * What follows the prompt: the teacher-forced margin of multi-token futures and generation token by
 * token through the KV cache, with the margin of the two futures at every step (DESIGN.md §2 steps,
 * §3 "Margin curve during generation"). Engine.analyse and Engine.generate call these.
 */
import type { Backend } from './backend/backend';
import type { Generation, GenerateRequest, TokenEvent } from './api';
import type { PromptCodec, ResolvedFuture } from './prompt';
import type { Intervention } from './model/intervention';
import { RunContext } from './model/run_context';
import { forwardSpan } from './model/span';
import { contextMessage, type Transformer } from './model/transformer';
import { chooseNextToken, type NextToken, type NextTokenRule } from './model/next_token';
import { logSumExp } from './analysis/margin';
import { seededRandom } from './analysis/sampling';
import { logSoftmaxCpu } from './ops/logits.cpu';

/** The loaded model a decode runs on (Engine holds one). */
export interface Decoder {
  readonly model: Transformer;
  readonly backend: Backend;
  readonly prompts: PromptCodec;
  /**
   * @throws NonFiniteError naming the hook, layer and position where the first NaN/Inf appeared
   *   (model/span.ts) when `values` are not all finite.
   */
  assertFinite(values: ArrayLike<number>, what: string, seq: readonly number[], nPrompt: number, interventions: readonly Intervention[]): Promise<void>;
}

/** A request's prompt ids, its two futures resolved in context and its interventions, checked (Engine.readRequest). */
export interface ReadRequest {
  promptIds: number[];
  good: ResolvedFuture;
  bad: ResolvedFuture;
  interventions: readonly Intervention[];
}

/**
 * Yields one macrotask so queued messages (a cancel) are handled between tokens. MessageChannel,
 * unlike a nested setTimeout(0), is not clamped to ~4 ms by browsers.
 */
function yieldToEventLoop(): Promise<void> {
  return new Promise((resolve) => {
    const { port1, port2 } = new MessageChannel();
    port1.onmessage = () => {
      port1.close();
      resolve();
    };
    port2.postMessage(null);
  });
}

/**
 * Teacher-forced sequence margin log p(good | prompt) − log p(bad | prompt) at the final layer,
 * log p(future | prompt) = logsumexp over the future's sequences of Σ_j log p(s_j | prompt, s_<j).
 * Each sequence continues from the prompt already in the KV cache; branch token j (position T + j)
 * carries generation step j + 1, as if generated, so step windows act here as in generateTokens
 * (DESIGN.md §2).
 * @param first log-probs [V] after the last prompt token; promptIds the prompt [T].
 */
export async function teacherForcedMargin(d: Decoder, first: Float32Array, promptIds: readonly number[], good: ResolvedFuture, bad: ResolvedFuture, interventions: readonly Intervention[]): Promise<number> {
  const T = promptIds.length, V = d.model.spec.dVocab;
  const logProb = async (f: ResolvedFuture): Promise<number> => {
    const per: number[] = [];
    for (const seq of f.sequences) {
      let lp = first[seq[0]];
      if (seq.length > 1) {
        if (T + seq.length - 1 > d.model.contextLength) throw new Error(`prompt plus future: ${contextMessage(T + seq.length - 1, d.model.spec.nCtx, d.model.contextLength)}`);
        const ids = [...promptIds, ...seq.slice(0, -1)];
        const { logits } = await forwardSpan(d.model, ids, T, ids.length, { nPrompt: T, interventions, logits: 'all', unchecked: true });
        await d.assertFinite(logits!, 'the logits of a future branch', ids, T, interventions);
        for (let j = 1; j < seq.length; j++) lp += logSoftmaxCpu(logits!.subarray((j - 1) * V, j * V), V)[seq[j]];
      }
      per.push(lp);
    }
    return logSumExp(per);
  };
  return (await logProb(good)) - (await logProb(bad));
}

/**
 * A hook captured at every generation step (TransformerLens names, position-major hooks): `steps[k]`
 * is what step k's forward pass adds, [n_added, width] row-major — the whole prompt at step 0, the one
 * new position T + k − 1 at step k ≥ 1 (read from the KV-cached decode, with the run's interventions).
 */
export interface StepCapture {
  readonly hook: string;
  readonly steps: Float32Array[];
}

/**
 * Forward of seq[pos0..] (step `step`; rows before pos0 are in the KV cache), then the next token
 * chosen on the device (model/next_token.ts).
 * @throws NonFiniteError when the chosen token's log-prob or the margin is not finite (NaN/Inf logits).
 */
async function forwardAndChoose(d: Decoder, seq: readonly number[], pos0: number, nPrompt: number, step: number, interventions: readonly Intervention[], rule: NextTokenRule, capture?: StepCapture): Promise<NextToken> {
  const ctx = new RunContext(d.backend, { pos0, n: seq.length - pos0, nPrompt, step }, capture ? (n) => n === capture.hook : undefined, interventions);
  const logits = d.model.forward(Int32Array.from(seq.slice(pos0)), ctx, 'last')!;
  let next: NextToken;
  try {
    next = await chooseNextToken(d.backend, logits, rule);
    if (capture) capture.steps.push(await d.backend.read(ctx.captured.get(capture.hook)!));
  } finally {
    d.backend.release(logits);
    ctx.release();
  }
  await d.assertFinite([next.logProb, next.margin], step === 0 ? 'the logits' : `the logits at generation step ${step}`, seq, nPrompt, interventions);
  return next;
}

/**
 * Generates token by token through the KV cache, recording the margin of the two futures at
 * every step (DESIGN.md §3 "Margin curve during generation"). Step k's forward pass reads the
 * token chosen at step k−1; interventions with a step window act only on the steps inside it.
 * @param onToken called once per new token, as soon as it is chosen.
 * @param signal aborts between tokens (stop = 'cancelled').
 * @param read the request read and checked (Engine.readRequest): prompt ids, resolved futures, interventions.
 * @param capture when given, its hook is captured at every step into `capture.steps` (StepCapture).
 */
export async function generateTokens(d: Decoder, read: ReadRequest, req: GenerateRequest, onToken?: (e: TokenEvent) => void, signal?: AbortSignal, capture?: StepCapture): Promise<Generation> {
  const { promptIds, good, bad, interventions } = read;
  const T = promptIds.length;
  const rand = seededRandom(req.seed ?? 0);
  const eos = req.stopAtEos === false ? [] : d.model.spec.eosTokenIds;
  const ids: number[] = [], margins: number[] = [], tokens: string[] = [];
  const nextToken = d.prompts.tokenStream(promptIds);
  let stop: Generation['stop'] = 'length';
  const rule: NextTokenRule = { temperature: req.temperature ?? 0, topK: req.topK ?? 0, rand, good: good.firstIds, bad: bad.firstIds };
  let next = await forwardAndChoose(d, promptIds, 0, T, 0, interventions, rule, capture);
  for (let step = 0; step < req.maxNewTokens; step++) {
    await yieldToEventLoop(); // let a cancel message in between tokens
    if (signal?.aborted) { stop = 'cancelled'; break; }
    const { id, margin, logProb } = next;
    ids.push(id);
    margins.push(margin);
    tokens.push(nextToken(id));
    onToken?.({ step, id, token: tokens[step], margin, logProb });
    if (eos.includes(id)) { stop = 'eos'; break; }
    if (step + 1 >= req.maxNewTokens) break;
    if (T + ids.length >= d.model.contextLength) { stop = 'context'; break; }
    next = await forwardAndChoose(d, [...promptIds, ...ids], T + ids.length - 1, T, step + 1, interventions, rule, capture);
  }
  return {
    warnings: d.prompts.promptWarnings(req),
    promptIds, ids, margins, stop, tokens,
    text: d.prompts.continuationText(promptIds, ids),
  };
}
