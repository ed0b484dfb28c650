import type { Tensor } from './backend';
import { shapeSize } from './backend';
import { quantBytes, type QuantFormat } from './quant';

/** How a GpuTensor's values are stored: float32, packed binary16 pairs, or ggml blocks (quant.ts). */
export type GpuDtype = 'f32' | 'f16' | QuantFormat;

/**
 * A tensor living in a GPU storage buffer. The buffer comes from the backend's pool and may be
 * larger than the tensor (its size class): kernels always bind and index by `size`, never by the
 * buffer's length. dtype 'f16' (packed halves, see f16.ts) is used only for weights: linear()'s
 * weight and the tables of embed() and sliceRows().
 */
export class GpuTensor implements Tensor {
  readonly size: number;
  released = false;
  constructor(readonly shape: readonly number[], readonly buffer: GPUBuffer, readonly owner: object, readonly dtype: GpuDtype = 'f32') {
    this.size = shapeSize(shape);
  }
  /** Bytes the tensor's values occupy (4 per value; f16: 4 per pair of values; quantised: quantBytes). */
  get bytes(): number {
    if (this.dtype === 'q8_0' || this.dtype === 'q4_0') return quantBytes(this.dtype, this.shape[0], this.shape[1]);
    return this.dtype === 'f16' ? Math.ceil(this.size / 2) * 4 : this.size * 4;
  }
}

/**
 * A 2-D tensor [rows, cols] split by rows across several buffers, because one buffer cannot hold or
 * bind it (maxStorageBufferBindingSize, maxBufferSize). Part i holds rows rowStart[i] ..
 * rowStart[i] + parts[i].shape[0] − 1, every part in the same dtype. Only linear() (as its weight),
 * embed() and sliceRows() (as the table) accept it; KernelHost.gpu() refuses it elsewhere.
 */
export class ChunkedTensor implements Tensor {
  readonly size: number;
  /** First row of each part. */
  readonly rowStart: readonly number[];
  released = false;
  constructor(readonly shape: readonly number[], readonly parts: readonly GpuTensor[], readonly owner: object) {
    this.size = shapeSize(shape);
    let r = 0;
    this.rowStart = parts.map((p) => { const s = r; r += p.shape[0]; return s; });
  }
  get dtype(): GpuDtype { return this.parts[0].dtype; }
}

/**
 * Uniform parameters of one dispatch, packed in declaration order as 4-byte scalars — the layout
 * of a WGSL struct whose members are all u32/i32/f32 (no padding). At most 64 scalars.
 */
export class Params {
  private readonly view = new DataView(new ArrayBuffer(PARAMS_BYTES));
  private n = 0;
  u32(x: number): this { this.view.setUint32(this.next(), x >>> 0, true); return this; }
  i32(x: number): this { this.view.setInt32(this.next(), x | 0, true); return this; }
  f32(x: number): this { this.view.setFloat32(this.next(), x, true); return this; }
  /** The packed bytes (always PARAMS_BYTES long; unused tail is zero). */
  get bytes(): Uint8Array { return new Uint8Array(this.view.buffer); }
  private next(): number {
    if (this.n >= PARAMS_BYTES) throw new Error(`kernel params exceed ${PARAMS_BYTES / 4} scalars`);
    const o = this.n;
    this.n += 4;
    return o;
  }
}

/** Size of one uniform slot; also WebGPU's usual minUniformBufferOffsetAlignment. */
export const PARAMS_BYTES = 256;

/**
 * Which kernel variants suit the adapter. 'gpu': a hardware GPU, where a reduction is split across
 * the lanes of a workgroup and combined in workgroup memory (many invocations, coalesced loads).
 * 'cpu': a CPU implementation of WebGPU (SwiftShader, lavapipe), where each workgroup runs on one
 * thread and every workgroupBarrier switches between all of its invocation groups: there the
 * kernels give one invocation a whole output (a dot product, a row, a head) and use no barriers.
 * Both are exact implementations of the same ops; only their speed differs.
 */
export type KernelTuning = 'gpu' | 'cpu';

/**
 * Flash-decoding (split-K attention, ops/attention_split.wgsl.ts) policy: 'auto' splits long
 * contexts by the adapter's rule (splitPlan), 'off' never splits, { chunk } always splits the
 * visible keys into chunks of that many keys when there are more (tests and benchmarks).
 */
export type FlashDecoding = 'auto' | 'off' | { chunk: number };

