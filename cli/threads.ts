import { CpuBackend } from '../workers/engine/backend/cpu';
import { defaultThreads, MAX_THREADS } from '../workers/engine/backend/gemm_threads';

export const THREADS_USAGE = `Threads (every command): --threads N (1 … ${MAX_THREADS}; default: the logical cores, at most 8) for the CPU
  backend's matrix products (worker_threads sharing the WASM memory; results bit-identical to --threads 1).`;

/**
 * The CPU backend with --threads threads (already checked: cli/shared_flags.ts; default defaultThreads()), once its helper threads have started.
 */
export async function cpuBackendFromArgs(threads: number | undefined): Promise<CpuBackend> {
  const b = new CpuBackend(undefined, { threads: threads ?? defaultThreads() });
  await b.whenStarted();
  return b;
}
