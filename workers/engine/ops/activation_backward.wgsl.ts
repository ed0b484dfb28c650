import type { Activation, Tensor } from '../backend/backend';
import { grid, Params, type GpuTensor, type KernelHost } from '../backend/webgpu_host';
import { ACT_LIB } from './activation.wgsl';
import { binaryGpu } from './elementwise.wgsl';
import { WGSL_FLAT_GROUP } from './wgsl_math';

const WG = 256;

/**
 * act'(x) as WGSL, the derivatives of activation.wgsl.ts's ACT_LIB (CPU reference activateGrad in
 * activation_backward.cpu.ts): silu σ(1 + x(1 − σ)); gelu Φ(x) + x·φ(x); gelu_tanh
 * ½(1 + t) + ½x(1 − t²)·√(2/π)(1 + 3·0.044715x²), t = tanh(√(2/π)(x + 0.044715x³)); relu [x > 0];
 * sigmoid σ(1 − σ); identity 1.
 */
export const ACT_GRAD_LIB = /* wgsl */ `
${ACT_LIB}
fn actg_silu(x: f32) -> f32 { let s = act_sigmoid(x); return s * (1.0 + x * (1.0 - s)); }
fn actg_gelu(x: f32) -> f32 { return 0.5 * (1.0 + erf_acc(x * 0.7071067811865476)) + x * exp(-0.5 * x * x) * 0.3989422804014327; }
fn actg_gelu_tanh(x: f32) -> f32 {
  let t = tanh_acc(0.7978845608028654 * (x + 0.044715 * x * x * x));
  return 0.5 * (1.0 + t) + 0.5 * x * (1.0 - t * t) * 0.7978845608028654 * (1.0 + 0.134145 * x * x);
}
fn actg_relu(x: f32) -> f32 { return select(0.0, 1.0, x > 0.0); }
fn actg_sigmoid(x: f32) -> f32 { let s = act_sigmoid(x); return s * (1.0 - s); }
fn actg_identity(x: f32) -> f32 { return 1.0; }
`;

/**
 * dy·act'(x) elementwise (Backend.actBackward) → new tensor with x's shape.
 * @throws Error when x and dy differ in size.
 */
export function actBackwardGpu(host: KernelHost, x: Tensor, dy: Tensor, act: Activation): GpuTensor {
  return binaryGpu(host, `act_backward_${act}`, `b * actg_${act}(a)`, ACT_GRAD_LIB, x, dy);
}

/** One invocation per element: dGate = dy·up·act'(gate), dUp = dy·act(gate). */
const gatedSource = (act: Activation): string => /* wgsl */ `
struct P { count: u32 }
@group(0) @binding(0) var<uniform> p: P;
@group(0) @binding(1) var<storage, read> gate: array<f32>;
@group(0) @binding(2) var<storage, read> up: array<f32>;
@group(0) @binding(3) var<storage, read> dy: array<f32>;
@group(0) @binding(4) var<storage, read_write> dGate: array<f32>;
@group(0) @binding(5) var<storage, read_write> dUp: array<f32>;
${WGSL_FLAT_GROUP}
${ACT_GRAD_LIB}
@compute @workgroup_size(${WG})
fn main(@builtin(workgroup_id) wid: vec3u, @builtin(num_workgroups) nwg: vec3u, @builtin(local_invocation_index) li: u32) {
  let i = flat_group(wid, nwg) * ${WG}u + li;
  if (i >= p.count) { return; }
  let g = gate[i];
  dGate[i] = dy[i] * up[i] * actg_${act}(g);
  dUp[i] = dy[i] * act_${act}(g);
}`;

/**
 * The input gradients of act(gate)·up (Backend.gatedActBackward; SwiGLU / GeGLU).
 * @throws Error when gate, up and dy differ in size.
 */
export function gatedActBackwardGpu(host: KernelHost, gate: Tensor, up: Tensor, dy: Tensor, act: Activation): { dGate: GpuTensor; dUp: GpuTensor } {
  if (gate.size !== up.size || gate.size !== dy.size) throw new Error(`gatedActBackward: gate, up and dy differ in size (${gate.size}, ${up.size}, ${dy.size})`);
  const tensors = [host.gpu(gate), host.gpu(up), host.gpu(dy)];
  const dGate = host.alloc(gate.shape), dUp = host.alloc(gate.shape);
  if (gate.size > 0) host.dispatch(host.pipeline(`gated_backward_${act}`, () => gatedSource(act)), [...tensors, dGate, dUp], new Params().u32(gate.size), grid(Math.ceil(gate.size / WG), host.maxWorkgroupsPerDim));
  return { dGate, dUp };
}
