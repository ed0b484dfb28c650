/**
 * Will this model fit? Answered before any weight is downloaded, from config.json and the
 * safetensors headers alone (two small range requests per shard: the 8-byte length, then the
 * JSON header), against the device's buffer limits and a memory budget.
 */
import { architectureFor } from '../arch/registry';
import { workingContext, type TransformerOptions, type WeightDtype } from './load';
import { readJson, type ModelFiles } from '../io/model_files';
import { parseHeader, readHeaderLength, type SafetensorsDtype } from '../io/safetensors';
import { quantBytes } from '../backend/quant';
import { isQuantFormat, quantisedTensor } from './quant_storage';
import { formatBytes } from '../io/bytes';
import { checkpointShards } from '../io/checkpoint';

/** What the device allows; every size in bytes. */
export interface DeviceLimits {
  /** GPUDevice.limits.maxBufferSize (Infinity on the CPU backend). */
  maxBufferSize: number;
  /** GPUDevice.limits.maxStorageBufferBindingSize: the largest tensor a kernel can bind. */
  maxStorageBufferBindingSize: number;
  /** Memory the model may use in total (weights + KV cache + activations). */
  memoryBudget: number;
  /** Names the device in messages: "this adapter (google swiftshader)", "the CPU backend". */
  device: string;
}

/** Memory needs of a model on this engine; sizes in bytes. */
export interface MemoryEstimate {
  label: string;
  modelType: string;
  /** Parameter count: elements of every tensor except stored mask/rotary buffers. */
  params: number;
  /** Parameters per stored dtype. */
  paramsByDtype: Partial<Record<SafetensorsDtype, number>>;
  /**
   * Weight bytes as stored on GPU: float32 (F16 and BF16 are widened on load), or with
   * weightDtype 'f16' 2 bytes per element of every 2-D weight (norms and biases stay float32), or
   * with 'q8_0' / 'q4_0' the linear weights' packed blocks (backend/quant.ts quantBytes: 8.5 / 4.5
   * bits per weight; embeddings and unembedding stay float32).
   */
  weightBytes: number;
  /** How the matrices are stored (model/load.ts WeightOptions). */
  weightDtype: WeightDtype;
  /** 2 · n_layers · contextLength · n_kv_heads · d_head · 4 (K and V, float32, preallocated for contextLength positions). */
  kvCacheBytes: number;
  /** Allowance for one forward pass over min(contextLength, ACTIVATION_TOKENS) tokens (see activationAllowance()). */
  activationBytes: number;
  totalBytes: number;
  /** The model's max_position_embeddings. */
  nCtx: number;
  /** Positions the KV cache is allocated for: min(nCtx, the load's contextLength), as model/load.ts workingContext(). */
  contextLength: number;
  /** The largest single tensor the model needs (a weight, or one layer's K or V cache), in its stored bytes. */
  largest: { name: string; shape: number[]; bytes: number };
  /**
   * The largest buffer that cannot be split: a weight that is not 2-D, one row of a 2-D weight
   * (the WebGPU backend splits larger matrices by rows across buffers), or one layer's K or V cache.
   */
  largestUnsplittable: { name: string; shape: number[]; bytes: number };
  /** Checkpoint files whose headers were read. */
  shards: string[];
}

/** The estimate and whether it fits, with a sentence a user can act on. */
export interface Verdict {
  fits: boolean;
  reason: string;
  estimate: MemoryEstimate;
}

/** Thrown when a model will not fit; the message is the verdict's reason. */
export class ModelTooLargeError extends Error {
  constructor(readonly verdict: Verdict) {
    super(verdict.reason);
    this.name = 'ModelTooLargeError';
  }
}

/** Prompt length the activation allowance is sized for. */
export const ACTIVATION_TOKENS = 512;

/** Stored buffers that are not parameters and are never uploaded (GPT-2/NeoX causal masks, cached inv_freq). */
const NOT_PARAMETERS = /(^|\.)(attn\.(bias|masked_bias)|attention\.(bias|masked_bias)|rotary_emb\.inv_freq)$/;

