import type { Backend } from '../backend/backend';
import { architectureFor } from '../arch/registry';
import type { HFConfig, Upload } from '../arch/types';
import { WebGpuBackend } from '../backend/webgpu';
import { packF16, unpackF16 } from '../backend/f16';
import { quantise, type QuantFormat } from '../backend/quant';
import { isQuantFormat, quantisedTensor } from './quant_storage';
import { openCheckpoint } from '../io/checkpoint';
import { GGUF_FILE, ggufConfigMessage, openGguf } from '../io/gguf';
import { RateMeter } from '../io/download';
import { readJson, type ModelFiles } from '../io/model_files';
import { DEFAULT_CONTEXT_LENGTH, Transformer } from './transformer';
import { checkLayersAgainstCheckpoint, checkSpec } from './spec_checks';

export interface LoadProgress {
  /** 'kernels': the GPU pipelines generation uses are being compiled (Engine.load's warmUp). */
  stage: 'config' | 'weights' | 'upload' | 'tokenizer' | 'kernels' | 'ready';
  /** Bytes of the checkpoint read so far and in all (stage 'weights'). */
  loaded?: number;
  total?: number;
  /** Recent download rate in bytes/s and the seconds left at that rate (stage 'weights'). */
  bytesPerSecond?: number;
  etaSeconds?: number;
}

/** Storage of the weight matrices (see WeightOptions). */
export type WeightDtype = 'f32' | 'f16' | QuantFormat;

/** How the weights are stored on the backend. */
export interface WeightOptions {
  /**
   * 'f32' (default) keeps every weight in float32. 'f16' stores the matrices — every 2-D weight:
   * q/k/v/o, MLP, the unembedding and the embedding tables (W_E, GPT-2's W_pos), which tied models
   * share with W_U — as IEEE binary16 (half the memory; compute stays float32); norm weights and
   * biases stay float32. On WebGPU the halves are stored (WebGpuBackend.uploadF16); the CPU
   * backend keeps float32 storage but rounds those weights to binary16, so both backends compute
   * with the same weights (parity, not memory savings).
   * 'q8_0' / 'q4_0' quantise the blocks' linear weights on load into ggml's Q8_0 / Q4_0 blocks
   * (backend/quant.ts; 8.5 / 4.5 bits per weight, on both backends), dequantised inside the matmul;
   * embeddings, unembedding, norms and biases stay float32 (model/quant_storage.ts).
   */
  weightDtype?: WeightDtype;
}

/** What a load allocates and how it stores the weights. */
export interface TransformerOptions extends WeightOptions {
  /**
   * KV-cache positions to allocate (default DEFAULT_CONTEXT_LENGTH = 4096), capped at the model's
   * max_position_embeddings: the longest prompt plus generation the session can run. The cache
   * costs 2 · n_layers · positions · n_kv_heads · d_head · 4 bytes, allocated up front.
   */
  contextLength?: number;
}

/**
 * The KV-cache positions a load allocates: min(n_ctx, contextLength), the rule the Transformer
 * applies and the pre-download estimate (model/estimate.ts) sizes for.
 * @param nCtx the model's max_position_embeddings.
 * @param contextLength the positions asked for (default DEFAULT_CONTEXT_LENGTH).
 * @throws Error when contextLength is not a positive integer.
 */
export function workingContext(nCtx: number, contextLength = DEFAULT_CONTEXT_LENGTH): number {
  if (!Number.isInteger(contextLength) || contextLength < 1) throw new Error(`contextLength must be a positive whole number of tokens, not ${contextLength}`);
  return Math.min(nCtx, contextLength);
}

/**
 * Whether the folder's checkpoint is a GGUF file: it holds model.gguf and no safetensors
 * (model.safetensors or an index), which win when both are present. The safetensors are asked for
 * first, so a safetensors folder on a static host is never probed for a model.gguf it lacks (a 404).
 */
export async function isGgufFolder(files: ModelFiles): Promise<boolean> {
  return !(await files.has('model.safetensors')) && !(await files.has('model.safetensors.index.json')) && (await files.has(GGUF_FILE));
}

/**
 * Refuses a folder holding two checkpoints: model.gguf beside model.safetensors (or a sharded
 * index) — possibly two different models; loading either silently would be a guess. Not asked of
 * a source whose has() is a logged request (a static host: the probe would be a 404 on every load;
 * there the safetensors win, as isGgufFolder says).
 * @throws Error naming both files.
 */
export async function refuseTwoCheckpoints(files: ModelFiles): Promise<void> {
  if (files.probesByRequest || !(await files.has(GGUF_FILE))) return;
  const st = (await files.has('model.safetensors')) ? 'model.safetensors' : (await files.has('model.safetensors.index.json')) ? 'model.safetensors.index.json' : null;
  if (st) throw new Error(`${files.label}: the folder holds two checkpoints, ${GGUF_FILE} and ${st}${(await files.has('config.json')) ? ' (with config.json)' : ''}, which may be different models; move one of them out so the folder holds one`);
}

