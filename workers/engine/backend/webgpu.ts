import type { Activation, AttentionBackwardParams, AttentionGrads, AttentionParams, AttentionResult, Backend, ExpertMlp, FusedOps, QkvFusion, RowGroups, RowOp, Tensor } from './backend';
import { shapeSize } from './backend';
import { packF16, unpackF16 } from './f16';
import { dequantise, formatLabel, quantBytes, type QuantizedMatrix } from './quant';
import { ChunkedTensor, GpuTensor, PARAMS_BYTES, type ComputeType, type FlashDecoding, type KernelHost, type KernelTuning, type Params, type Workgroups } from './webgpu_host';
import { actGpu, gatedActGpu } from '../ops/activation.wgsl';
import { addGpu, subGpu } from '../ops/add.wgsl';
import { attentionGpu } from '../ops/attention.wgsl';
import { gatherColsGpu, sliceColsGpu } from '../ops/columns.wgsl';
import { moeRouteGpu } from '../ops/moe_route.wgsl';
import { moeExpertsGpu } from '../ops/moe_experts.wgsl';
import { embedGpu } from '../ops/embed.wgsl';
import { linearGpu } from '../ops/linear.wgsl';
import { fusedMaxRows, linearFusedGpu } from '../ops/linear_fused.wgsl';
import { isQuantTensor, linearQuantGpu } from '../ops/linear_quant.wgsl';
import { linearUnfused } from '../ops/linear_unfused';
import { logSoftmaxGpu, softcapGpu, topkGpu } from '../ops/logits.wgsl';
import { layerNormGpu, rmsNormGpu } from '../ops/norm.wgsl';
import { ropeGpu, ropePositions } from '../ops/rope.wgsl';
import { qkvRopeGpu } from '../ops/qkv_rope.wgsl';
import { writeRowsGpu } from '../ops/write_rows.wgsl';
import { rowOpGpu } from '../ops/row_op.wgsl';
import { saeActivationGpu } from '../ops/sae_act.wgsl';
import { linearBackwardGpu } from '../ops/linear_backward.wgsl';
import { layerNormBackwardGpu, rmsNormBackwardGpu } from '../ops/norm_backward.wgsl';
import { actBackwardGpu, gatedActBackwardGpu } from '../ops/activation_backward.wgsl';
import { attentionBackwardGpu } from '../ops/attention_backward.wgsl';

/** Dispatches recorded before the batch is submitted (also the number of uniform slots per batch). */
const BATCH_DISPATCHES = 256;
/** Staged upload bytes after which the batch is submitted early (bounds staging memory while loading). */
const BATCH_STAGING_BYTES = 64 * 1024 * 1024;
const STORAGE = 0x80 | 0x04 | 0x08 | 0x100; // GPUBufferUsage.STORAGE | COPY_SRC | COPY_DST | INDIRECT (dispatchIndirect's arguments)
const MIB = 1024 * 1024;
/** Bind groups kept for reuse (BindGroupCache) before the cache starts over. */
const BIND_GROUP_CACHE = 4096;

const cols = (t: Tensor): number => t.shape[t.shape.length - 1];
const rowsOf = (t: Tensor): number => (cols(t) === 0 ? 0 : t.size / cols(t));
const mib = (bytes: number): string => `${(bytes / MIB).toFixed(1)} MiB`;

/**
 * Buffer size class for `bytes`: powers of two up to 64 KiB, then eight steps per power of two
 * (≤ 12.5 % slack), so released buffers are reused by later tensors of similar size.
 */
export function sizeClass(bytes: number): number {
  const b = Math.max(256, Math.ceil(bytes / 4) * 4);
  const pow = 2 ** Math.ceil(Math.log2(b));
  if (pow <= 64 * 1024) return pow;
  const step = pow / 16;
  return Math.ceil(b / step) * step;
}

/** Options of WebGpuBackend.create(). */
export interface WebGpuOptions {
  /**
   * Largest buffer, in bytes, that one uploaded weight part may occupy (default and upper bound:
   * the device's min(maxStorageBufferBindingSize, maxBufferSize)). Tests set it small so that small
   * matrices are split as a real model's embedding is on a real device; other tensors (activations,
   * the KV cache) are still checked against the device's own limits.
   */
  maxWeightBufferBytes?: number;
  /**
   * Kernel variants to dispatch (see KernelTuning). Default: 'cpu' on a CPU implementation of
   * WebGPU (adapterTuning), else 'gpu'. Tests set it to run both on one adapter.
   */
  tuning?: KernelTuning;
  /**
   * Offer the fused decode kernels (Backend.fused; default true). Benchmarks turn them off to
   * measure the unfused op chain in the same run; 'linear' offers the fused linear kernels only
   * (no fused QKV + RoPE + KV write: FusedOps.qkv always declines).
   */
  fusedKernels?: boolean | 'linear';
  /** 'gpu' tuning: prefill matmuls take the vec4 register-tiled kernel where in % 4 = 0 (default true; benchmarks compare). */
  vec4Matmul?: boolean;
  /**
   * Flash-decoding for long contexts (ops/attention_split.wgsl.ts): 'auto' (default) splits the keys
   * of a call across workgroups when one per head would leave the device idle; 'off' keeps the
   * one-pass kernel; { chunk } forces chunks of that many keys (tests, benchmarks).
   */
  flashDecoding?: FlashDecoding;
  /** Reuse bind groups across dispatches with the same pipeline and buffers (default true; benchmarks compare). */
  cacheBindGroups?: boolean;
  /**
   * Arithmetic of the linear kernels on weights stored as binary16 (load option weightDtype 'f16'):
   * 'f32' (default) unpacks them and computes in float32; 'f16' multiplies in binary16 with a
   * float32 running sum (ops/linear_gemv.wgsl.ts; activations stay float32 at every hook) where the
   * adapter has 'shader-f16', and falls back to 'f32' where it has not (WebGpuBackend.compute says
   * which was granted). Results differ from float32 by binary16 rounding, ~2⁻¹¹ per product.
   */
  computeDtype?: ComputeType;
  /**
   * Sum GEMV and norm reductions with subgroupAdd where the adapter has 'subgroups' (default true;
   * benchmarks and tests compare with false, the workgroup-memory tree).
   */
  subgroups?: boolean;
}

