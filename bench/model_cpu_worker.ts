/**
 * Our CPU backend for the model benchmark (bench/model.ts) on several threads, in a dedicated
 * worker: the WASM matmul's calling thread waits for its helpers in Atomics.wait, which a page's main
 * thread may not (gemm_threads.ts), so on the page CpuBackend runs on one thread whatever it asks.
 * The product runs its engine in a worker too (workers/inference.worker.ts).
 *
 * Messages in → out: { load: { modelUrl, contextLength, threads } } → { threads } (those running);
 * { run: { ids, nDecode } } → { run: GreedyRun }; { dispose: true } → {}; a failure → { error }.
 */
import { CpuBackend } from '../workers/engine/backend/cpu';
import { Engine } from '../workers/engine/engine';
import { HttpFiles } from '../workers/engine/io/model_files';
import { engineGreedy } from './page_tools';

let engine: Engine | null = null;

self.onmessage = async (e: MessageEvent<{ load?: { modelUrl: string; contextLength: number; threads: number }; run?: { ids: number[]; nDecode: number }; dispose?: true }>) => {
  try {
    const m = e.data;
    if (m.load) {
      const backend = new CpuBackend(undefined, { threads: m.load.threads });
      await backend.whenStarted();
      engine = await Engine.load(new HttpFiles('bench model', m.load.modelUrl), backend, undefined, { contextLength: m.load.contextLength });
      self.postMessage({ threads: backend.runningThreads });
    } else if (m.run) {
      if (!engine) throw new Error('run before load');
      self.postMessage({ run: await engineGreedy(engine, m.run.ids, m.run.nDecode) });
    } else {
      engine?.dispose();
      engine = null;
      self.postMessage({});
    }
  } catch (err) {
    self.postMessage({ error: err instanceof Error ? err.message : String(err) });
  }
};
