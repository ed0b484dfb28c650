import type { Tensor } from '../backend/backend';
import { grid, Params, type GpuTensor, type KernelHost } from '../backend/webgpu_host';
import { WGSL_FLAT_GROUP } from './wgsl_math';

const WG = 256;

/**
 * An elementwise kernel y[i] = f(a[i]) or f(a[i], b[i]) over the flat tensor, one invocation per
 * element on a 2-D grid of 256-wide workgroups. `expr` is a WGSL expression in `a`, `b` and the
 * uniform scalar `p.c`; `lib` holds any helper functions it calls.
 */
function source(binary: boolean, expr: string, lib: string): string {
  return /* wgsl */ `
struct P { count: u32, c: f32 }
@group(0) @binding(0) var<uniform> p: P;
@group(0) @binding(1) var<storage, read> xa: array<f32>;
${binary ? '@group(0) @binding(2) var<storage, read> xb: array<f32>;' : ''}
@group(0) @binding(${binary ? 3 : 2}) var<storage, read_write> y: array<f32>;
${WGSL_FLAT_GROUP}
${lib}
@compute @workgroup_size(${WG})
fn main(@builtin(workgroup_id) wid: vec3u, @builtin(num_workgroups) nwg: vec3u, @builtin(local_invocation_index) li: u32) {
  let i = flat_group(wid, nwg) * ${WG}u + li;
  if (i >= p.count) { return; }
  let a = xa[i];
  ${binary ? 'let b = xb[i];' : ''}
  y[i] = ${expr};
}`;
}

/**
 * y = f(x) elementwise → new tensor with x's shape.
 * @param key pipeline cache key (one per distinct expression).
 * @param c the scalar the expression reads as `p.c`.
 */
export function unaryGpu(host: KernelHost, key: string, expr: string, lib: string, x: Tensor, c = 0): GpuTensor {
  const gx = host.gpu(x);
  const y = host.alloc(x.shape);
  const pipe = host.pipeline(`unary:${key}`, () => source(false, expr, lib));
  host.dispatch(pipe, [gx, y], new Params().u32(x.size).f32(c), grid(Math.ceil(x.size / WG), host.maxWorkgroupsPerDim));
  return y;
}

/**
 * y = f(a, b) elementwise → new tensor with a's shape.
 * @throws Error when a and b differ in size.
 */
export function binaryGpu(host: KernelHost, key: string, expr: string, lib: string, a: Tensor, b: Tensor, c = 0): GpuTensor {
  if (a.size !== b.size) throw new Error(`${key}: sizes differ ([${a.shape}] vs [${b.shape}])`);
  const ga = host.gpu(a), gb = host.gpu(b);
  const y = host.alloc(a.shape);
  const pipe = host.pipeline(`binary:${key}`, () => source(true, expr, lib));
  host.dispatch(pipe, [ga, gb, y], new Params().u32(a.size).f32(c), grid(Math.ceil(a.size / WG), host.maxWorkgroupsPerDim));
  return y;
}
