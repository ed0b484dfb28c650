/**
 * Our engine's rows of the model benchmark (bench/model.ts): prefill and greedy decode of one model
 * on one of our backends, with FLOP and byte counts from the model's spec, the lens grid against a
 * plain forward and (WebGPU) dispatches per decode step; the benchmark's options and result types.
 */
import { WebGpuBackend, type WebGpuOptions } from '../workers/engine/backend/webgpu';
import type { KernelTuning } from '../workers/engine/backend/webgpu_host';
import type { Backend } from '../workers/engine/backend/backend';
import { CpuBackend } from '../workers/engine/backend/cpu';
import { Engine } from '../workers/engine/engine';
import { HttpFiles } from '../workers/engine/io/model_files';
import { RunContext } from '../workers/engine/model/run_context';
import { decodeFlops, engineGreedy, interleaved, lensGrid, median, recordGpuWork, repeat } from './page_tools';
import type { GpuPeak } from './gpu_peak';

/**
 * 'webgpu-prev': our WebGPU backend with the kernels it had before the fused QKV kernel, cached bind
 * groups and the vec4 matmul (fused linear only, scalar tiled matmul, a bind group per dispatch);
 * 'webgpu-unfused': without any fused decode kernel (WebGpuOptions.fusedKernels false).
 */
export type Impl = 'webgpu' | 'webgpu-prev' | 'webgpu-unfused' | 'cpu' | 'tjs-wasm' | 'tjs-webgpu';

/** The WebGpuOptions of each of our WebGPU implementations. */
export const GPU_OPTIONS: Record<'webgpu' | 'webgpu-prev' | 'webgpu-unfused', WebGpuOptions> = {
  webgpu: {},
  'webgpu-prev': { fusedKernels: 'linear', vec4Matmul: false, cacheBindGroups: false },
  'webgpu-unfused': { fusedKernels: false },
};

export interface ModelBenchOptions {
  /** URL of the model folder (HF layout) for our engine. */
  modelUrl: string;
  /** transformers.js: env.localModelPath and the model id under it (with onnx/model.onnx). */
  tjsRoot: string;
  tjsModel: string;
  /** Prompt lengths. */
  ts: number[];
  nDecode: number;
  reps: number;
  warmup: number;
  impls: Impl[];
  /** Also time the lens grid against a plain forward (our engine). */
  lens: boolean;
  /** Scale of the peak measurement (1 on a real GPU, smaller on SwiftShader). */
  peakScale: number;
  /** Kernel variants of our WebGPU backend (default: the adapter's; 'gpu' on SwiftShader times the GPU kernels there). */
  tuning?: KernelTuning;
  /**
   * Threads of the CPU implementations (default 1): our CPU backend's WASM matmul (above 1 in a
   * dedicated worker, bench/model_cpu_worker.ts: its calling thread blocks in Atomics.wait, which a
   * page's main thread may not) and onnxruntime-web's numThreads for transformers.js wasm.
   */
  cpuThreads?: number;
  /**
   * The CPU implementations (cpu, tjs-wasm) loaded together, their repetitions alternating, so that
   * both see the same machine load (their ratio is then fair on a busy machine; no lens grid).
   */
  interleave?: boolean;
}

export interface Row {
  impl: Impl;
  T: number;
  prefillMs: number;
  decodeMs: number;
  prefillGflops: number;
  decodeGflops: number;
  /** Weight bytes streamed per decode token / decode time. */
  decodeGBs: number;
  forwardMs?: number;
  lensMs?: number;
  dispatchesPerDecodeStep?: number;
  /** Dispatches of block 0 in that step (between its hook_resid_pre and hook_resid_post). */
  dispatchesPerLayer?: number;
  /** Bind groups created in that step (the rest were reused from the cache). */
  bindGroupsPerDecodeStep?: number;
  /** Prompt + greedy ids (same prompt for every implementation: they should agree). */
  greedy: number[];
  /** CPU implementations: the threads it ran on (ours: those that had started; onnxruntime-web: numThreads). */
  threads?: number;
}