/**
 * 'cpu' when the adapter is a CPU implementation of WebGPU: the fallback adapter
 * (adapter.info.isFallbackAdapter; Chromium's SwiftShader reports it) or one whose vendor,
 * architecture or description names SwiftShader, llvmpipe or lavapipe; else 'gpu'.
 */
export function adapterTuning(info: Partial<GPUAdapterInfo>): KernelTuning {
  const names = [info.vendor, info.architecture, info.device, info.description].join(' ');
  return info.isFallbackAdapter || /swiftshader|llvmpipe|lavapipe/i.test(names) ? 'cpu' : 'gpu';
}

/** Memory held by the backend, for tests and the UI's memory readout. */
export interface GpuMemoryStats {
  /** Buffers created and not yet destroyed (live tensors, pooled, staging, uniforms). */
  buffers: number;
  /** Bytes in those buffers. */
  bytes: number;
  /** Buffers waiting in the pool for reuse. */
  pooled: number;
  /** Compiled compute pipelines (one per kernel variant). */
  pipelines: number;
}

/**
 * The WebGPU backend: every Backend op as a WGSL kernel written for this engine
 * (workers/engine/ops/*.wgsl.ts), float32 throughout unless WebGpuOptions.computeDtype asks for binary16
 * products on binary16 weights (where the device has 'shader-f16').
 *
 * - Recording: ops are recorded into one command encoder (dispatches share a compute pass; copies
 *   close it) and submitted when a result is read, on sync(), or every 256 dispatches. Each
 *   dispatch's uniforms take a 256-byte slot of a per-batch arena that is written with one
 *   queue.writeBuffer just before the submit.
 * - Large weights: an uploaded 2-D tensor larger than one buffer may bind (see WebGpuOptions) is
 *   split by rows into a ChunkedTensor of parts that each fit; linear() computes each part's output
 *   columns into one result, embed() and sliceRows() gather from the part holding each row, and
 *   every other op refuses it with a message saying so.
 * - Memory: storage buffers are pooled by size class; release() returns a tensor's buffer to the
 *   pool at once (later work in the same batch may reuse it: the queue orders it after earlier
 *   readers). Host data goes in with queue.writeBuffer when the buffer is new, else through a
 *   mapped staging buffer copied in command order. dispose() destroys every buffer and the device.
 * - Tuning: kernels whose best shape differs between hardware GPUs and CPU implementations of
 *   WebGPU (linear, attention, log_softmax, rowOp) come in a 'gpu' and a 'cpu' variant
 *   (KernelTuning), chosen from the adapter at create() unless WebGpuOptions.tuning says otherwise.
 * - Optional features: 'shader-f16' (computeDtype 'f16') and 'subgroups' (subgroupAdd in the GEMV
 *   and norm reductions; WebGpuOptions.subgroups) are requested where the adapter has them; every
 *   kernel has a core-WGSL fallback (ops/linear_gemv.wgsl.ts).
 * - Device loss: `lost` resolves with the reason; afterwards every op throws
 *   "GPU device lost (reason): reload the model".
 */
export class WebGpuBackend implements Backend, KernelHost {
  readonly kind = 'webgpu' as const;
  readonly maxWorkgroupsPerDim: number;
  readonly tuning: KernelTuning;
  readonly vec4Matmul: boolean;
  readonly flashDecoding: FlashDecoding;
  readonly threads: number;
  readonly compute: ComputeType;
  readonly subgroups: boolean;
  private readonly cacheBindGroups: boolean;
  /** Resolves when the device is lost (or destroyed by dispose()); the worker reports it and reloads. */
  readonly lost: Promise<GPUDeviceLostInfo>;
  /** Why the device was lost, once it has been; null while it works. */
  lostReason: string | null = null;

  private readonly pipelines = new Map<string, GPUComputePipeline>();
  /** Each pipeline's explicit bind group layout (binding 0: the uniform slot, with a dynamic offset). */
  private readonly layouts = new Map<GPUComputePipeline, GPUBindGroupLayout>();
  private readonly bindGroups = new BindGroupCache(BIND_GROUP_CACHE);
  /** Bind groups created and reused since load (tests, bench/run-model.ts). */
  readonly bindGroupStats = { created: 0, reused: 0 };
  /** Keys of the compute pipelines compiled so far, in compile order (pipeline(); tests of model/warm_up.ts). */
  get pipelineKeys(): string[] {
    return [...this.pipelines.keys()];
  }
  private readonly pool = new Map<number, GPUBuffer[]>();
  private readonly readPool = new Map<number, GPUBuffer[]>();
  private readonly allBuffers = new Set<GPUBuffer>();
  private readonly uniforms: GPUBuffer;
  private readonly uniformHost = new Uint8Array(BATCH_DISPATCHES * PARAMS_BYTES);
  private encoder: GPUCommandEncoder | null = null;
  private pass: GPUComputePassEncoder | null = null;
  private dispatches = 0;
  private staging: GPUBuffer[] = [];
  private stagingBytes = 0;
  /** (cos, sin) tables of positions 0..rows−1 per invFreq (ropePositions), most recently used last. */
  private ropeTables: { invFreq: Float32Array; rows: number; table: GpuTensor }[] = [];
  /** Concatenated q/k/v biases by the q bias tensor (qkvBias). */
  private readonly qkvBiases = new WeakMap<Tensor, { k: Tensor; v: Tensor; cat: GpuTensor }>();
  private firstError: string | null = null;
  private disposed = false;
  /** The largest buffer one uploaded weight part may occupy, in bytes (see WebGpuOptions). */
  readonly weightBufferLimit: number;

