/**
 * How far block-quantised weights move the logits: the model's logits on a fixed probe prompt
 * with its float32 weights against the same prompt with quantised weights, max |Δlogit| over every
 * position and the vocabulary. The float32 pass runs first and is released before the quantised
 * weights are uploaded, so the peak memory is that of the float32 model alone (and afterwards only the
 * quantised weights are held: the float32 pass runs on its own CPU backend, or its WebGPU buffers
 * are destroyed rather than pooled).
 */
import type { Backend } from '../backend/backend';
import { CpuBackend } from '../backend/cpu';
import { formatLabel } from '../backend/quant';
import type { HFConfig } from '../arch/types';
import type { ModelFiles } from '../io/model_files';
import { estimateModel, judge, type DeviceLimits } from './estimate';
import { isGgufFolder, loadTransformer, type LoadProgress, type TransformerOptions, type WeightDtype } from './load';
import { isQuantFormat } from './quant_storage';
import { RunContext } from './run_context';
import type { Transformer } from './transformer';

/** The probe prompt (plain English; its tokens are capped at PROBE_MAX_TOKENS and the context length). */
export const PROBE_TEXT = 'Once upon a time, there was a little girl named Lily. She loved to play outside in the park with her dog.';
/** Most probe positions compared. */
export const PROBE_MAX_TOKENS = 32;

/** Logit error of the loaded weights against float32 (ModelInfo.weights.logitError). */
export interface LogitError {
  /** The probe's token ids (PROBE_TEXT, truncated). */
  ids: number[];
  /** max |z_quant − z_f32| over every probe position and vocabulary entry (logits, nats). */
  maxAbs: number;
  /** The same at the last probe position only. */
  lastMaxAbs: number;
  /** max |z_f32| on the probe, for scale. */
  maxLogit: number;
}

/** How the loaded model stores its weights and, when quantised, what that costs in logits. */
export interface WeightStorage {
  dtype: WeightDtype;
  /** "Q8_0 linear weights (embeddings, unembedding and norms float32)", "float32", … */
  description: string;
  /** The measured logit error (quantised storage only), or why it was not measured. */
  logitError?: LogitError;
  unmeasured?: string;
}

/** Logits [n, d_vocab] of one no-cache forward over `ids`. */
export async function probeLogits(backend: Backend, model: Transformer, ids: readonly number[]): Promise<Float32Array> {
  const ctx = new RunContext(backend, { pos0: 0, n: ids.length, nPrompt: ids.length, step: 0 });
  const t = model.forward(Int32Array.from(ids), ctx, 'all')!;
  const out = await backend.read(t);
  backend.release(t);
  ctx.release();
  return out;
}

/**
 * The float32 model's probe logits: loads the checkpoint with float32 weights (KV cache for the
 * probe only), runs the probe and frees every tensor again.
 * @throws the load's errors (missing tensors, too little memory).
 */
export async function float32ProbeLogits(files: ModelFiles, backend: Backend, ids: readonly number[]): Promise<Float32Array> {
  // on the CPU a backend of its own, whose wasm memory (which never shrinks) goes with it
  const b: Backend = backend.kind === 'cpu' ? new CpuBackend() : backend;
  const { model } = await loadTransformer(files, b, undefined, { weightDtype: 'f32', contextLength: ids.length });
  try {
    return await probeLogits(b, model, ids);
  } finally {
    model.dispose();
    if (b !== backend) b.dispose();
    else {
      model.releaseWeights();
      await backend.trimPool?.(); // WebGPU: the float32 buffers leave the pool, not kept for reuse
    }
  }
}

/**
 * Compares the loaded model's probe logits with the float32 ones.
 * @param ref float32 logits [ids.length, d_vocab] from float32ProbeLogits.
 */
export async function logitError(backend: Backend, model: Transformer, ids: readonly number[], ref: Float32Array): Promise<LogitError> {
  const z = await probeLogits(backend, model, ids);
  const V = model.spec.dVocab, last = (ids.length - 1) * V;
  let maxAbs = 0, lastMaxAbs = 0, maxLogit = 0;
  for (let i = 0; i < z.length; i++) {
    const d = Math.abs(z[i] - ref[i]);
    maxAbs = Math.max(maxAbs, d);
    if (i >= last) lastMaxAbs = Math.max(lastMaxAbs, d);
    maxLogit = Math.max(maxLogit, Math.abs(ref[i]));
  }
  return { ids: [...ids], maxAbs, lastMaxAbs, maxLogit };
}

