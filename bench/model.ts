/**
 * Model benchmark page (bench/model.html, driven by bench/run-model.ts through
 * `window.runModelBench`): one model — by default the SmolLM-135M-shaped random Llama of
 * bench/smollm_random.ts with its ONNX twin (tools/onnx_llama.ts) — on our WebGPU backend, our CPU
 * backend (WASM SIMD, this tab's thread) and transformers.js (onnxruntime-web, fp32, wasm and
 * WebGPU), one after the other in one tab. Per prompt length T: prefill ms (forward over T tokens,
 * last logits read back), decode ms per token (greedy, KV cache), their GFLOP/s and the decode's
 * GB/s of weights streamed, against the adapter's measured peaks (bench/gpu_peak.ts); the lens
 * margin grid against a plain forward; WebGPU dispatches per decode step.
 */
import { AutoModelForCausalLM, env, type PreTrainedModel } from '@huggingface/transformers';
import ortMjsUrl from 'onnxruntime-web/ort-wasm-simd-threaded.asyncify.mjs?url';
import ortWasmUrl from 'onnxruntime-web/ort-wasm-simd-threaded.asyncify.wasm?url';
import { CpuBackend } from '../workers/engine/backend/cpu';
import { WebGpuBackend, type WebGpuOptions } from '../workers/engine/backend/webgpu';
import type { KernelTuning } from '../workers/engine/backend/webgpu_host';
import type { Backend } from '../workers/engine/backend/backend';
import { Engine } from '../workers/engine/engine';
import { HttpFiles } from '../workers/engine/io/model_files';
import { RunContext } from '../workers/engine/model/run_context';
import { decodeFlops, engineGreedy, hfGreedy, interleaved, lensGrid, median, now, recordGpuWork, repeat, type GreedyRun } from './page_tools';
import { measureGpuPeak, type GpuPeak } from './gpu_peak';

/**
 * 'webgpu-prev': our WebGPU backend with the kernels it had before the fused QKV kernel, cached bind
 * groups and the vec4 matmul (fused linear only, scalar tiled matmul, a bind group per dispatch);
 * 'webgpu-unfused': without any fused decode kernel (WebGpuOptions.fusedKernels false).
 */
export type Impl = 'webgpu' | 'webgpu-prev' | 'webgpu-unfused' | 'cpu' | 'tjs-wasm' | 'tjs-webgpu';

/** The WebGpuOptions of each of our WebGPU implementations. */
const GPU_OPTIONS: Record<'webgpu' | 'webgpu-prev' | 'webgpu-unfused', WebGpuOptions> = {
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

declare global {
  interface Window { runModelBench: (o: ModelBenchOptions) => Promise<ModelBenchResult> }
}

const promptIds = (T: number) => Array.from({ length: T }, (_, i) => (i === 0 ? 1 : 3 + ((i * 7919) % 500)));

/** FLOPs of a prefill of T tokens (last-position logits only). */
function prefillFlops(e: Engine, T: number): number {
  const s = e.spec;
  let f = 0;
  for (let p = 0; p < T; p++) f += decodeFlops(e, p) - 2 * s.dModel * s.dVocab;
  return f + 2 * s.dModel * s.dVocab;
}

/** Bytes of f32 weights one decode token streams (every projection and W_U). */
function weightBytesOf(e: Engine): number {
  const s = e.spec;
  return 4 * (s.nLayers * (s.dModel * (s.nHeads + 2 * s.nKvHeads) * s.dHead + s.nHeads * s.dHead * s.dModel + (s.gatedMlp ? 3 : 2) * s.dModel * s.dMlp) + s.dModel * s.dVocab);
}

async function engineRows(o: ModelBenchOptions, impl: 'webgpu' | 'webgpu-prev' | 'webgpu-unfused' | 'cpu', backend: Backend, rows: Row[]): Promise<void> {
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

async function tjsRows(o: ModelBenchOptions, impl: 'tjs-wasm' | 'tjs-webgpu', rows: Row[], flopsOf: (T: number) => { prefill: number; decode: number }, weightBytes: number): Promise<void> {
  env.allowRemoteModels = false;
  env.allowLocalModels = true;
  env.localModelPath = o.tjsRoot;
  env.useCustomCache = false;
  env.useBrowserCache = false;
  env.backends.onnx.wasm!.wasmPaths = { mjs: ortMjsUrl, wasm: ortWasmUrl };
  // one thread, as our CPU backend on this page's main thread (the dev server makes the page
  // cross-origin isolated, where onnxruntime-web would otherwise start its own threads)
  env.backends.onnx.wasm!.numThreads = 1;
  const model: PreTrainedModel = await AutoModelForCausalLM.from_pretrained(o.tjsModel, { device: impl === 'tjs-wasm' ? 'wasm' : 'webgpu', dtype: 'fp32' });
  try {
    for (const T of o.ts) {
      const ids = promptIds(T);
      const runs: GreedyRun[] = await repeat(o, () => hfGreedy(model, ids, o.nDecode));
      const prefillMs = median(runs.map((r) => r.prefillMs));
      const decodeMs = median(runs.map((r) => r.stepMs.reduce((a, b) => a + b, 0) / r.stepMs.length));
      const f = flopsOf(T);
      rows.push({ impl, T, prefillMs, decodeMs, greedy: runs[0].ids, prefillGflops: f.prefill / prefillMs / 1e6, decodeGflops: f.decode / decodeMs / 1e6, decodeGBs: weightBytes / decodeMs / 1e6 });
    }
  } finally {
    await model.dispose();
  }
}

async function runModelBench(o: ModelBenchOptions): Promise<ModelBenchResult> {
  const rows: Row[] = [], errors: string[] = [];
  let adapter = 'none', peak: GpuPeak | null = null;
  // FLOP and byte counts come from the model's spec (the CPU backend loads it without a GPU).
  const probe = await Engine.load(new HttpFiles('bench model', o.modelUrl), new CpuBackend(), undefined, { contextLength: 8 });
  const flops = o.ts.map((T) => ({ T, prefill: prefillFlops(probe, T), decode: decodeFlops(probe, T + o.nDecode / 2) }));
  const flopsOf = (T: number) => flops.find((f) => f.T === T)!;
  const weightBytes = weightBytesOf(probe);
  probe.dispose();
  for (const impl of o.impls) {
    const t0 = now();
    try {
      if (impl === 'webgpu' || impl === 'webgpu-prev' || impl === 'webgpu-unfused') {
        const b = await WebGpuBackend.create({ ...GPU_OPTIONS[impl], tuning: o.tuning });
        adapter = b.description;
        peak ??= await measureGpuPeak(b.device, o.peakScale);
        await engineRows(o, impl, b, rows);
      } else if (impl === 'cpu') {
        await engineRows(o, 'cpu', new CpuBackend(), rows);
      } else {
        await tjsRows(o, impl, rows, flopsOf, weightBytes);
      }
    } catch (e) {
      errors.push(`${impl}: ${e instanceof Error ? e.message : String(e)} (after ${((now() - t0) / 1e3).toFixed(0)} s)`);
    }
  }
  return { adapter, userAgent: navigator.userAgent, crossOriginIsolated: globalThis.crossOriginIsolated, peak, paramsBytes: weightBytes, rows, errors };
}

window.runModelBench = runModelBench;
