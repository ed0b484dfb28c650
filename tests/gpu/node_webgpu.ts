import { WebGpuBackend, type WebGpuOptions } from '../../workers/engine/backend/webgpu';

/**
 * WebGPU in Node for kernel and numerics tests: Dawn from the npm package `webgpu`, on the machine's
 * Vulkan driver. On Debian 12 that is Mesa 25 lavapipe from bookworm-backports
 * (`mesa-vulkan-drivers`, installed by .ci/run), which offers 'shader-f16' and 'subgroups' — the
 * features Chromium's SwiftShader lacks (../shared/TESTING.md, "WebGPU in Node"). The engine's
 * WebGpuBackend is used unchanged: Dawn's GPU object is installed as navigator.gpu.
 */

/** Features the tests in tests/gpu/ exercise. */
export type NeededFeature = 'shader-f16' | 'subgroups';

let installed: Promise<GPU | null> | null = null;

/**
 * Installs Dawn's WebGPU globals (GPUBufferUsage, …) and navigator.gpu once per process.
 * @returns the GPU object, or null when the `webgpu` package cannot load here (no such platform binary).
 */
export function installNodeWebGpu(): Promise<GPU | null> {
  installed ??= (async () => {
    try {
      const { create, globals } = await import('webgpu');
      Object.assign(globalThis, globals);
      const gpu = create([]);
      const g = globalThis as { navigator?: object };
      if (!g.navigator) g.navigator = {};
      Object.defineProperty(g.navigator, 'gpu', { value: gpu, configurable: true });
      return gpu;
    } catch {
      return null;
    }
  })();
  return installed;
}

/** What the Node adapter offers: its description and which of the needed features it has. */
export interface NodeAdapter {
  description: string;
  features: Set<string>;
}

/**
 * The Node adapter, or a sentence saying why there is none, so a test can skip with the reason on a
 * developer machine and fail with it in CI (see requireFeatures).
 */
export async function nodeAdapter(): Promise<NodeAdapter | string> {
  const gpu = await installNodeWebGpu();
  if (!gpu) return 'the npm package `webgpu` (Dawn) does not load on this platform';
  const adapter = await gpu.requestAdapter();
  if (!adapter) return 'Dawn found no Vulkan adapter (install Mesa 25 lavapipe: `apt-get install -t bookworm-backports mesa-vulkan-drivers`)';
  const info = adapter.info;
  return { description: [info.vendor, info.architecture, info.device, info.description].filter((s) => s).join(' '), features: new Set(adapter.features) };
}

/**
 * Why the Node adapter cannot run a test that needs `features`, or null when it can. In CI (CI set)
 * the caller must fail on a non-null reason, not skip: the lavapipe install is part of CI.
 */
export async function missingFeatures(features: readonly NeededFeature[]): Promise<string | null> {
  const a = await nodeAdapter();
  if (typeof a === 'string') return a;
  const missing = features.filter((f) => !a.features.has(f));
  return missing.length ? `the Node WebGPU adapter (${a.description}) lacks ${missing.join(', ')}` : null;
}

/** A WebGpuBackend on the Node adapter (navigator.gpu installed by installNodeWebGpu). */
export async function nodeBackend(options: WebGpuOptions = {}): Promise<WebGpuBackend> {
  await installNodeWebGpu();
  return WebGpuBackend.create(options);
}
