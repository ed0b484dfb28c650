import type { Backend } from './backend';
import { CpuBackend } from './cpu';
import { defaultThreads } from './gemm_threads';
import { WebGpuBackend } from './webgpu';

/**
 * Picks the compute backend: WebGPU when asked for or available ('auto'), else the CPU reference
 * with the reason in its description (shown on the backend badge), on options.threads threads
 * (default defaultThreads(): the logical cores up to 8 where threads are available, e.g. a
 * cross-origin isolated page; else 1), resolved once its helper threads have started.
 * @throws Error when 'webgpu' is required but unavailable.
 */
export async function selectBackend(choice: 'auto' | 'webgpu' | 'cpu', options: { threads?: number } = {}): Promise<Backend> {
  const cpu = async (reason?: string) => {
    const b = new CpuBackend(reason, { threads: options.threads ?? defaultThreads() });
    await b.whenStarted();
    return b;
  };
  if (choice === 'cpu') return cpu();
  try {
    return await WebGpuBackend.create();
  } catch (e) {
    if (choice === 'webgpu') throw e;
    return cpu((e as Error).message);
  }
}