  private constructor(readonly device: GPUDevice, readonly description: string, tuning: KernelTuning, options: WebGpuOptions) {
    this.maxWorkgroupsPerDim = device.limits.maxComputeWorkgroupsPerDimension;
    this.tuning = options.tuning ?? tuning;
    this.vec4Matmul = options.vec4Matmul !== false;
    this.flashDecoding = options.flashDecoding ?? 'auto';
    this.threads = (globalThis as { navigator?: { hardwareConcurrency?: number } }).navigator?.hardwareConcurrency || 4;
    this.compute = options.computeDtype === 'f16' && device.features.has('shader-f16') ? 'f16' : 'f32';
    this.subgroups = options.subgroups !== false && device.features.has('subgroups');
    this.cacheBindGroups = options.cacheBindGroups !== false;
    this.weightBufferLimit = Math.min(this.deviceLimit(), options.maxWeightBufferBytes ?? Infinity);
    if (options.fusedKernels !== false) {
      this.fused = {
        maxRows: fusedMaxRows(this), foldsNorm: this.tuning === 'gpu',
        linear: (x, w, bias, f) => (isQuantTensor(w) || (f.gateUp && isQuantTensor(f.gateUp.w)) ? linearUnfused(this, x, w, bias, f) : linearFusedGpu(this, x, w, bias, f)),
        qkv: (f: QkvFusion) => options.fusedKernels === 'linear' ? null : qkvRopeGpu(this, f, f.rope ? this.ropeTable(f.rope.invFreq, f.pos0 + rowsOf(f.x)) : null, f.q.b && f.k.b && f.v.b ? this.qkvBias(f.q.b, f.k.b, f.v.b) : null, device.limits.maxStorageBuffersPerShaderStage),
      };
    }
    this.uniforms = this.createBuffer(this.uniformHost.length, 0x40 | 0x08); // UNIFORM | COPY_DST
    this.lost = device.lost.then((info) => {
      this.lostReason = `${info.reason}${info.message ? `: ${info.message}` : ''}`;
      return info;
    });
    device.addEventListener('uncapturederror', (e) => {
      this.firstError ??= (e as GPUUncapturedErrorEvent).error.message;
    });
  }

  /**
   * Requests a high-performance adapter and a device with the adapter's largest
   * maxStorageBufferBindingSize, maxBufferSize and maxComputeWorkgroupStorageSize, and the optional
   * features the options use where the adapter has them: 'shader-f16' (computeDtype 'f16'; f16
   * weight storage alone needs none) and 'subgroups'. Each call gets a new device: after a device
   * loss, create() again and reload the model.
   * @throws Error saying why WebGPU is unusable (no navigator.gpu, no adapter, device refused), so
   *   the caller can fall back to the CPU backend with that reason.
   */
  static async create(options: WebGpuOptions = {}): Promise<WebGpuBackend> {
    const gpu = (globalThis as { navigator?: { gpu?: GPU } }).navigator?.gpu;
    if (!gpu) throw new Error('WebGPU is not available here (navigator.gpu is missing)');
    const adapter = await gpu.requestAdapter({ powerPreference: 'high-performance' });
    if (!adapter) throw new Error('WebGPU is present but no GPU adapter was found (requestAdapter() returned null)');
    const l = adapter.limits;
    let device: GPUDevice;
    try {
      const wanted: GPUFeatureName[] = [];
      if (options.computeDtype === 'f16') wanted.push('shader-f16');
      if (options.subgroups !== false) wanted.push('subgroups' as GPUFeatureName);
      device = await adapter.requestDevice({
        requiredFeatures: wanted.filter((f) => adapter.features.has(f)),
        requiredLimits: {
          maxStorageBufferBindingSize: l.maxStorageBufferBindingSize,
          maxBufferSize: l.maxBufferSize,
          maxComputeWorkgroupStorageSize: l.maxComputeWorkgroupStorageSize,
          maxStorageBuffersPerShaderStage: l.maxStorageBuffersPerShaderStage,
        },
      });
    } catch (e) {
      throw new Error(`the GPU adapter refused to create a device (${(e as Error).message})`);
    }
    const info: Partial<GPUAdapterInfo> = adapter.info ?? {};
    const name = [info.vendor, info.architecture, info.device, info.description].filter((s) => s).join(' ');
    return new WebGpuBackend(device, `WebGPU: ${name || 'unknown adapter'}${info.isFallbackAdapter ? ' (software fallback)' : ''}`, adapterTuning(info), options);
  }

  // ---------------------------------------------------------------- memory and recording

  /** Buffers, bytes and pipelines currently held (pool included). */
  memoryStats(): GpuMemoryStats {
    let bytes = 0;
    for (const b of this.allBuffers) bytes += b.size;
    let pooled = 0;
    for (const list of this.pool.values()) pooled += list.length;
    return { buffers: this.allBuffers.size, bytes, pooled, pipelines: this.pipelines.size };
  }

