/**
 * Browser benchmark page (bench/browser.html, served by the Vite dev server): stories260K on our
 * engine's WebGpuBackend, on its CpuBackend, and with transformers.js (onnxruntime-web, wasm, fp32)
 * on ../shared/models/stories260K/onnx/model.onnx — all in this tab's main thread, one after the
 * other, in one run. Exposes `window.runBench(options)` for bench/run-browser.ts.
 *
 * Measured (median over `reps` repetitions after `warmup` unmeasured ones):
 * - prefill: one forward pass over the prompt from an empty KV cache, last-position logits read
 *   back to the host;
 * - decode: mean time per token of `nDecode` greedy steps through the KV cache (one token in,
 *   logits read back, argmax on the host), i.e. the work of Engine.generate's loop without its
 *   per-token event-loop yield and token decoding (generate() itself is timed separately);
 * - our engine only: a plain forward pass (Engine.run without captures, all logit rows), the lens
 *   grid alone (forward capturing every residual, LN_f and the futures' rows of W_U on the (L+1)·T
 *   stack, read back) and the full Engine.analyse (lens grid, residual norms, sinks, teacher-forced
 *   sequence margin);
 * - a WebGPU profile: dispatches, submits and read-backs per decode step, the cost of one
 *   submit + mapAsync round trip and of one trivial dispatch, each kernel's time in the step
 *   (replayed per kernel), against the step's FLOPs.
 */
import { AutoModelForCausalLM, env, type PreTrainedModel } from '@huggingface/transformers';
import ortMjsUrl from 'onnxruntime-web/ort-wasm-simd-threaded.asyncify.mjs?url';
import ortWasmUrl from 'onnxruntime-web/ort-wasm-simd-threaded.asyncify.wasm?url';
import type { Backend, Tensor } from '../workers/engine/backend/backend';
import { CpuBackend } from '../workers/engine/backend/cpu';
import { WebGpuBackend } from '../workers/engine/backend/webgpu';
import { Engine } from '../workers/engine/engine';
import { HttpFiles } from '../workers/engine/io/model_files';
import { RunContext } from '../workers/engine/model/run_context';
import { decodeFlops, engineGreedy, hfGreedy, int64, lensGrid, median, now, ones, recordGpuWork, repeat, timed, type GpuWork, type GreedyRun } from './page_tools';

/** What the runner may change. */
export interface BenchOptions {
  /** Measured repetitions of every timing (the median is reported). */
  reps: number;
  /** Unmeasured repetitions first (pipeline compilation, wasm tier-up, JIT). */
  warmup: number;
  /** Greedy decode steps after the prefill (the prefill gives the first new token). */
  nDecode: number;
}

/** Times of one implementation, milliseconds. */
export interface ImplTimes {
  loadMs: number;
  /** Median prefill (forward over the prompt + read of the last logits). */
  prefillMs: number;
  /** Median over repetitions of the mean decode step. */
  decodeMsPerToken: number;
  /** Median, fastest and slowest single decode step (all repetitions). */
  decodeStepMedianMs: number;
  decodeStepMinMs: number;
  decodeStepMaxMs: number;
  /** Median of the library's own generate() for 1 + nDecode greedy tokens, prompt included. */
  generateMs: number;
  prefillSamples: number[];
  decodeSamples: number[];
  /** Prompt ids + greedy ids, identical in every repetition (else an error is thrown). */
  greedy: number[];
}

/** Analysis costs of our engine on one backend, milliseconds (medians). */
export interface AnalysisTimes {
  /** Engine.run(ids): no captures, logits for every position. */
  forwardMs: number;
  /** Forward capturing the L+1 residual streams, then the margin grid (see file comment). */
  lensMs: number;
  /** Engine.analyse: lens grid + residual norms + sinks + sequence margin. */
  analyseMs: number;
}

/** One kernel's share of a decode step. */
export interface KernelTime {
  /** Pipeline key (ops/*.wgsl.ts), e.g. "gemv", "rms_norm", "attention:…". */
  kernel: string;
  dispatches: number;
  msPerStep: number;
}

