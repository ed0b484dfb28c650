/**
 * Activations while generating (TransformerLens issue #697): one [pos, width] hook captured at every
 * generation step from the KV-cached decode (decode.ts StepCapture), greedy or seeded, without the
 * interventions and, when there are any, with them — each as a [steps, width] matrix whose row s is
 * the hook at the position step s adds last: the last prompt position T − 1 at step 0 (the prefill),
 * position T + s − 1 (the token chosen at step s − 1, fed back) at step s ≥ 1. Row s is therefore
 * what a plain full forward over prompt + the first s new tokens gives at its last position.
 */
import type { Engine } from '../engine';
import type { GenerateRequest } from '../api';
import type { Intervention } from '../model/intervention';
import type { Progress } from '../progress';
import type { StepCapture } from '../decode';
import { hookWidth } from '../model/hook_width';

/** The request: a generation (its interventions resolved) and the hook to capture. */
export interface GenerationActivationsRequest extends Omit<GenerateRequest, 'interventions'> {
  /** A [pos, width] hook, TransformerLens name (e.g. blocks.2.hook_resid_post). */
  hook: string;
  /** The interventions of the steered run; none: only the unsteered run. */
  interventions: Intervention[];
}

/** One generation's captures. */
export interface StepActivations {
  /** The new tokens' ids and strings, one per step. */
  ids: number[];
  tokens: string[];
  /** positions[s] = the sequence position row s was read at (T − 1 + s). */
  positions: number[];
  /** Row-major [steps, width] float32. */
  data: Float32Array;
}

/** Activations while generating: the unsteered run, and the steered one when there were interventions. */
export interface GenerationActivations {
  hook: string;
  width: number;
  /** Prompt length in tokens. */
  nPrompt: number;
  unsteered: StepActivations;
  steered: StepActivations | null;
}

/**
 * [steps, width]: the last row of each step's capture ([n_added, width] each).
 * @throws Error when a step's capture is not a whole number of rows of `width`.
 */
export function lastRows(steps: readonly Float32Array[], width: number): Float32Array {
  const out = new Float32Array(steps.length * width);
  steps.forEach((s, k) => {
    if (s.length < width || s.length % width !== 0) throw new Error(`step ${k}: the capture holds ${s.length} values, not rows of width ${width}`);
    out.set(s.subarray(s.length - width), k * width);
  });
  return out;
}

/**
 * Generates without and (when `interventions` is not empty) with the interventions, capturing `hook`
 * at every step. onProgress after each run. The signal stops a run between tokens (its stop: 'cancelled').
 * @throws Error for a hook that is not [pos, width] (attention patterns, scores) or unknown, a bad prompt or future.
 */
export async function generationActivations(engine: Engine, req: GenerationActivationsRequest, onProgress?: (p: Progress) => void, signal?: AbortSignal): Promise<GenerationActivations> {
  const { width } = hookWidth(engine.spec, req.hook);
  const { hook, interventions, ...gen } = req;
  const runs = interventions.length ? [[], interventions] : [[]];
  const out: StepActivations[] = [];
  let nPrompt = 0;
  for (const [i, ivs] of runs.entries()) {
    const capture: StepCapture = { hook, steps: [] };
    const g = await engine.generate({ ...gen, interventions: ivs }, undefined, signal, capture);
    nPrompt = g.promptIds.length;
    const steps = capture.steps.slice(0, g.ids.length);
    out.push({ ids: g.ids, tokens: g.tokens, positions: steps.map((_, s) => nPrompt - 1 + s), data: lastRows(steps, width) });
    onProgress?.({ done: i + 1, total: runs.length });
  }
  return { hook, width, nPrompt, unsteered: out[0], steered: out[1] ?? null };
}