  private alive(): void {
    if (this.disposed) throw new Error('the WebGPU backend was disposed: reload the model');
    if (this.lostReason !== null) throw new Error(`GPU device lost (${this.lostReason}): reload the model`);
  }

  private createBuffer(size: number, usage: number, mappedAtCreation = false): GPUBuffer {
    const b = this.device.createBuffer({ size, usage, mappedAtCreation });
    this.allBuffers.add(b);
    return b;
  }

  private destroyBuffer(b: GPUBuffer): void {
    this.bindGroups.forget(b);
    this.allBuffers.delete(b);
    b.destroy();
  }

  /** A pooled storage buffer for `bytes`, and whether it is new (so nothing recorded refers to it). */
  private storage(bytes: number, shape: readonly number[]): { buffer: GPUBuffer; fresh: boolean } {
    this.checkLimit(bytes, shape);
    const cls = this.classOf(bytes);
    const free = this.pool.get(cls);
    if (free?.length) return { buffer: free.pop()!, fresh: false };
    return { buffer: this.createBuffer(cls, STORAGE), fresh: true };
  }

  /** sizeClass(bytes), but never above maxBufferSize. */
  private classOf(bytes: number): number {
    const max = this.device.limits.maxBufferSize;
    return Math.max(Math.min(sizeClass(bytes), max - (max % 4)), Math.ceil(bytes / 4) * 4);
  }

  /** The largest tensor one buffer can hold and bind: min(maxStorageBufferBindingSize, maxBufferSize). */
  private deviceLimit(): number {
    const lim = this.device.limits;
    return Math.min(lim.maxStorageBufferBindingSize, lim.maxBufferSize);
  }

  /** @throws Error naming the tensor's size and the limit when one buffer cannot hold it. */
  private checkLimit(bytes: number, shape: readonly number[], limit = this.deviceLimit()): void {
    if (bytes > limit) {
      const which = limit < this.deviceLimit() ? 'the weight buffer limit set in WebGpuOptions' : "this GPU's maxStorageBufferBindingSize";
      throw new Error(`tensor [${shape}] needs ${bytes} bytes (${mib(bytes)}), more than ${which} of ${limit} bytes (${mib(limit)}); it must be split into smaller tensors`);
    }
  }

  alloc(shape: readonly number[]): GpuTensor {
    this.alive();
    return new GpuTensor(shape, this.storage(shapeSize(shape) * 4, shape).buffer, this);
  }

  gpu(t: Tensor, allowF16 = false): GpuTensor {
    this.alive();
    if (t instanceof ChunkedTensor && t.owner === this) {
      throw new Error(`tensor [${t.shape}] is split across ${t.parts.length} buffers (it is larger than one buffer may bind, ${this.weightBufferLimit} bytes); only linear() (as its weight), embed() and sliceRows() (as the table) accept it`);
    }
    if (!(t instanceof GpuTensor) || t.owner !== this) throw new Error('tensor belongs to another backend');
    if (t.released) throw new Error(`tensor [${t.shape}] was released`);
    if ((t.dtype === 'q8_0' || t.dtype === 'q4_0') && !allowF16) throw new Error(`tensor [${t.shape}] is stored as ${formatLabel(t.dtype)}, which only linear() accepts (as its weight)`);
    if (t.dtype === 'f16' && !allowF16) throw new Error(`tensor [${t.shape}] is stored as f16, which only linear() (as its weight), embed() and sliceRows() (as the table) accept`);
    return t;
  }

  rowParts(t: Tensor): { part: GpuTensor; row0: number }[] {
    if (!(t instanceof ChunkedTensor && t.owner === this)) return [{ part: this.gpu(t, true), row0: 0 }];
    this.alive();
    if (t.released) throw new Error(`tensor [${t.shape}] was released`);
    return t.parts.map((part, i) => ({ part, row0: t.rowStart[i] }));
  }

  private enc(): GPUCommandEncoder {
    this.encoder ??= this.device.createCommandEncoder();
    return this.encoder;
  }

  private endPass(): void {
    this.pass?.end();
    this.pass = null;
  }

  /** Records a buffer copy (closes the open compute pass). */
  private copy(src: GPUBuffer, srcOffset: number, dst: GPUBuffer, dstOffset: number, bytes: number): void {
    if (bytes === 0) return;
    this.endPass();
    this.enc().copyBufferToBuffer(src, srcOffset, dst, dstOffset, bytes);
  }

  private write(t: GpuTensor, fresh: boolean, data: Float32Array | Int32Array | Uint32Array): void {
    if (data.byteLength === 0) return;
    if (fresh) {
      this.device.queue.writeBuffer(t.buffer, 0, data.buffer, data.byteOffset, data.byteLength);
      return;
    }
    const st = this.createBuffer(data.byteLength, 0x04, true); // COPY_SRC, mapped
    new Uint8Array(st.getMappedRange()).set(new Uint8Array(data.buffer, data.byteOffset, data.byteLength));
    st.unmap();
    this.copy(st, 0, t.buffer, 0, data.byteLength);
    this.staging.push(st);
    this.stagingBytes += data.byteLength;
    if (this.stagingBytes > BATCH_STAGING_BYTES) this.flush();
  }

  hostData(data: Float32Array | Int32Array | Uint32Array, shape: readonly number[] = [data.length]): GpuTensor {
    this.alive();
    const { buffer, fresh } = this.storage(data.length * 4, shape);
    const t = new GpuTensor(shape, buffer, this);
    this.write(t, fresh, data);
    return t;
  }

