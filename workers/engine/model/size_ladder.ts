/**
 * The size ladder ("will it fit"): one model's memory on this engine under every weight storage
 * (float32, binary16, Q8_0, Q4_0) and the KV cache for one context length, each judged against one
 * device's limits — read from config.json and the safetensors headers alone, before any download.
 */
import { estimateModel, judge, type DeviceLimits, type MemoryEstimate } from './estimate';
import { WEIGHT_DTYPES, type WeightDtype } from './load';
import type { ModelFiles } from '../io/model_files';

/** One storage's rung: the estimate (bytes), whether it fits here and the sentence saying why. */
export interface LadderRung {
  weightDtype: WeightDtype;
  estimate: MemoryEstimate;
  fits: boolean;
  reason: string;
}

/** The whole ladder of one model for one context, against one device. */
export interface SizeLadder {
  label: string;
  /** KV-cache positions every rung is sized for (min(contextLength, max_position_embeddings)). */
  contextLength: number;
  device: string;
  rungs: LadderRung[];
}

/**
 * Estimates the model under each storage in WEIGHT_DTYPES and judges each against `limits`
 * (estimate.ts judge: the largest unsplittable buffer against maxStorageBufferBindingSize and
 * maxBufferSize, then weights + KV cache + activations against the memory budget).
 * @param contextLength KV-cache positions (default: estimateModel's, 4096), capped at max_position_embeddings.
 * @throws the errors of estimateModel (unsupported model_type, no checkpoint, malformed header,
 *   contextLength not a positive integer) before anything is judged.
 */
export async function sizeLadder(files: ModelFiles, limits: DeviceLimits, contextLength?: number): Promise<SizeLadder> {
  const rungs: LadderRung[] = [];
  for (const weightDtype of WEIGHT_DTYPES) {
    const v = judge(await estimateModel(files, { weightDtype, contextLength }), limits);
    rungs.push({ weightDtype, estimate: v.estimate, fits: v.fits, reason: v.reason });
  }
  return { label: files.label, contextLength: rungs[0].estimate.contextLength, device: limits.device, rungs };
}
