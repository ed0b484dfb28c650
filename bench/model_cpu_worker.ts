/**
 * The CPU backend's rows of the model benchmark (bench/model.ts) on several threads, in a dedicated
 * worker: the WASM matmul's calling thread waits for its helpers in Atomics.wait, which a page's main
 * thread may not (gemm_threads.ts), so on the page CpuBackend runs on one thread whatever it asks.
 * The product runs its engine in a worker too (workers/inference.worker.ts).
 *
 * Message in: { o: ModelBenchOptions, threads }; out: { rows } or { error }.
 */
import { CpuBackend } from '../workers/engine/backend/cpu';
import { engineRows, type ModelBenchOptions, type Row } from './model_rows';

self.onmessage = async (e: MessageEvent<{ o: ModelBenchOptions; threads: number }>) => {
  try {
    const backend = new CpuBackend(undefined, { threads: e.data.threads });
    await backend.whenStarted();
    const rows: Row[] = [];
    await engineRows(e.data.o, 'cpu', backend, rows); // disposes the backend (its engine does)
    self.postMessage({ rows });
  } catch (err) {
    self.postMessage({ error: err instanceof Error ? err.message : String(err) });
  }
};