/** A sentence for the model info: the storage and, where quantised, what stays float. */
export function describeStorage(dtype: WeightDtype): string {
  if (isQuantFormat(dtype)) return `${formatLabel(dtype)} linear weights (${dtype === 'q8_0' ? '8.5' : '4.5'} bits per weight; embeddings, unembedding and norms float32)`;
  return dtype === 'f16' ? 'binary16 matrices (norms and biases float32)' : 'float32';
}

/** Options of loadWithStorage: the load's own, and whether to measure a quantised load's logit error. */
export interface StorageLoadOptions extends TransformerOptions {
  /**
   * With quantised storage: true (default) runs the probe with float32 weights first and reports
   * the logit error; 'on-demand' leaves it to measureLogitError after the load (the load costs one
   * model's compute, not two); false skips it for good (a model whose float32 weights would not fit).
   */
  measureLogitError?: boolean | 'on-demand';
}

/** The probe's token ids: PROBE_TEXT tokenised, at most PROBE_MAX_TOKENS and the context length. */
export function probeIds(encode: (text: string) => number[], contextLength?: number): number[] {
  return encode(PROBE_TEXT).slice(0, Math.min(PROBE_MAX_TOKENS, contextLength ?? PROBE_MAX_TOKENS));
}

/**
 * The logit error of a model already loaded with quantised weights, measured after the load: the
 * float32 probe pass then runs beside the quantised weights (on the CPU on a backend of its own; on
 * WebGPU its buffers are freed after the pass), so the peak memory is both models' weights.
 * @param ids the probe (probeIds). @throws the float32 load's errors.
 */
export async function measureLogitError(files: ModelFiles, backend: Backend, model: Transformer, ids: readonly number[]): Promise<LogitError> {
  return logitError(backend, model, ids, await float32ProbeLogits(files, backend, ids));
}

/**
 * loadTransformer, and with quantised storage the logit error on the probe prompt against the same
 * checkpoint's float32 weights (the float32 pass first, released before the quantised upload).
 * @param encode the tokenizer's text → ids (the probe is tokenised with it).
 * @throws loadTransformer's errors.
 */
export async function loadWithStorage(
  files: ModelFiles, backend: Backend, encode: (text: string) => number[], onProgress: ((p: LoadProgress) => void) | undefined, options: StorageLoadOptions,
): Promise<{ config: HFConfig; model: Transformer; storage: WeightStorage }> {
  const dtype = options.weightDtype ?? 'f32';
  const storage: WeightStorage = { dtype, description: describeStorage(dtype) };
  let probe: { ids: number[]; ref: Float32Array } | null = null;
  const gguf = await isGgufFolder(files);
  if (isQuantFormat(dtype) && !gguf) {
    if (options.measureLogitError === false) storage.unmeasured = 'the float32 weights would not fit beside the budget, so the logit error was not measured';
    else if (options.measureLogitError !== 'on-demand') {
      const ids = probeIds(encode, options.contextLength);
      probe = { ids, ref: await float32ProbeLogits(files, backend, ids) };
    }
  }
  const { config, model, ggufTypes } = await loadTransformer(files, backend, onProgress, options);
  if (probe) storage.logitError = await logitError(backend, model, probe.ids, probe.ref);
  if (ggufTypes) {
    const stored = Object.keys(ggufTypes).find((t) => t === 'Q8_0' || t === 'Q4_0');
    if (stored) storage.dtype = stored.toLowerCase() as WeightDtype;
    // a float GGUF loaded with another storage is converted on upload: say so, and why no error is shown
    const converted = !stored && dtype !== 'f32' ? `, stored as ${describeStorage(dtype)}` : '';
    storage.description = `GGUF tensors ${Object.entries(ggufTypes).map(([t, n]) => `${t} ×${n}`).join(', ')}${stored ? ' (quantised matrices kept as stored; a quantised token_embd widened to float32)' : converted}`;
    if (stored) storage.unmeasured = 'the GGUF file holds quantised weights: there are no float32 weights to compare with';
    else if (isQuantFormat(dtype)) storage.unmeasured = 'the logit error is measured on safetensors checkpoints only: a GGUF file is not probed with float32 weights';
  }
  return { config, model, storage };
}

/**
 * Whether the float32 probe pass fits the device (model/estimate.ts, float32 weights and a KV cache for
 * the probe only); false when the estimate cannot be made (a GGUF folder, which is never probed).
 */
export async function float32ProbeFits(files: ModelFiles, limits: DeviceLimits): Promise<boolean> {
  try {
    return judge(await estimateModel(files, { weightDtype: 'f32', contextLength: PROBE_MAX_TOKENS }), limits).fits;
  } catch {
    return false;
  }
}