/**
 * Reads config.json and every shard's safetensors header (never the weights) and estimates the
 * model's memory on this engine.
 * @param opts.weightDtype the storage the load will use (default 'f32').
 * @param opts.contextLength the KV-cache positions the load will ask for (default 4096, capped at
 *   max_position_embeddings as the load caps it).
 * @throws Error for an unsupported model_type, a missing checkpoint, a malformed header or a
 *   contextLength that is not a positive integer — the same errors a full load would raise, only sooner.
 */
export async function estimateModel(files: ModelFiles, opts: TransformerOptions = {}): Promise<MemoryEstimate> {
  const weightDtype = opts.weightDtype ?? 'f32';
  const config = await readJson(files, 'config.json');
  const spec = architectureFor(config.model_type).spec(config);
  const contextLength = workingContext(spec.nCtx, opts.contextLength);
  const { shards } = await checkpointShards(files);
  const paramsByDtype: Partial<Record<SafetensorsDtype, number>> = {};
  let params = 0, weightBytes = 0;
  let largest = { name: '', shape: [] as number[], bytes: 0 };
  let unsplit = { name: '', shape: [] as number[], bytes: 0 };
  for (const shard of shards) {
    const first8 = await files.range(shard, 0, 8);
    const size = await files.size(shard);
    const n = readHeaderLength(first8, size, shard);
    const header = parseHeader(await files.range(shard, 8, 8 + n), size, shard);
    for (const t of header.tensors.values()) {
      if (NOT_PARAMETERS.test(t.name)) continue;
      const count = t.shape.reduce((a, b) => a * b, 1);
      params += count;
      paramsByDtype[t.dtype] = (paramsByDtype[t.dtype] ?? 0) + count;
      const matrix = t.shape.length === 2;
      const bytes = isQuantFormat(weightDtype) && quantisedTensor(t.name, t.shape) ? quantBytes(weightDtype, t.shape[0], t.shape[1])
        : count * (matrix && weightDtype === 'f16' ? 2 : 4);
      weightBytes += bytes;
      if (bytes > largest.bytes) largest = { name: t.name, shape: t.shape, bytes };
      const part = matrix ? { name: `one row of ${t.name}`, shape: [1, t.shape[1]], bytes: bytes / t.shape[0] } : { name: t.name, shape: t.shape, bytes };
      if (part.bytes > unsplit.bytes) unsplit = part;
    }
  }
  const kvLayer = contextLength * spec.nKvHeads * spec.dHead * 4;
  const kv = { name: `the K (or V) cache of one layer for ${contextLength} tokens`, shape: [contextLength, spec.nKvHeads * spec.dHead], bytes: kvLayer };
  if (kvLayer > largest.bytes) largest = kv;
  if (kvLayer > unsplit.bytes) unsplit = kv;
  const kvCacheBytes = 2 * spec.nLayers * kvLayer;
  const activationBytes = activationAllowance(contextLength, spec.dModel, spec.dMlp, spec.nHeads, spec.dVocab, spec.moe ? spec.moe.topK * (spec.moe.dExpert + spec.dModel) : 0);
  return {
    label: files.label, modelType: spec.modelType, params, paramsByDtype, weightBytes, weightDtype, kvCacheBytes, activationBytes,
    totalBytes: weightBytes + kvCacheBytes + activationBytes, nCtx: spec.nCtx, contextLength, largest, largestUnsplittable: unsplit, shards,
  };
}

/**
 * Float32 working memory of one forward pass over T = min(contextLength, ACTIVATION_TOKENS) tokens:
 * residual, norm, q/k/v/attention output and their temporaries (~6·d_model per token), the MLP
 * (3·d_mlp: gate, up, activation), one head's attention scores at a time (n_heads·T when all are
 * kept for hook_pattern), the logits (d_vocab per token), and for a sparse MLP `perTokenMoe` =
 * k·(d_expert + d_model): each token's k chosen experts' hidden rows and weighted outputs
 * (ops/moe_experts.wgsl.ts h and ys).
 */
function activationAllowance(contextLength: number, dModel: number, dMlp: number, nHeads: number, dVocab: number, perTokenMoe: number): number {
  const T = Math.min(contextLength, ACTIVATION_TOKENS);
  return 4 * T * (6 * dModel + 3 * dMlp + nHeads * T + dVocab + perTokenMoe);
}


