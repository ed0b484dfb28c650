/**
 * Steering transfer as the workbench and the runner run it (the `steeringTransfer` row of
 * studies/registry.ts; DESIGN.md §3 "Model comparison": does a vector found in the base still steer
 * the fine-tune?). CAA vectors of one contrastive set built on model A and on model B at every
 * layer's hook (compare.ts steeringTransfer: their cosine and norm ratio per layer), and each vector
 * applied to both models (compare.ts transferIntervention, h += α·v at all positions of its hook) on
 * the experiment's prompt: the final margin Δ of A and B steered by A's vector and by B's, per layer.
 * Plain data (typed arrays), which crosses the worker boundary as transferables.
 */
import type { Engine } from '../engine';
import type { FutureInput, PromptInput } from '../prompt';
import { chatTurn, promptWith } from '../prompt';
import type { Progress } from '../progress';
import { steeringTransfer, transferIntervention } from './compare';

export interface TransferRequest extends PromptInput {
  good: FutureInput;
  bad: FutureInput;
  /** The contrastive set (CAA: mean of positive activations − mean of negative ones, at the last token), each text rendered in the request's chat turn like the prompt. */
  positive: readonly string[];
  negative: readonly string[];
  /** Steering strength α applied with each vector (default 4). */
  alpha?: number;
  /** The hook per layer with {l} (default "blocks.{l}.hook_resid_post"). */
  hookTemplate?: string;
}

export interface TransferResult {
  labelA: string;
  labelB: string;
  hookTemplate: string;
  /** Blocks 0 … n_layers − 1. */
  layers: number[];
  alpha: number;
  /** cos(v_A, v_B) per layer [n_layers] (exactly 1 where the two models' activations agree; NaN for a zero vector). */
  cosine: Float32Array;
  /** ‖v_B‖ / ‖v_A‖ per layer [n_layers]. */
  normRatio: Float32Array;
  /** Final margin Δ (nats) at the last prompt position of each run unsteered. */
  marginA: number;
  marginB: number;
  /** Final margin Δ (nats) per layer [n_layers], the vector of one model added at that layer's hook of a model: A by v_A, B by v_A (transferred), B by v_B, A by v_B (transferred). */
  steered: { aByA: Float32Array; bByA: Float32Array; bByB: Float32Array; aByB: Float32Array };
}

/**
 * CAA vectors built on A and B per layer, their cosine, and each applied to both models.
 * Cost: 2 · n_layers · (|positive| + |negative|) forwards for the vectors, 4 · n_layers + 2 analyses.
 * @param onProgress done/total over the vectors' layers, then the steered analyses.
 * @param signal checked between layers; an abort throws signal.reason.
 * @throws ModelMismatchError when A and B differ in architecture, shapes or tokenizer; Error for an
 *   empty set, a bad prompt or future, an unknown hook, or a non-finite α.
 */
export async function transferJob(a: Engine, b: Engine, req: TransferRequest, onProgress?: (p: Progress) => void, signal?: AbortSignal): Promise<TransferResult> {
  const alpha = req.alpha ?? 4;
  if (!Number.isFinite(alpha)) throw new Error(`steering transfer: α ${alpha} must be a finite number`);
  if (req.positive.length === 0 || req.negative.length === 0) throw new Error(`steering transfer needs prompts in both classes of the set (${req.positive.length} positive, ${req.negative.length} negative)`);
  const L = a.spec.nLayers, total = 2 * L + 4 * L + 2;
  const input = { ...promptWith(req.prompt, req), good: req.good, bad: req.bad };
  const margin = async (e: Engine, interventions: Parameters<Engine['analyse']>[0]['interventions'] = []) => {
    const r = await e.analyse({ ...input, interventions });
    return r.finalMargin[r.ids.length - 1];
  };
  const st = await steeringTransfer(a, b, { positive: req.positive, negative: req.negative, turn: chatTurn(req) }, { hookTemplate: req.hookTemplate }, (p) => onProgress?.({ done: 2 * p.done, total }), signal);
  let done = 2 * L;
  const marginA = await margin(a), marginB = await margin(b);
  onProgress?.({ done: (done += 2), total });
  const steered = { aByA: new Float32Array(L), bByA: new Float32Array(L), bByB: new Float32Array(L), aByB: new Float32Array(L) };
  for (let l = 0; l < L; l++) {
    signal?.throwIfAborted();
    const va = st.vectorsA[l], vb = st.vectorsB[l];
    steered.aByA[l] = await margin(a, [transferIntervention(va, a, alpha)]);
    steered.bByA[l] = await margin(b, [transferIntervention(va, b, alpha)]);
    steered.bByB[l] = await margin(b, [transferIntervention(vb, b, alpha)]);
    steered.aByB[l] = await margin(a, [transferIntervention(vb, a, alpha)]);
    onProgress?.({ done: (done += 4), total });
  }
  return { labelA: a.label, labelB: b.label, hookTemplate: st.hookTemplate, layers: st.layers, alpha, cosine: st.cosine, normRatio: st.normRatio, marginA, marginB, steered };
}

/** The runner's JSON of a transfer (snake_case; NaN as null): caa_cosine, caa_norm_ratio, steer_margin {a_by_a, b_by_a, b_by_b, a_by_b}: [n_layers]. */
export function transferJson(t: TransferResult): Record<string, unknown> {
  const arr = (x: Float32Array) => Array.from(x, (v) => (Number.isFinite(v) ? v : null));
  return {
    caa_hook: t.hookTemplate, caa_alpha: t.alpha, caa_cosine: arr(t.cosine), caa_norm_ratio: arr(t.normRatio),
    steer_margin: { a_by_a: arr(t.steered.aByA), b_by_a: arr(t.steered.bByA), b_by_b: arr(t.steered.bByB), a_by_b: arr(t.steered.aByB) },
  };
}