/** Every weight storage a load accepts. */
export const WEIGHT_DTYPES: readonly WeightDtype[] = ['f32', 'f16', 'q8_0', 'q4_0'];

/** @throws Error naming the accepted storages when `dtype` is not one of them. */
export function checkWeightDtype(dtype: string): WeightDtype {
  if (!(WEIGHT_DTYPES as readonly string[]).includes(dtype)) throw new Error(`weight storage "${dtype}" is not one of ${WEIGHT_DTYPES.join(', ')}`);
  return dtype as WeightDtype;
}

/** Largest finite IEEE binary16 value. */
export const F16_MAX = 65504;

/**
 * The weight uploader for `dtype`: 2-D weights as binary16 when 'f16' (see WeightOptions).
 * @throws Error naming the tensor, the index and the value when an 'f16' weight holds a value
 *   beyond ±65504 (binary16 would store ±Infinity and every logit would become NaN).
 */
function weightUploader(backend: Backend, dtype: WeightDtype): Upload {
  const up = floatUploader(backend, dtype);
  // a matrix the checkpoint stores quantised (GGUF) is uploaded as stored, whatever dtype says
  return (data, shape, name, quant, owned) => (quant ? backend.uploadQuant(quant) : up(data, shape, name, undefined, owned));
}

/** Index of the first value beyond ±F16_MAX, or −1 (a plain loop: findIndex with a closure was 6–7× slower, analysis/finite.ts). */
function firstBeyondF16(data: Float32Array): number {
  for (let i = 0; i < data.length; i++) if (data[i] > F16_MAX || data[i] < -F16_MAX) return i;
  return -1;
}

function floatUploader(backend: Backend, dtype: WeightDtype): Upload {
  // an array the source handed over (a decoded safetensors tensor) becomes the tensor itself on the CPU
  const f32 = (data: Float32Array, shape: readonly number[], owned?: boolean) => (owned ? backend.adopt(data, shape) : backend.upload(data, shape));
  if (dtype === 'f32') return (data, shape, _name, _quant, owned) => f32(data, shape, owned);
  if (isQuantFormat(dtype)) {
    return (data, shape, name, _quant, owned) => (quantisedTensor(name, shape) ? backend.uploadQuant(quantise(dtype, data, shape[0], shape[1])) : f32(data, shape, owned));
  }
  return (data, shape, name, _quant, owned) => {
    if (shape.length !== 2) return f32(data, shape, owned);
    const i = firstBeyondF16(data);
    if (i >= 0) throw new Error(`tensor "${name ?? `[${shape}]`}" holds ${data[i]} at index ${i}, beyond the binary16 range ±${F16_MAX}: load it with float32 weights`);
    if (backend instanceof WebGpuBackend) return backend.uploadF16(data, shape);
    return backend.adopt(unpackF16(packF16(data), data.length), shape);
  };
}

/**
 * Reads config.json, picks the architecture, opens the checkpoint and uploads the weights
 * (as float32, matrices as binary16 with `weightDtype: 'f16'`, linear weights block-quantised with
 * 'q8_0' / 'q4_0'), and allocates the KV cache for
 * workingContext(n_ctx, `contextLength`) positions.
 * @throws Error with a readable message for an unknown model_type (listing the supported ones),
 *   a missing/malformed config or checkpoint, a tensor the architecture expects but cannot find,
 *   or a contextLength that is not a positive integer (before any weight is read).
 */
export async function loadTransformer(files: ModelFiles, backend: Backend, onProgress?: (p: LoadProgress) => void, options: TransformerOptions = {}): Promise<{ config: HFConfig; model: Transformer; ggufTypes?: Record<string, number> }> {
  const dtype = checkWeightDtype(options.weightDtype ?? 'f32');
  onProgress?.({ stage: 'config' });
  const meter = new RateMeter();
  const progress = (loaded: number, total: number) => onProgress?.({ stage: 'weights', ...meter.sample(loaded, total) });
  // a GGUF folder carries its config in the file's metadata and is read before the config is known
  await refuseTwoCheckpoints(files);
  const gguf = (await isGgufFolder(files)) ? await openGguf(files, progress) : null;
  const config = gguf ? gguf.config : await readJson(files, 'config.json');
  // the config of a GGUF file is derived from its metadata: errors name the metadata keys, not config.json
  const named = <T>(f: () => T): T => {
    if (!gguf) return f();
    try {
      return f();
    } catch (e) {
      throw new Error(ggufConfigMessage((e as Error).message, `${files.label}/${GGUF_FILE}`, gguf.arch), { cause: e });
    }
  };
  const arch = named(() => architectureFor(config.model_type));
  const spec = named(() => arch.spec(config));
  named(() => checkSpec(spec));
  const contextLength = workingContext(spec.nCtx, options.contextLength);
  const src = gguf ? gguf.source : await openCheckpoint(files, progress);
  named(() => checkLayersAgainstCheckpoint(spec, src, files.label));
  onProgress?.({ stage: 'upload' });
  const weights = arch.weights(spec, src, weightUploader(backend, dtype), config);
  return { config, model: new Transformer(backend, spec, weights, contextLength), ggufTypes: gguf?.types };
}