  /**
   * Compiles `code` once per key with an explicit layout read from its declarations: binding 0 the
   * uniform params (dynamic offset: each dispatch's slot of the per-batch arena), bindings 1.. storage
   * buffers, read-only where declared `var<storage, read>`. The dynamic offset is what lets a bind
   * group outlive one dispatch (dispatch()).
   */
  pipeline(key: string, code: () => string): GPUComputePipeline {
    let p = this.pipelines.get(key);
    if (!p) {
      const src = code();
      const module = this.device.createShaderModule({ label: key, code: src });
      const entries: GPUBindGroupLayoutEntry[] = [];
      for (const m of src.matchAll(/@binding\((\d+)\)\s*var<(uniform|storage)\s*(?:,\s*(read_write|read))?\s*>/g)) {
        const binding = Number(m[1]);
        const type: GPUBufferBindingType = m[2] === 'uniform' ? 'uniform' : m[3] === 'read_write' ? 'storage' : 'read-only-storage';
        entries.push({ binding, visibility: 0x4, buffer: { type, hasDynamicOffset: binding === 0 } }); // GPUShaderStage.COMPUTE
      }
      const layout = this.device.createBindGroupLayout({ label: key, entries });
      p = this.device.createComputePipeline({ label: key, layout: this.device.createPipelineLayout({ bindGroupLayouts: [layout] }), compute: { module, entryPoint: 'main' } });
      this.pipelines.set(key, p);
      this.layouts.set(p, layout);
    }
    return p;
  }

  /**
   * Records one dispatch. Its bind group is looked up by (pipeline, buffers, bound sizes) and made
   * only on a miss: a decode step binds the same weights, KV cache and (pooled, reused in the same
   * order) activation buffers every step, and the uniform slot is a dynamic offset, not part of it.
   */
  dispatch(pipeline: GPUComputePipeline, tensors: readonly GpuTensor[], params: Params, groups: Workgroups): void {
    this.bind(pipeline, tensors, params).dispatchWorkgroups(groups[0], groups[1], groups[2]);
  }

  dispatchIndirect(pipeline: GPUComputePipeline, tensors: readonly GpuTensor[], params: Params, args: GpuTensor, offset: number): void {
    if (offset % 4 !== 0 || offset + 12 > args.bytes) throw new Error(`dispatchIndirect: arguments at byte ${offset} lie outside the ${args.bytes}-byte buffer or are not 4-byte aligned`);
    this.bind(pipeline, tensors, params).dispatchWorkgroupsIndirect(args.buffer, offset);
  }

  /** Sets the pipeline, its params' uniform slot and the bind group of `tensors` in the open compute pass, which it returns. */
  private bind(pipeline: GPUComputePipeline, tensors: readonly GpuTensor[], params: Params): GPUComputePassEncoder {
    this.alive();
    if (this.dispatches === BATCH_DISPATCHES) this.flush();
    const slot = this.dispatches++;
    this.uniformHost.set(params.bytes, slot * PARAMS_BYTES);
    const layout = this.layouts.get(pipeline);
    if (!layout) throw new Error(`pipeline ${pipeline.label} was not made by this backend`);
    const sizes = tensors.map((t) => Math.max(4, t.bytes));
    let bind = this.cacheBindGroups ? this.bindGroups.get(pipeline, tensors.map((t) => t.buffer), sizes) : undefined;
    if (bind) this.bindGroupStats.reused++;
    else {
      bind = this.device.createBindGroup({
        layout,
        entries: [
          { binding: 0, resource: { buffer: this.uniforms, offset: 0, size: PARAMS_BYTES } },
          ...tensors.map((t, i) => ({ binding: i + 1, resource: { buffer: t.buffer, offset: 0, size: sizes[i] } })),
        ],
      });
      if (this.cacheBindGroups) this.bindGroups.set(pipeline, tensors.map((t) => t.buffer), sizes, bind);
      this.bindGroupStats.created++;
    }
    this.enc();
    this.pass ??= this.encoder!.beginComputePass();
    this.pass.setPipeline(pipeline);
    this.pass.setBindGroup(0, bind, [slot * PARAMS_BYTES]);
    return this.pass;
  }

  /** Submits everything recorded so far (uniforms first) and starts a new batch. */
  private flush(): void {
    if (!this.encoder) return;
    this.endPass();
    if (this.dispatches > 0) this.device.queue.writeBuffer(this.uniforms, 0, this.uniformHost.buffer, 0, this.dispatches * PARAMS_BYTES);
    this.device.queue.submit([this.encoder.finish()]);
    this.encoder = null;
    this.dispatches = 0;
    for (const b of this.staging) this.destroyBuffer(b);
    this.staging = [];
    this.stagingBytes = 0;
  }

  /** Throws the first WebGPU validation/out-of-memory error reported since the last check. */
  private checkErrors(): void {
    const e = this.firstError;
    if (e !== null) {
      this.firstError = null;
      throw new Error(`WebGPU error: ${e}`);
    }
  }

  // ---------------------------------------------------------------- Backend: data movement

  /**
   * Copies host data into a new float32 tensor. A 2-D tensor larger than weightBufferLimit becomes a
   * ChunkedTensor: row parts of ⌊limit / row bytes⌋ rows, the last one shorter.
   * @throws Error when data.length ≠ product(shape), or a tensor that is not 2-D (or one row of a
   *   2-D one) exceeds the limit.
   */
  upload(data: Float32Array, shape: readonly number[]): Tensor {
    return this.uploadAs(data, shape, 'f32');
  }

  /** upload(): the device holds its own copy, so the host array is not kept. */
  adopt(data: Float32Array, shape: readonly number[]): Tensor {
    return this.upload(data, shape);
  }