/** Where the WebGPU backend's decode step goes on this adapter. */
export interface WebGpuProfile {
  dispatchesPerDecodeStep: number;
  submitsPerDecodeStep: number;
  readsPerDecodeStep: number;
  dispatchesPerPrefill: number;
  /** Median time of reading a 64-float tensor with nothing else recorded: copy + submit + mapAsync. */
  roundTripMs: number;
  /** Extra time per [1,64]+[1,64] add dispatch, from 200 chained adds vs 1 before one read. */
  perDispatchAddMs: number;
  /** roundTrip·reads + perDispatchAdd·dispatches: the decode step if FLOPs cost nothing. */
  overheadModelMs: number;
  /** Execution time of each kernel in one decode step (replayed), slowest first. */
  kernels: KernelTime[];
  /** Sum of `kernels`: the step's GPU time without its read-back. */
  kernelSumMs: number;
  /** FLOPs of one decode token (2 × multiply-adds of every projection, the attention and W_U). */
  mflopPerDecodeToken: number;
  /** mflopPerDecodeToken / decode time. */
  achievedGflops: number;
}

export interface BenchResult {
  prompt: string;
  /** Where the code ran. */
  where: string;
  options: BenchOptions;
  nPromptTokens: number;
  adapter: string;
  userAgent: string;
  crossOriginIsolated: boolean;
  hardwareConcurrency: number;
  /** onnxruntime-web wasm threads (1 unless the page is cross-origin isolated). */
  ortThreads: number | null;
  impls: { webgpu: ImplTimes; cpu: ImplTimes; transformersjs: ImplTimes };
  analysis: { webgpu: AnalysisTimes; cpu: AnalysisTimes };
  /** Golden greedy ids (../shared/models/stories260K/reference/reference.json), when the prompt has them. */
  referenceGreedy: number[] | null;
  greedyAgree: boolean;
  /** One line per disagreement (empty when all agree). */
  greedyMismatches: string[];
  greedyText: string;
  webgpuProfile: WebGpuProfile;
}

declare global {
  interface Window { runBench: (options: BenchOptions) => Promise<BenchResult> }
}

const PROMPT = 'Lily and Tom went to the park. Lily gave the ball to';
const GOOD = ' Tom';
const BAD = ' Lily';
const MODEL = 'stories260K';

/** Runs `greedy` and `generate` warmup + reps times; checks every repetition chose the same ids. */
async function measureImpl(o: BenchOptions, loadMs: number, greedy: () => Promise<GreedyRun>, generate: () => Promise<unknown>): Promise<ImplTimes> {
  const runs = await repeat(o, greedy);
  const ids = runs[0].ids;
  if (runs.some((r) => r.ids.join() !== ids.join())) throw new Error('greedy ids differ between repetitions of the same implementation');
  const gen = await repeat(o, () => timed(generate));
  const steps = runs.flatMap((r) => r.stepMs);
  return {
    loadMs,
    prefillMs: median(runs.map((r) => r.prefillMs)),
    decodeMsPerToken: median(runs.map((r) => r.stepMs.reduce((a, b) => a + b, 0) / r.stepMs.length)),
    decodeStepMedianMs: median(steps),
    decodeStepMinMs: Math.min(...steps),
    decodeStepMaxMs: Math.max(...steps),
    generateMs: median(gen),
    prefillSamples: runs.map((r) => r.prefillMs),
    decodeSamples: runs.map((r) => r.stepMs.reduce((a, b) => a + b, 0) / r.stepMs.length),
    greedy: ids,
  };
}

async function measureAnalysis(o: BenchOptions, e: Engine, ids: number[]): Promise<AnalysisTimes> {
  const req = { prompt: PROMPT, good: { text: GOOD }, bad: { text: BAD } };
  const cols = Int32Array.from([e.resolveFuture(ids, req.good, req).firstIds, e.resolveFuture(ids, req.bad, req).firstIds].flat());
  return {
    forwardMs: median(await repeat(o, () => timed(() => e.run(ids)))),
    lensMs: median(await repeat(o, () => timed(() => lensGrid(e, ids, cols)))),
    analyseMs: median(await repeat(o, () => timed(() => e.analyse(req)))),
  };
}

