import type { Activation, Tensor } from '../backend/backend';
import type { GpuTensor, KernelHost } from '../backend/webgpu_host';
import { binaryGpu, unaryGpu } from './elementwise.wgsl';
import { WGSL_ERF, WGSL_TANH } from './wgsl_math';

/**
 * The activations as WGSL, matching activation.cpu.ts: silu x·σ(x); gelu x·Φ(x) with erf from
 * Numerical Recipes; gelu_tanh HF gelu_new / gelu_pytorch_tanh (Hendrycks & Gimpel 2016,
 * arXiv 1606.08415); relu; sigmoid and identity (the sparse MLP's scalings). exp's argument is clamped so that silu of a very negative x is −0
 * rather than x/inf.
 */
export const ACT_LIB = /* wgsl */ `
${WGSL_ERF}
${WGSL_TANH}
fn act_silu(x: f32) -> f32 { return x / (1.0 + exp(min(-x, 88.0))); }
fn act_gelu(x: f32) -> f32 { return 0.5 * x * (1.0 + erf_acc(x * 0.7071067811865476)); }
fn act_gelu_tanh(x: f32) -> f32 { return 0.5 * x * (1.0 + tanh_acc(0.7978845608028654 * (x + 0.044715 * x * x * x))); }
fn act_relu(x: f32) -> f32 { return max(x, 0.0); }
fn act_sigmoid(x: f32) -> f32 { return 1.0 / (1.0 + exp(min(-x, 88.0))); }
fn act_identity(x: f32) -> f32 { return x; }
`;

/** act(x) elementwise → new tensor with x's shape. */
export function actGpu(host: KernelHost, x: Tensor, act: Activation): GpuTensor {
  return unaryGpu(host, `act_${act}`, `act_${act}(a)`, ACT_LIB, x);
}

/**
 * act(gate)·up elementwise (SwiGLU: Shazeer 2020, arXiv 2002.05202; GeGLU) → new tensor.
 * @throws Error when gate and up differ in size.
 */
export function gatedActGpu(host: KernelHost, gate: Tensor, up: Tensor, act: Activation): GpuTensor {
  return binaryGpu(host, `gated_${act}`, `act_${act}(a) * b`, ACT_LIB, gate, up);
}