  /**
   * Uploads a weight stored as IEEE binary16 (half the memory and bandwidth; values rounded to
   * nearest even). Kernels unpack with unpack2x16float and compute in float32, so this needs no
   * 'shader-f16'. Only linear() (as its weight), embed() and sliceRows() (as the table) accept the
   * result; read() returns the rounded values. Split by rows as upload() is.
   * @throws Error as upload() does.
   */
  uploadF16(data: Float32Array, shape: readonly number[]): Tensor {
    return this.uploadAs(data, shape, 'f16');
  }

  /**
   * Uploads a block-quantised weight [out, in] in its packed words (Q8_0 8.5 / Q4_0 4.5 bits per
   * weight, backend/quant.ts); linear() and linearBackward() dequantise in their kernels
   * (ops/linear_quant.wgsl.ts, ops/linear_backward.wgsl.ts), read() on the host. One buffer: a matrix larger than weightBufferLimit is refused (not split).
   * @throws Error when the packed words exceed the limit.
   */
  uploadQuant(q: QuantizedMatrix): Tensor {
    this.alive();
    this.checkLimit(quantBytes(q.format, q.shape[0], q.shape[1]), q.shape, this.weightBufferLimit);
    const { buffer, fresh } = this.storage(q.words.byteLength, q.shape);
    const t = new GpuTensor(q.shape, buffer, this, q.format);
    this.write(t, fresh, q.words);
    return t;
  }

  private uploadAs(data: Float32Array, shape: readonly number[], dtype: 'f32' | 'f16'): Tensor {
    this.alive();
    const size = shapeSize(shape);
    const limit = this.weightBufferLimit;
    const bytesOf = (n: number): number => (dtype === 'f16' ? Math.ceil(n / 2) * 4 : n * 4);
    const whole = shape.length !== 2 || bytesOf(size) <= limit;
    if (whole) this.checkLimit(bytesOf(size), shape, limit);
    if (data.length !== size) throw new Error(`tensor data has ${data.length} values, shape [${shape}] needs ${size}`);
    if (whole) return this.uploadPart(data, shape, dtype);
    const [rows, width] = shape;
    let per = Math.floor(limit / (dtype === 'f16' ? 2 * width : 4 * width));
    if (per > 0 && bytesOf(per * width) > limit) per--; // an odd count of halves pads the last word
    if (per === 0) this.checkLimit(bytesOf(width), [1, width], limit);
    const parts: GpuTensor[] = [];
    for (let r = 0; r < rows; r += per) {
      const n = Math.min(per, rows - r);
      parts.push(this.uploadPart(data.subarray(r * width, (r + n) * width), [n, width], dtype));
    }
    return new ChunkedTensor(shape, parts, this);
  }

  /** One buffer holding `data` as float32 or packed halves (the caller checked its size). */
  private uploadPart(data: Float32Array, shape: readonly number[], dtype: 'f32' | 'f16'): GpuTensor {
    const values = dtype === 'f16' ? packF16(data) : data;
    const { buffer, fresh } = this.storage(values.byteLength, shape);
    const t = new GpuTensor(shape, buffer, this, dtype);
    this.write(t, fresh, values);
    return t;
  }

  zeros(shape: readonly number[]): Tensor {
    const t = this.alloc(shape);
    if (t.bytes > 0) {
      this.endPass();
      this.enc().clearBuffer(t.buffer, 0, t.bytes);
    }
    return t;
  }

  /**
   * Copies the tensor to a MAP_READ staging buffer, submits the batch and maps it (a ChunkedTensor
   * part by part, concatenated).
   */
  async read(t: Tensor): Promise<Float32Array> {
    if (t instanceof ChunkedTensor && t.owner === this) {
      const out = new Float32Array(t.size);
      for (const { part, row0 } of this.rowParts(t)) out.set(await this.read(part), row0 * cols(t));
      return out;
    }
    const g = this.gpu(t, true);
    const bytes = Math.max(4, g.bytes);
    const cls = this.classOf(bytes);
    const st = this.readPool.get(cls)?.pop() ?? this.createBuffer(cls, 0x01 | 0x08); // MAP_READ | COPY_DST
    this.copy(g.buffer, 0, st, 0, g.bytes);
    this.flush();
    try {
      await st.mapAsync(0x01); // GPUMapMode.READ
    } catch (e) {
      this.alive();
      throw new Error(`reading a [${t.shape}] tensor from the GPU failed (${(e as Error).message})`);
    }
    const raw = st.getMappedRange(0, bytes).slice(0, g.bytes);
    st.unmap();
    const out = g.dtype === 'f16' ? unpackF16(new Uint32Array(raw), g.size)
      : g.dtype === 'q8_0' || g.dtype === 'q4_0' ? dequantise({ format: g.dtype, shape: [g.shape[0], g.shape[1]], words: new Uint32Array(raw) })
        : new Float32Array(raw);
    const list = this.readPool.get(cls) ?? [];
    list.push(st);
    this.readPool.set(cls, list);
    this.checkErrors();
    return out;
  }

  release(t: Tensor): void {
    if (t instanceof ChunkedTensor && t.owner === this) {
      if (t.released) return;
      t.released = true;
      for (const p of t.parts) this.release(p);
      return;
    }
    if (!(t instanceof GpuTensor) || t.owner !== this) throw new Error('tensor belongs to another backend');
    if (t.released || this.disposed) return;
    t.released = true;
    const list = this.pool.get(t.buffer.size) ?? [];
    list.push(t.buffer);
    this.pool.set(t.buffer.size, list);
  }

  async sync(): Promise<void> {
    this.alive();
    this.flush();
    await this.device.queue.onSubmittedWorkDone();
    this.alive();
    this.checkErrors();
  }