/**
 * Time per kernel (pipeline key) of one recorded step: each kernel's dispatches of the step are
 * recorded again `REPLAYS` times in one batch and waited for; minus an empty sync, divided by
 * REPLAYS. The replayed dispatches read and write the step's own (now pooled) buffers, so nothing
 * live changes except the KV-cache row the step itself wrote, rewritten.
 */
async function kernelTimes(o: BenchOptions, b: WebGpuBackend, work: GpuWork): Promise<KernelTime[]> {
  const REPLAYS = 4;
  const reps = { ...o, reps: Math.max(o.reps, 5) };
  const syncMs = median(await repeat(reps, () => timed(() => b.sync())));
  const byKernel = new Map<string, Parameters<WebGpuBackend['dispatch']>[]>();
  for (const d of work.dispatches) byKernel.set(d[0].label, [...(byKernel.get(d[0].label) ?? []), d]);
  const out: KernelTime[] = [];
  for (const [kernel, ds] of byKernel) {
    const t = median(await repeat(reps, () => timed(async () => {
      for (let r = 0; r < REPLAYS; r++) for (const d of ds) b.dispatch(...d);
      await b.sync();
    })));
    out.push({ kernel, dispatches: ds.length, msPerStep: Math.max(0, t - syncMs) / REPLAYS });
  }
  return out.sort((x, y) => y.msPerStep - x.msPerStep);
}

/** Median time of `n` chained [1,64] adds (one dispatch each) followed by one read. */
async function addChainMs(o: BenchOptions, b: Backend, n: number, x0: Tensor): Promise<number> {
  return median(await repeat({ ...o, reps: Math.max(o.reps, 9) }, () => timed(async () => {
    let x = b.add(x0, x0);
    for (let i = 1; i < n; i++) { const y = b.add(x, x0); b.release(x); x = y; }
    await b.read(x);
    b.release(x);
  })));
}

async function profileWebGpu(o: BenchOptions, e: Engine, b: WebGpuBackend, ids: number[], decodeMs: number): Promise<WebGpuProfile> {
  const T = ids.length;
  const prefill = await recordGpuWork(b, () => e.run(ids, { logits: 'last' }));
  const step = await recordGpuWork(b, async () => {
    const ctx = new RunContext(b, { pos0: T, n: 1, nPrompt: T, step: 1 });
    const out = e.model.forward(Int32Array.of(ids[T - 1]), ctx, 'last')!;
    await b.read(out);
    b.release(out);
    ctx.release();
  });
  const kernels = await kernelTimes(o, b, step);
  const x = b.upload(Float32Array.from({ length: 64 }, (_, i) => Math.sin(i)), [1, 64]);
  const roundTripMs = median(await repeat({ ...o, reps: Math.max(o.reps, 21) }, () => timed(() => b.read(x))));
  const perDispatchAddMs = ((await addChainMs(o, b, 200, x)) - (await addChainMs(o, b, 1, x))) / 199;
  b.release(x);
  const mflop = decodeFlops(e, T + o.nDecode / 2) / 1e6;
  return {
    dispatchesPerDecodeStep: step.dispatches.length,
    submitsPerDecodeStep: step.submits,
    readsPerDecodeStep: step.reads,
    dispatchesPerPrefill: prefill.dispatches.length,
    roundTripMs,
    perDispatchAddMs,
    overheadModelMs: roundTripMs * step.reads + perDispatchAddMs * step.dispatches.length,
    kernels,
    kernelSumMs: kernels.reduce((a, k) => a + k.msPerStep, 0),
    mflopPerDecodeToken: mflop,
    achievedGflops: mflop / decodeMs,
  };
}

/** Greedy ids of the golden reference for this prompt (prompt + continuation), or null. */
async function referenceIds(prompt: string): Promise<number[] | null> {
  const r = await fetch(`/models/${MODEL}/reference/reference.json`);
  if (!r.ok) return null;
  const ref = (await r.json()) as { prompts: { prompt: string; input_ids: number[]; greedy_ids: number[] }[] };
  const p = ref.prompts.find((x) => x.prompt === prompt);
  return p ? [...p.input_ids, ...p.greedy_ids] : null;
}