export interface ModelBenchResult {
  adapter: string;
  userAgent: string;
  crossOriginIsolated: boolean;
  peak: GpuPeak | null;
  paramsBytes: number;
  rows: Row[];
  errors: string[];
}

export const promptIds = (T: number) => Array.from({ length: T }, (_, i) => (i === 0 ? 1 : 3 + ((i * 7919) % 500)));

/** FLOPs of a prefill of T tokens (last-position logits only). */
export function prefillFlops(e: Engine, T: number): number {
  const s = e.spec;
  let f = 0;
  for (let p = 0; p < T; p++) f += decodeFlops(e, p) - 2 * s.dModel * s.dVocab;
  return f + 2 * s.dModel * s.dVocab;
}

/** Bytes of f32 weights one decode token streams (every projection and W_U). */
export function weightBytesOf(e: Engine): number {
  const s = e.spec;
  return 4 * (s.nLayers * (s.dModel * (s.nHeads + 2 * s.nKvHeads) * s.dHead + s.nHeads * s.dHead * s.dModel + (s.gatedMlp ? 3 : 2) * s.dModel * s.dMlp) + s.dModel * s.dVocab);
}

export async function engineRows(o: ModelBenchOptions, impl: 'webgpu' | 'webgpu-prev' | 'webgpu-unfused' | 'cpu', backend: Backend, rows: Row[]): Promise<void> {
  const e = await Engine.load(new HttpFiles('bench model', o.modelUrl), backend, undefined, { contextLength: Math.max(...o.ts) + o.nDecode + 8 });
  const weightBytes = weightBytesOf(e);
  try {
    for (const T of o.ts) {
      const ids = promptIds(T);
      const runs = await repeat(o, () => engineGreedy(e, ids, o.nDecode));
      const prefillMs = median(runs.map((r) => r.prefillMs));
      const decodeMs = median(runs.map((r) => r.stepMs.reduce((a, b) => a + b, 0) / r.stepMs.length));
      const row: Row = {
        impl, T, prefillMs, decodeMs, greedy: runs[0].ids,
        ...(backend instanceof CpuBackend ? { threads: backend.runningThreads } : {}),
        prefillGflops: prefillFlops(e, T) / prefillMs / 1e6,
        decodeGflops: decodeFlops(e, T + o.nDecode / 2) / decodeMs / 1e6,
        decodeGBs: weightBytes / decodeMs / 1e6,
      };
      if (o.lens) {
        [row.forwardMs, row.lensMs] = await interleaved(o, () => e.run(ids, { logits: 'last' }), () => lensGrid(e, ids, Int32Array.of(17, 42)));
      }
      if (backend instanceof WebGpuBackend) {
        // bindGroupStats counts every dispatch (a bind group made or reused): its total marks block 0's start and end
        const stats = backend.bindGroupStats, total = () => stats.created + stats.reused;
        const marks: number[] = [];
        const created = stats.created;
        const work = await recordGpuWork(backend, async () => {
          const ctx = new (class extends RunContext {
            fire(name: string, t: Parameters<RunContext['fire']>[1]) {
              if (name === 'blocks.0.hook_resid_pre' || name === 'blocks.0.hook_resid_post') marks.push(total());
              return super.fire(name, t);
            }
          })(backend, { pos0: T, n: 1, nPrompt: T, step: 1 });
          const out = e.model.forward(Int32Array.of(ids[T - 1]), ctx, 'last')!;
          await backend.read(out);
          backend.release(out);
          ctx.release();
        });
        row.dispatchesPerDecodeStep = work.dispatches.length;
        row.dispatchesPerLayer = marks[1] - marks[0];
        row.bindGroupsPerDecodeStep = backend.bindGroupStats.created - created;
      }
      rows.push(row);
    }
  } finally {
    e.dispose();
  }
}