  /** Destroys the pooled buffers of released tensors once the recorded work has finished (Backend.trimPool). */
  async trimPool(): Promise<void> {
    await this.sync();
    for (const list of this.pool.values()) for (const b of list) this.destroyBuffer(b);
    this.pool.clear();
  }

  /** Destroys every buffer this backend created and the device itself. Idempotent. */
  dispose(): void {
    if (this.disposed) return;
    this.disposed = true;
    this.pass = null;
    this.encoder = null;
    for (const b of this.allBuffers) b.destroy();
    this.allBuffers.clear();
    this.pool.clear();
    this.readPool.clear();
    this.pipelines.clear();
    this.layouts.clear();
    this.bindGroups.clear();
    this.ropeTables = [];
    this.device.destroy();
  }

  clone(t: Tensor): Tensor {
    const g = this.gpu(t);
    const y = this.alloc(t.shape);
    this.copy(g.buffer, 0, y.buffer, 0, g.bytes);
    return y;
  }

  /** A buffer copy; an f16 or row-chunked table (a weight) goes through the embed gather instead. */
  sliceRows(table: Tensor, start: number, n: number): Tensor {
    if (!(Number.isInteger(start) && Number.isInteger(n) && start >= 0 && n >= 0 && start + n <= rowsOf(table))) {
      throw new Error(`rows ${start}..${start + n} outside [0, ${rowsOf(table)})`);
    }
    const parts = this.rowParts(table);
    if (parts.length > 1 || parts[0].part.dtype === 'f16') return embedGpu(this, table, Int32Array.from({ length: n }, (_, i) => start + i), 1);
    const g = parts[0].part;
    const D = cols(table);
    const y = this.alloc([n, D]);
    this.copy(g.buffer, start * D * 4, y.buffer, 0, n * D * 4);
    return y;
  }

  concatRows(parts: readonly Tensor[]): Tensor {
    if (parts.length === 0) throw new Error('concatRows: no tensors to concatenate');
    const gs = parts.map((p) => this.gpu(p));
    const D = cols(parts[0]);
    if (parts.some((p) => cols(p) !== D)) throw new Error('concatRows: row widths differ');
    const y = this.alloc([parts.reduce((s, p) => s + rowsOf(p), 0), D]);
    let o = 0;
    for (const g of gs) {
      this.copy(g.buffer, 0, y.buffer, o, g.bytes);
      o += g.bytes;
    }
    return y;
  }

  /** A dispatch, not a copy: the KV-cache writes of the split attention path keep the compute pass open. */
  writeRows(cache: Tensor, x: Tensor, offset: number): void { writeRowsGpu(this, cache, x, offset); }

  // ---------------------------------------------------------------- Backend: kernels

  embed(table: Tensor, ids: Int32Array, scale: number): Tensor { return embedGpu(this, table, ids, scale); }
  linear(x: Tensor, w: Tensor, bias?: Tensor): Tensor { return isQuantTensor(w) ? linearQuantGpu(this, x, w, bias) : linearGpu(this, x, w, bias); }
  /** Fused decode kernels (ops/linear_fused.wgsl.ts), unless WebGpuOptions.fusedKernels is false. */
  readonly fused?: FusedOps;
  sliceCols(x: Tensor, start: number, width: number): Tensor { return sliceColsGpu(this, x, start, width); }
  add(a: Tensor, b: Tensor): Tensor { return addGpu(this, a, b); }
  sub(a: Tensor, b: Tensor): Tensor { return subGpu(this, a, b); }
  rmsNorm(x: Tensor, w: Tensor, eps: number, offset: number): Tensor { return rmsNormGpu(this, x, w, eps, offset); }
  layerNorm(x: Tensor, w: Tensor, b: Tensor | undefined, eps: number): Tensor { return layerNormGpu(this, x, w, b, eps); }

  /**
   * [b_q, b_k, b_v] in one buffer for the fused QKV kernel, made on first use (three copies) and
   * kept, like the weights it is derived from, until dispose().
   */
  private qkvBias(bq: Tensor, bk: Tensor, bv: Tensor): GpuTensor {
    const hit = this.qkvBiases.get(bq);
    if (hit && hit.k === bk && hit.v === bv) return hit.cat;
    const parts = [bq, bk, bv].map((t) => this.gpu(t));
    const cat = this.alloc([bq.size + bk.size + bv.size]);
    let o = 0;
    for (const g of parts) { this.copy(g.buffer, 0, cat.buffer, o, g.bytes); o += g.bytes; }
    this.qkvBiases.set(bq, { k: bk, v: bv, cat });
    return cat;
  }

  /**
   * The (cos, sin) table of positions 0.. for invFreq, covering at least `rows` positions: built on
   * the host once and regrown (doubling) when a longer context is reached, so decode steps upload
   * nothing. Up to 4 tables are kept (Gemma 3 has a local and a global invFreq).
   */
  private ropeTable(invFreq: Float32Array, rows: number): GpuTensor {
    const i = this.ropeTables.findIndex((t) => t.invFreq === invFreq);
    let entry = i >= 0 ? this.ropeTables.splice(i, 1)[0] : null;
    if (!entry || entry.rows < rows) {
      if (entry) this.release(entry.table);
      const grown = Math.max(64, 2 ** Math.ceil(Math.log2(rows)), entry ? 2 * entry.rows : 0);
      entry = { invFreq, rows: grown, table: this.hostData(ropePositions(grown, invFreq)) };
    }
    this.ropeTables.push(entry);
    if (this.ropeTables.length > 4) this.release(this.ropeTables.shift()!.table);
    return entry.table;
  }