/** Loads transformers.js's AutoModelForCausalLM from the dev server's /models/, offline, wasm, fp32. */
async function loadTransformersJs(): Promise<PreTrainedModel> {
  // Engine.load's tokenizer loader points env at its own in-memory cache; point it back at /models/.
  env.allowRemoteModels = false;
  env.allowLocalModels = true;
  env.localModelPath = '/models/';
  env.useCustomCache = false;
  env.useBrowserCache = false;
  // transformers.js points this at a CDN on import; offline, use the files bundled with onnxruntime-web.
  env.backends.onnx.wasm!.wasmPaths = { mjs: ortMjsUrl, wasm: ortWasmUrl };
  return AutoModelForCausalLM.from_pretrained(MODEL, { device: 'wasm', dtype: 'fp32' });
}

async function runBench(o: BenchOptions): Promise<BenchResult> {
  const files = new HttpFiles(`${MODEL} (dev server)`, `/models/${MODEL}/`);
  const genReq = { prompt: PROMPT, good: { text: GOOD }, bad: { text: BAD }, maxNewTokens: o.nDecode + 1, temperature: 0, stopAtEos: false };

  let t0 = now();
  const gpuBackend = await WebGpuBackend.create();
  const gpu = await Engine.load(files, gpuBackend);
  const gpuLoad = now() - t0;
  const ids = gpu.encodePrompt({ prompt: PROMPT });
  const webgpu = await measureImpl(o, gpuLoad, () => engineGreedy(gpu, ids, o.nDecode), () => gpu.generate(genReq));
  const gpuAnalysis = await measureAnalysis(o, gpu, ids);
  const webgpuProfile = await profileWebGpu(o, gpu, gpuBackend, ids, webgpu.decodeMsPerToken);

  t0 = now();
  const cpuEngine = await Engine.load(files, new CpuBackend());
  const cpu = await measureImpl(o, now() - t0, () => engineGreedy(cpuEngine, ids, o.nDecode), () => cpuEngine.generate(genReq));
  const cpuAnalysis = await measureAnalysis(o, cpuEngine, ids);
  const greedyText = cpuEngine.continuationText(ids, cpu.greedy.slice(ids.length));
  cpuEngine.dispose();

  t0 = now();
  const hf = await loadTransformersJs();
  const hfLoad = now() - t0;
  const inputs = { input_ids: int64(ids), attention_mask: ones(ids.length) };
  const transformersjs = await measureImpl(o, hfLoad, () => hfGreedy(hf, ids, o.nDecode), () => hf.generate({ ...inputs, max_new_tokens: o.nDecode + 1, do_sample: false }));
  await hf.dispose();
  gpu.dispose();

  const referenceGreedy = await referenceIds(PROMPT);
  // Every implementation made the same number of steps; the reference has 32 new tokens, so it is
  // compared on the common prefix.
  const others: [string, number[]][] = [['cpu', cpu.greedy], ['transformers.js', transformersjs.greedy]];
  if (referenceGreedy) others.push(['golden reference', referenceGreedy]);
  const greedyMismatches: string[] = [];
  for (const [name, seq] of others) {
    const i = seq.slice(0, webgpu.greedy.length).findIndex((id, j) => id !== webgpu.greedy[j]);
    if (i >= 0) greedyMismatches.push(`${name} differs from webgpu at position ${i} (id ${seq[i]} vs ${webgpu.greedy[i]})`);
  }

  return {
    prompt: PROMPT,
    where: 'page main thread (one tab, implementations one after the other)',
    options: o,
    nPromptTokens: ids.length,
    adapter: gpuBackend.description,
    userAgent: navigator.userAgent,
    crossOriginIsolated: globalThis.crossOriginIsolated,
    hardwareConcurrency: navigator.hardwareConcurrency,
    ortThreads: env.backends.onnx.wasm?.numThreads ?? null,
    impls: { webgpu, cpu, transformersjs },
    analysis: { webgpu: gpuAnalysis, cpu: cpuAnalysis },
    referenceGreedy,
    greedyAgree: greedyMismatches.length === 0,
    greedyMismatches,
    greedyText,
    webgpuProfile,
  };
}

window.runBench = runBench;
