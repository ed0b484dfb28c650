/**
 * One measured load of a research-size checkpoint, the same in Node (bench/load.ts --research,
 * CPU backend) and in a Chromium page (bench/load_page.ts, WebGPU): Engine.load as the app's
 * worker calls it (default 4096-token KV cache; warm-up on WebGPU), the time each load stage began,
 * the memory the environment reports after the load and after the first analysis, the pre-download
 * estimate the UI shows for the same choice (workers/engine/model/estimate.ts), and the time to the
 * first lens heatmap: Engine.analyse of the 64-token prompt of tools/research_prompt.ts.
 */
import type { Backend } from '../workers/engine/backend/backend';
import { Engine } from '../workers/engine/engine';
import type { ModelFiles } from '../workers/engine/io/model_files';
import { estimateModel } from '../workers/engine/model/estimate';
import type { LoadProgress, WeightDtype } from '../workers/engine/model/load';
import { promptOfLength, RESEARCH_FUTURES } from '../tools/research_prompt';

/** Prompt tokens of the first heatmap. */
export const HEATMAP_TOKENS = 64;

/** What is loaded: a research model, its file storage (tools/research_storage.ts) and the device storage. */
export interface ResearchLoadCase {
  model: string;
  /** 'f16' (binary16 safetensors), 'gguf-q8_0', 'gguf-q4_0'. */
  storage: string;
  /** The load's weightDtype (the UI's Weights choice); a GGUF file's quantised matrices stay as stored. */
  weights: WeightDtype;
}

/** Memory an environment reports, in bytes (absent: it cannot tell). */
export interface MemoryReading {
  /** JS heap in use (Node: heapUsed; Chromium: performance.memory.usedJSHeapSize with --enable-precise-memory-info). */
  jsHeap?: number;
  /** Node: bytes of ArrayBuffers (off-heap typed arrays, WebAssembly memory included). */
  arrayBuffers?: number;
  /** WebAssembly memory the CPU backend's arena allocated (CpuBackend.wasmMemoryBytes). */
  wasm: number;
  /** GPU buffers the WebGPU backend holds, pool included (WebGpuBackend.memoryStats().bytes). */
  gpu: number;
  /** Node: the process's peak resident set so far (getrusage maxRSS). */
  peakRss?: number;
}

export interface ResearchLoadResult extends ResearchLoadCase {
  backend: string;
  /** Engine.load from the call to 'ready', ms. */
  loadedMs: number;
  /** When each load stage began, ms after the call. */
  stagesMs: Partial<Record<LoadProgress['stage'], number>>;
  /** Engine.analyse of the prompt (tokenising included), ms: the first lens heatmap's data. */
  firstHeatmapMs: number;
  nTokens: number;
  /** The estimate for this load (null: none could be read; see estimateFrom). */
  estimate: { weightBytes: number; kvCacheBytes: number; activationBytes: number; totalBytes: number } | null;
  /** Where the estimate was read: the folder itself, or (GGUF, which the UI cannot estimate) its binary16 safetensors twin with the GGUF's storage. */
  estimateFrom: string;
  /** Memory before the load (baseline), after it and after the first heatmap. */
  memory: { before: MemoryReading; loaded: MemoryReading; heatmap: MemoryReading };
  /** The heatmap's last final-layer margin (a number to compare across environments). */
  lastMargin: number;
}

/**
 * Loads `files` on `backend` as `c` says and analyses the 64-token prompt.
 * @param estimateFiles the folder to estimate (the same as `files`, or a GGUF's safetensors twin).
 * @param estimateDtype the storage to estimate it with (a GGUF file: its own quantisation).
 * @param readMemory the environment's memory reading (called after a collection where it can force one).
 * @throws the errors of Engine.load / estimateModel / Engine.analyse, and Error when the tokenizer
 *   gives no 64-token prefix of the prompt text.
 */
export async function measureResearchLoad(c: ResearchLoadCase, files: ModelFiles, estimateFiles: ModelFiles, estimateDtype: WeightDtype, backend: Backend,
  readMemory: () => Promise<MemoryReading>): Promise<ResearchLoadResult> {
  const est = await estimateModel(estimateFiles, { weightDtype: estimateDtype }).catch(() => null);
  const before = await readMemory();
  const stagesMs: ResearchLoadResult['stagesMs'] = {};
  const t0 = performance.now();
  const engine = await Engine.load(files, backend, (p) => { stagesMs[p.stage] ??= performance.now() - t0; }, { weightDtype: c.weights, warmUp: true, measureLogitError: 'on-demand' });
  const loadedMs = performance.now() - t0;
  try {
    const loaded = await readMemory();
    const t1 = performance.now();
    const { text } = promptOfLength(engine.prompts, HEATMAP_TOKENS);
    const a = await engine.analyse({ prompt: text, good: { text: RESEARCH_FUTURES.good }, bad: { text: RESEARCH_FUTURES.bad } });
    const firstHeatmapMs = performance.now() - t1;
    const heatmap = await readMemory();
    return {
      ...c, backend: backend.description, loadedMs, stagesMs, firstHeatmapMs, nTokens: a.ids.length,
      estimate: est && { weightBytes: est.weightBytes, kvCacheBytes: est.kvCacheBytes, activationBytes: est.activationBytes, totalBytes: est.totalBytes },
      estimateFrom: estimateFiles === files ? 'itself' : `${estimateFiles.label} as ${estimateDtype}`,
      memory: { before, loaded, heatmap }, lastMargin: a.finalMargin[a.finalMargin.length - 1],
    };
  } finally {
    engine.dispose();
  }
}