/**
 * Compares an estimate with the device: the largest buffer that cannot be split against both
 * buffer limits (matrices larger than a limit are split by rows on load), the total against the budget.
 */
export function judge(e: MemoryEstimate, limits: DeviceLimits): Verdict {
  const parts = `weights ${formatBytes(e.weightBytes)} as ${e.weightDtype}, KV cache ${formatBytes(e.kvCacheBytes)} for ${e.contextLength} tokens (of max_position_embeddings ${e.nCtx}), activations ${formatBytes(e.activationBytes)}`;
  const big = describeTensor(e.largestUnsplittable.name);
  for (const [limitName, limit] of [['maxStorageBufferBindingSize', limits.maxStorageBufferBindingSize], ['maxBufferSize', limits.maxBufferSize]] as const) {
    if (e.largestUnsplittable.bytes > limit) {
      return {
        fits: false, estimate: e,
        reason: `${e.label}: ${big} is ${formatBytes(e.largestUnsplittable.bytes)}, larger than ${limitName} ${formatBytes(limit)} of ${limits.device}`,
      };
    }
  }
  if (e.totalBytes > limits.memoryBudget) {
    return {
      fits: false, estimate: e,
      reason: `${e.label} needs ${formatBytes(e.totalBytes)} of GPU memory (${parts}); ${limits.device} allows ${formatBytes(limits.memoryBudget)}`,
    };
  }
  return { fits: true, estimate: e, reason: `${e.label} needs ${formatBytes(e.totalBytes)} (${parts}); ${limits.device} allows ${formatBytes(limits.memoryBudget)}` };
}

/**
 * Estimates and judges in one step, for the load path.
 * @param opts the weight storage and KV-cache positions the load will use (as estimateModel).
 * @returns the estimate when the model fits.
 * @throws ModelTooLargeError naming the limit it breaks; the errors of estimateModel.
 */
export async function assertFits(files: ModelFiles, limits: DeviceLimits, opts: TransformerOptions = {}): Promise<MemoryEstimate> {
  const v = judge(await estimateModel(files, opts), limits);
  if (!v.fits) throw new ModelTooLargeError(v);
  return v.estimate;
}

function describeTensor(name: string): string {
  if (name.startsWith('the ')) return name;
  const row = /^one row of (.+)$/.exec(name);
  if (row) return `one row of ${describeTensor(row[1])}`;
  if (/(embed_tokens|wte|embed_in|word_embeddings)\.weight$/.test(name)) return `the embedding matrix (${name})`;
  if (/(lm_head|embed_out)\.weight$/.test(name)) return `the unembedding matrix (${name})`;
  return `tensor ${name}`;
}

/**
 * Whether two models fit side by side (model comparison: A and B each on its own backend, drawing
 * on the same device memory): the one being loaded (`adding`) has its largest buffer judged
 * against the buffer limits as judge() does, and the two totals together against the one memory
 * budget. The reason names both models' needs, their sum and the budget.
 * @param a model A's estimate, b model B's; the one not being added may be null (unknown: the
 *   other is judged alone).
 */
export function judgePair(a: MemoryEstimate | null, b: MemoryEstimate | null, limits: DeviceLimits, adding: 'A' | 'B'): Verdict {
  const added = (adding === 'A' ? a : b)!;
  const other = adding === 'A' ? b : a;
  const alone = judge(added, limits);
  if (!alone.fits || !a || !b) return alone;
  const sum = a.totalBytes + b.totalBytes;
  const parts = `model A ${a.label} ${formatBytes(a.totalBytes)} + model B ${b.label} ${formatBytes(b.totalBytes)} = ${formatBytes(sum)}`;
  if (sum > limits.memoryBudget) {
    const fix = adding === 'B' ? 'Load a smaller model B or smaller weight storage (Q8_0 / Q4_0), or load anyway' : `Unload model B (${other!.label}) first, use smaller weight storage, or load anyway`;
    return { fits: false, estimate: added, reason: `models A and B together do not fit: ${parts}; ${limits.device} allows ${formatBytes(limits.memoryBudget)}. ${fix}` };
  }
  return { fits: true, estimate: added, reason: `both fit: ${parts} of ${formatBytes(limits.memoryBudget)} on ${limits.device}` };
}
