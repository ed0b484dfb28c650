/**
 * The Chromium side of the research-checkpoint load benchmark (bench/load.ts --research --browser):
 * one case at a time, each on a fresh WebGpuBackend (SwiftShader here; a real GPU with bench/gpu.sh),
 * from the mock Hub the runner started (HubFiles with its URL as the endpoint, as the app's Hub
 * form with an endpoint; no Cache Storage), measured by bench/research_load.ts. Memory: the page's
 * JS heap (performance.memory, precise with --enable-precise-memory-info, after gc() with
 * --js-flags=--expose-gc) and the GPU buffers the backend holds. Exposes `window.runLoadBench`.
 */
import { WebGpuBackend } from '../workers/engine/backend/webgpu';
import { HubFiles } from '../workers/engine/io/hub_files';
import type { WeightDtype } from '../workers/engine/model/load';
import { measureResearchLoad, type MemoryReading, type ResearchLoadCase, type ResearchLoadResult } from './research_load';

/** One case as the runner sends it: the repos on the mock Hub to load and to estimate. */
export interface PageLoadCase extends ResearchLoadCase {
  repo: string;
  estimateRepo: string;
  estimateDtype: WeightDtype;
}

declare global {
  interface Window { runLoadBench: (endpoint: string, c: PageLoadCase) => Promise<ResearchLoadResult> }
}

const heap = (): number | undefined => (performance as Performance & { memory?: { usedJSHeapSize: number } }).memory?.usedJSHeapSize;

window.runLoadBench = async (endpoint, c) => {
  const backend = await WebGpuBackend.create();
  const read = async (): Promise<MemoryReading> => {
    (globalThis as { gc?: () => void }).gc?.();
    await new Promise((r) => setTimeout(r, 0));
    return { jsHeap: heap(), wasm: 0, gpu: backend.memoryStats().bytes };
  };
  const files = new HubFiles(c.repo, { endpoint });
  const estimateFiles = c.estimateRepo === c.repo ? files : new HubFiles(c.estimateRepo, { endpoint });
  return measureResearchLoad({ model: c.model, storage: c.storage, weights: c.weights }, files, estimateFiles, c.estimateDtype, backend, read);
};