  rope(x: Tensor, nHeads: number, headDim: number, rotaryDims: number, pos0: number, invFreq: Float32Array): Tensor {
    this.alive();
    if (invFreq.length * 2 !== rotaryDims) throw new Error(`rope: invFreq has ${invFreq.length} entries, rotaryDims ${rotaryDims} needs ${rotaryDims / 2}`);
    return ropeGpu(this, x, nHeads, headDim, rotaryDims, pos0, this.ropeTable(invFreq, pos0 + rowsOf(x)));
  }

  attention(q: Tensor, kCache: Tensor, vCache: Tensor, p: AttentionParams): AttentionResult { return attentionGpu(this, q, kCache, vCache, p); }
  act(x: Tensor, act: Activation): Tensor { return actGpu(this, x, act); }
  gatedAct(gate: Tensor, up: Tensor, act: Activation): Tensor { return gatedActGpu(this, gate, up, act); }
  softcap(x: Tensor, cap: number): Tensor { return softcapGpu(this, x, cap); }
  logSoftmax(x: Tensor): Tensor { return logSoftmaxGpu(this, x); }
  gatherCols(x: Tensor, idx: Int32Array): Tensor { return gatherColsGpu(this, x, idx); }
  topk(x: Tensor, k: number): Promise<{ values: Float32Array; indices: Int32Array }> { return topkGpu(this, (t) => this.read(t), x, k); }
  moeRoute(logits: Tensor, k: number, normTopk: boolean, forced?: Tensor): { indices: Tensor; weights: Tensor } { return moeRouteGpu(this, logits, k, normTopk, forced); }
  moeExperts(x: Tensor, indices: Tensor, weights: Tensor, experts: readonly ExpertMlp[], act: Activation): Tensor { return moeExpertsGpu(this, x, indices, weights, experts, act); }
  rowOp(x: Tensor, op: RowOp, rows: Uint8Array, groups?: RowGroups): Tensor { return rowOpGpu(this, x, op, rows, groups); }
  saeActivation(pre: Tensor, threshold: Tensor, k: number): Tensor { return saeActivationGpu(this, pre, threshold, k); }

  /** dy·w (ops/linear_backward.wgsl.ts) on the weight as stored: float32, binary16, or Q8_0 / Q4_0 dequantised in the kernel. */
  linearBackward(dy: Tensor, w: Tensor): Tensor { return this.linearBackwardSum([dy], [w]); }
  /** Σ_k dys[k]·ws[k] in one dispatch of ops/linear_backward.wgsl.ts (as many parts as the device's storage bindings allow). */
  linearBackwardSum(dys: readonly Tensor[], ws: readonly Tensor[]): Tensor {
    this.alive();
    return linearBackwardGpu(this, dys, ws, this.device.limits.maxStorageBuffersPerShaderStage);
  }
  rmsNormBackward(x: Tensor, w: Tensor, eps: number, offset: number, dy: Tensor): Tensor { return rmsNormBackwardGpu(this, x, w, eps, offset, dy); }
  layerNormBackward(x: Tensor, w: Tensor, eps: number, dy: Tensor): Tensor { return layerNormBackwardGpu(this, x, w, eps, dy); }
  actBackward(x: Tensor, dy: Tensor, act: Activation): Tensor { return actBackwardGpu(this, x, dy, act); }
  gatedActBackward(gate: Tensor, up: Tensor, dy: Tensor, act: Activation): { dGate: Tensor; dUp: Tensor } { return gatedActBackwardGpu(this, gate, up, dy, act); }
  attentionBackward(q: Tensor, k: Tensor, v: Tensor, pattern: Tensor, scores: Tensor | undefined, dz: Tensor, p: AttentionBackwardParams): AttentionGrads {
    return attentionBackwardGpu(this, q, k, v, pattern, scores, dz, p);
  }
}

/**
 * Bind groups by (pipeline, buffers, bound byte sizes). Buffers are named by a per-buffer id, so a
 * buffer that is destroyed must be forgotten (forget) before a new buffer could take its place; at
 * `capacity` entries the cache starts over (a bound on memory, not a correctness matter).
 */
class BindGroupCache {
  private readonly ids = new WeakMap<object, number>();
  private next = 0;
  private readonly groups = new Map<string, GPUBindGroup>();
  constructor(private readonly capacity: number) {}

  private id(o: object): number {
    let i = this.ids.get(o);
    if (i === undefined) { i = this.next++; this.ids.set(o, i); }
    return i;
  }

  private key(pipeline: GPUComputePipeline, buffers: readonly GPUBuffer[], sizes: readonly number[]): string {
    let k = String(this.id(pipeline));
    for (let i = 0; i < buffers.length; i++) k += `|${this.id(buffers[i])}:${sizes[i]}`;
    return k;
  }

  get(pipeline: GPUComputePipeline, buffers: readonly GPUBuffer[], sizes: readonly number[]): GPUBindGroup | undefined {
    return this.groups.get(this.key(pipeline, buffers, sizes));
  }

  set(pipeline: GPUComputePipeline, buffers: readonly GPUBuffer[], sizes: readonly number[], g: GPUBindGroup): void {
    if (this.groups.size >= this.capacity) this.groups.clear();
    this.groups.set(this.key(pipeline, buffers, sizes), g);
  }

  /** Drops every bind group that binds `b` (called before b is destroyed). */
  forget(b: GPUBuffer): void {
    const i = this.ids.get(b);
    if (i === undefined) return;
    for (const k of [...this.groups.keys()]) if (k.includes(`|${i}:`)) this.groups.delete(k);
    this.ids.delete(b);
  }

  clear(): void {
    this.groups.clear();
  }
}
