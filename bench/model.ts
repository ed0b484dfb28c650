/**
 * Model benchmark page (bench/model.html, driven by bench/run-model.ts through
 * `window.runModelBench`): one model — by default the SmolLM-135M-shaped random Llama of
 * bench/smollm_random.ts with its ONNX twin (tools/onnx_llama.ts) — on our WebGPU backend, our CPU
 * backend (WASM SIMD; this tab's thread, or cpuThreads threads in a worker) and transformers.js
 * (onnxruntime-web, fp32, wasm with numThreads = cpuThreads, and WebGPU), one after the other in
 * one tab (or, with interleave, the two CPU implementations alternating repetitions). Per prompt length T: prefill ms (forward over T tokens,
 * last logits read back), decode ms per token (greedy, KV cache), their GFLOP/s and the decode's
 * GB/s of weights streamed, against the adapter's measured peaks (bench/gpu_peak.ts); the lens
 * margin grid against a plain forward; WebGPU dispatches per decode step.
 */
import { AutoModelForCausalLM, env, type PreTrainedModel } from '@huggingface/transformers';
import ortMjsUrl from 'onnxruntime-web/ort-wasm-simd-threaded.asyncify.mjs?url';
import ortWasmUrl from 'onnxruntime-web/ort-wasm-simd-threaded.asyncify.wasm?url';
import { CpuBackend } from '../workers/engine/backend/cpu';
import { WebGpuBackend } from '../workers/engine/backend/webgpu';
import { Engine } from '../workers/engine/engine';
import { HttpFiles } from '../workers/engine/io/model_files';
import { decodeFlops, engineGreedy, hfGreedy, median, now, repeat, type GreedyRun } from './page_tools';
import { measureGpuPeak, type GpuPeak } from './gpu_peak';
import { engineRows, GPU_OPTIONS, prefillFlops, promptIds, weightBytesOf, type Impl, type ModelBenchOptions, type ModelBenchResult, type Row } from './model_rows';

export type { Impl, ModelBenchOptions, ModelBenchResult, Row } from './model_rows';

declare global {
  interface Window { runModelBench: (o: ModelBenchOptions) => Promise<ModelBenchResult> }
}

/** One implementation with its model loaded: greedy prefill + decode of a prompt (bench/page_tools.ts), then close(). */
interface Runner {
  /** Threads it runs on (CPU implementations: ours those that started; onnxruntime-web numThreads). */
  threads?: number;
  run(ids: number[]): Promise<GreedyRun>;
  close(): Promise<void>;
}

/**
 * Our CPU backend on o.cpuThreads threads: on this page's thread for 1, else in a dedicated worker
 * (bench/model_cpu_worker.ts).
 */
async function cpuRunner(o: ModelBenchOptions): Promise<Runner> {
  const threads = o.cpuThreads ?? 1, contextLength = Math.max(...o.ts) + o.nDecode + 8;
  if (threads === 1) {
    const b = new CpuBackend();
    const e = await Engine.load(new HttpFiles('bench model', o.modelUrl), b, undefined, { contextLength });
    return { threads: b.runningThreads, run: (ids) => engineGreedy(e, ids, o.nDecode), close: async () => e.dispose() };
  }
  const worker = new Worker(new URL('./model_cpu_worker.ts', import.meta.url), { type: 'module' });
  const call = <T>(msg: unknown) => new Promise<T>((resolve, reject) => {
    worker.onmessage = (e) => (e.data.error !== undefined ? reject(new Error(e.data.error)) : resolve(e.data));
    worker.onerror = (e) => reject(new Error(e.message || 'the CPU benchmark worker failed to start'));
    worker.postMessage(msg);
  });
  try {
    const { threads: running } = await call<{ threads: number }>({ load: { modelUrl: o.modelUrl, contextLength, threads } });
    return {
      threads: running,
      run: async (ids) => (await call<{ run: GreedyRun }>({ run: { ids, nDecode: o.nDecode } })).run,
      close: async () => { await call({ dispose: true }).catch(() => undefined); worker.terminate(); },
    };
  } catch (e) {
    worker.terminate();
    throw e;
  }
}

