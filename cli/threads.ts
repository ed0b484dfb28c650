import { numberFlag, type Args } from './args';
import { CpuBackend } from '../workers/engine/backend/cpu';
import { defaultThreads, MAX_THREADS } from '../workers/engine/backend/gemm_threads';

export const THREADS_USAGE = `Threads (every command): --threads N (1 … ${MAX_THREADS}; default: the logical cores, at most 8) for the CPU
  backend's matrix products (worker_threads sharing the WASM memory; results bit-identical to --threads 1).`;

/**
 * The CPU backend with --threads threads (default defaultThreads()), once its helper threads have started.
 * @throws Error naming the flag when the value is not a whole number in [1, MAX_THREADS].
 */
export async function cpuBackendFromArgs(a: Args): Promise<CpuBackend> {
  const threads = numberFlag(a, 'threads', defaultThreads(), { int: true, min: 1, max: MAX_THREADS });
  const b = new CpuBackend(undefined, { threads });
  await b.whenStarted();
  return b;
}
