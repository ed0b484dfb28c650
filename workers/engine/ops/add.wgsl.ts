import type { Tensor } from '../backend/backend';
import type { GpuTensor, KernelHost } from '../backend/webgpu_host';
import { binaryGpu } from './elementwise.wgsl';

/**
 * a + b elementwise (residual adds) → new tensor with a's shape.
 * @throws Error when the sizes differ.
 */
export function addGpu(host: KernelHost, a: Tensor, b: Tensor): GpuTensor {
  return binaryGpu(host, 'add', 'a + b', '', a, b);
}

/**
 * a − b elementwise (the SAE error term x − x̂) → new tensor with a's shape.
 * @throws Error when the sizes differ.
 */
export function subGpu(host: KernelHost, a: Tensor, b: Tensor): GpuTensor {
  return binaryGpu(host, 'sub', 'a - b', '', a, b);
}
