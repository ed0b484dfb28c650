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
import { WebGpuBackend } from '../workers/engine/backend/webgpu';
import { Engine } from '../workers/engine/engine';
import { HttpFiles } from '../workers/engine/io/model_files';
import { decodeFlops, hfGreedy, median, now, repeat, type GreedyRun } from './page_tools';
import { measureGpuPeak, type GpuPeak } from './gpu_peak';
import { engineRows, GPU_OPTIONS, prefillFlops, promptIds, weightBytesOf, type ModelBenchOptions, type ModelBenchResult, type Row } from './model_rows';

export type { Impl, ModelBenchOptions, ModelBenchResult, Row } from './model_rows';

declare global {
  interface Window { runModelBench: (o: ModelBenchOptions) => Promise<ModelBenchResult> }
}

async function tjsRows(o: ModelBenchOptions, impl: 'tjs-wasm' | 'tjs-webgpu', rows: Row[], flopsOf: (T: number) => { prefill: number; decode: number }, weightBytes: number): Promise<void> {
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
  try {
    for (const T of o.ts) {
      const ids = promptIds(T);
      const runs: GreedyRun[] = await repeat(o, () => hfGreedy(model, ids, o.nDecode));
      const prefillMs = median(runs.map((r) => r.prefillMs));
      const decodeMs = median(runs.map((r) => r.stepMs.reduce((a, b) => a + b, 0) / r.stepMs.length));
      const f = flopsOf(T);
      rows.push({ impl, T, prefillMs, decodeMs, greedy: runs[0].ids, ...(impl === 'tjs-wasm' ? { threads } : {}), prefillGflops: f.prefill / prefillMs / 1e6, decodeGflops: f.decode / decodeMs / 1e6, decodeGBs: weightBytes / decodeMs / 1e6 });
    }
  } finally {
    await model.dispose();
  }
}

/** Our CPU backend's rows on o.cpuThreads threads, in a dedicated worker (bench/model_cpu_worker.ts). */
async function cpuRowsInWorker(o: ModelBenchOptions): Promise<Row[]> {
  const worker = new Worker(new URL('./model_cpu_worker.ts', import.meta.url), { type: 'module' });
  try {
    const reply = await new Promise<{ rows?: Row[]; error?: string }>((resolve) => {
      worker.onmessage = (e) => resolve(e.data);
      worker.onerror = (e) => resolve({ error: e.message || 'the CPU benchmark worker failed to start' });
      worker.postMessage({ o, threads: o.cpuThreads });
    });
    if (reply.error !== undefined) throw new Error(reply.error);
    return reply.rows!;
  } finally {
    worker.terminate();
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
        if ((o.cpuThreads ?? 1) > 1) rows.push(...await cpuRowsInWorker(o));
        else await engineRows(o, 'cpu', new CpuBackend(), rows);
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