/**
 * Arithmetic type of the linear kernels' products (ops/linear_gemv.wgsl.ts): 'f16' (WGSL `enable
 * f16`, the device's 'shader-f16') on weights stored as binary16, else 'f32'.
 */
export type ComputeType = 'f32' | 'f16';

/** How a GEMV or norm sums across invocations: a tree in workgroup memory, or subgroupAdd ('subgroups'). */
export type Reduction = 'tree' | 'subgroup';

/** Workgroup counts [x, y, z] for a dispatch. */
export type Workgroups = readonly [number, number, number];

/**
 * What a WGSL op wrapper (workers/engine/ops/*.wgsl.ts) needs from the WebGPU backend. Kernels
 * bind `@group(0) @binding(0) var<uniform> p` for their params and storage buffers at bindings
 * 1, 2, … in the order passed to `dispatch`.
 */
export interface KernelHost {
  /** The most workgroups per grid dimension (maxComputeWorkgroupsPerDimension). */
  readonly maxWorkgroupsPerDim: number;
  /** Which kernel variants to dispatch (see KernelTuning). */
  readonly tuning: KernelTuning;
  /** 'gpu' tuning: whether prefill matmuls with in % 4 = 0 take the vec4 register-tiled kernel (WebGpuOptions.vec4Matmul). */
  readonly vec4Matmul: boolean;
  /** Whether attention splits long contexts across workgroups (WebGpuOptions.flashDecoding). */
  readonly flashDecoding: FlashDecoding;
  /** Hardware threads of the machine (navigator.hardwareConcurrency): 'cpu' tuning sizes its splits by them. */
  readonly threads: number;
  /** 'f16': linear kernels multiply binary16 weights in binary16 (WebGpuOptions.computeDtype, on a device with 'shader-f16'). */
  readonly compute: ComputeType;
  /** Whether GEMV and norm reductions use subgroupAdd (WebGpuOptions.subgroups, on a device with 'subgroups'). */
  readonly subgroups: boolean;
  /** Compiles the pipeline for `key` on first use (from `code()`), then returns the cached one. */
  pipeline(key: string, code: () => string): GPUComputePipeline;
  /**
   * Validates that t is a live single-buffer tensor of this backend, float32 unless `allowF16`.
   * @throws Error otherwise; for a ChunkedTensor, naming the ops that accept one.
   */
  gpu(t: Tensor, allowF16?: boolean): GpuTensor;
  /**
   * The buffers of a weight or table that may be row-chunked (ChunkedTensor) or f16: its parts with
   * their first rows, or the tensor itself with row 0.
   * @throws Error as gpu() does for a released or foreign tensor.
   */
  rowParts(t: Tensor): { part: GpuTensor; row0: number }[];
  /** A new uninitialised float32 tensor. @throws Error when it exceeds the device's limits. */
  alloc(shape: readonly number[]): GpuTensor;
  /** A new tensor holding host data (ids, masks, tables) for one op; the caller releases it. */
  hostData(data: Float32Array | Int32Array | Uint32Array, shape?: readonly number[]): GpuTensor;
  /** Records one dispatch (bindings: 0 = params, 1.. = tensors in order). */
  dispatch(pipeline: GPUComputePipeline, tensors: readonly GpuTensor[], params: Params, groups: Workgroups): void;
  /**
   * Records one dispatch whose workgroup counts are read on the GPU, when it runs, from three u32
   * words of `args` at byte `offset` (dispatchWorkgroupsIndirect; written by an earlier dispatch).
   * Zero workgroups run nothing, so a kernel reads no buffer for work a previous kernel found absent.
   */
  dispatchIndirect(pipeline: GPUComputePipeline, tensors: readonly GpuTensor[], params: Params, args: GpuTensor, offset: number): void;
  /** Frees a temporary tensor (returns its buffer to the pool). */
  release(t: Tensor): void;
}

/**
 * Spreads `count` workgroups over a 2-D grid so that no dimension exceeds `maxPerDim` (WebGPU's
 * default limit is 65 535). Kernels recover the flat index as `wid.x + wid.y * nwg.x` and skip
 * indices ≥ count (the grid may overshoot by less than one row).
 */
export function grid(count: number, maxPerDim: number): Workgroups {
  if (count <= maxPerDim) return [Math.max(count, 1), 1, 1];
  const y = Math.ceil(count / maxPerDim);
  if (y > maxPerDim) throw new Error(`dispatch of ${count} workgroups exceeds ${maxPerDim}² (maxComputeWorkgroupsPerDimension)`);
  return [Math.ceil(count / y), y, 1];
}
