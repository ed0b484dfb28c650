import type { Backend } from './backend';
import { CpuBackend } from './cpu';
import { WebGpuBackend } from './webgpu';

/**
 * Picks the compute backend: WebGPU when asked for or available ('auto'), else the CPU reference
 * with the reason in its description (shown on the backend badge).
 * @throws Error when 'webgpu' is required but unavailable.
 */
export async function selectBackend(choice: 'auto' | 'webgpu' | 'cpu'): Promise<Backend> {
  if (choice === 'cpu') return new CpuBackend();
  try {
    return await WebGpuBackend.create();
  } catch (e) {
    if (choice === 'webgpu') throw e;
    return new CpuBackend((e as Error).message);
  }
}