/** transformers.js (onnxruntime-web, fp32) on wasm or WebGPU, calling the model's forward directly. */
async function tjsRunner(o: ModelBenchOptions, impl: 'tjs-wasm' | 'tjs-webgpu'): Promise<Runner> {
  env.allowRemoteModels = false;
  env.allowLocalModels = true;
  env.localModelPath = o.tjsRoot;
  env.useCustomCache = false;
  env.useBrowserCache = false;
  env.backends.onnx.wasm!.wasmPaths = { mjs: ortMjsUrl, wasm: ortWasmUrl };
  // as many threads as our CPU backend (default 1; the dev server makes the page cross-origin
  // isolated, where onnxruntime-web would otherwise start as many as it likes). onnxruntime-web
  // reads this once, when its wasm first loads: one thread count per page.
  const threads = o.cpuThreads ?? 1;
  env.backends.onnx.wasm!.numThreads = threads;
  const model: PreTrainedModel = await AutoModelForCausalLM.from_pretrained(o.tjsModel, { device: impl === 'tjs-wasm' ? 'wasm' : 'webgpu', dtype: 'fp32' });
  return { threads: impl === 'tjs-wasm' ? threads : undefined, run: (ids) => hfGreedy(model, ids, o.nDecode), close: async () => { await model.dispose(); } };
}

/**
 * Rows of `impls` (loaded together) per prompt length: with o.interleave their repetitions
 * alternate (A B, B A, …) so that all of them see the same machine load, else each runs its own
 * warm-up and repetitions in turn.
 */
async function runnerRows(o: ModelBenchOptions, impls: Impl[], open: (impl: Impl) => Promise<Runner>, rows: Row[], flopsOf: (T: number) => { prefill: number; decode: number }, weightBytes: number): Promise<void> {
  const runners: [Impl, Runner][] = [];
  try {
    for (const impl of impls) runners.push([impl, await open(impl)]);
    for (const T of o.ts) {
      const ids = promptIds(T);
      const runs = new Map<Impl, GreedyRun[]>(impls.map((i) => [i, []]));
      if (o.interleave) {
        for (let w = 0; w < o.warmup; w++) for (const [, r] of runners) await r.run(ids);
        for (let rep = 0; rep < o.reps; rep++) for (const [impl, r] of rep % 2 ? [...runners].reverse() : runners) runs.get(impl)!.push(await r.run(ids));
      } else {
        for (const [impl, r] of runners) runs.set(impl, await repeat(o, () => r.run(ids)));
      }
      for (const [impl, r] of runners) {
        const rs = runs.get(impl)!, f = flopsOf(T);
        const prefillMs = median(rs.map((x) => x.prefillMs));
        const decodeMs = median(rs.map((x) => x.stepMs.reduce((a, b) => a + b, 0) / x.stepMs.length));
        rows.push({ impl, T, prefillMs, decodeMs, greedy: rs[0].ids, threads: r.threads, prefillGflops: f.prefill / prefillMs / 1e6, decodeGflops: f.decode / decodeMs / 1e6, decodeGBs: weightBytes / decodeMs / 1e6 });
      }
    }
  } finally {
    for (const [, r] of runners) await r.close();
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
  // with interleave, the CPU implementations run together, their repetitions alternating
  const together: Impl[] = o.interleave ? o.impls.filter((i) => i === 'cpu' || i === 'tjs-wasm') : [];
  const open = (impl: Impl) => (impl === 'cpu' ? cpuRunner(o) : tjsRunner(o, impl as 'tjs-wasm' | 'tjs-webgpu'));
  for (const impl of o.impls) {
    if (together.includes(impl) && impl !== together[0]) continue;
    const t0 = now();
    try {
      if (impl === 'webgpu' || impl === 'webgpu-prev' || impl === 'webgpu-unfused') {
        const b = await WebGpuBackend.create({ ...GPU_OPTIONS[impl], tuning: o.tuning });
        adapter = b.description;
        peak ??= await measureGpuPeak(b.device, o.peakScale);
        await engineRows(o, impl, b, rows);
      } else if (together.length > 1) {
        await runnerRows(o, together, open, rows, flopsOf, weightBytes);
      } else if (impl === 'cpu' && (o.cpuThreads ?? 1) === 1) {
        await engineRows(o, 'cpu', new CpuBackend(), rows); // with the lens grid
      } else {
        await runnerRows(o, [impl], open, rows, flopsOf, weightBytes);
      }
    } catch (e) {
      errors.push(`${together.length > 1 && impl === together[0] ? together.join('+') : impl}: ${e instanceof Error ? e.message : String(e)} (after ${((now() - t0) / 1e3).toFixed(0)} s)`);
    }
  }
  return { adapter, userAgent: navigator.userAgent, crossOriginIsolated: globalThis.crossOriginIsolated, peak, paramsBytes: weightBytes, rows, errors };
}

window.runModelBench = runModelBench;
