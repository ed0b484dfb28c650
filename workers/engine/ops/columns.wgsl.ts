import type { Tensor } from '../backend/backend';
import { grid, Params, type GpuTensor, type KernelHost } from '../backend/webgpu_host';
import { WGSL_FLAT_GROUP } from './wgsl_math';

const WG = 256;
const cols = (t: Tensor): number => t.shape[t.shape.length - 1];

/**
 * y[r, j] = x[r, col(j)] with col(j) = start + j (slice) or cols[j] (gather): strided column
 * copies, which copyBufferToBuffer cannot express.
 */
function source(gather: boolean): string {
  return /* wgsl */ `
struct P { count: u32, w: u32, c: u32, start: u32 }
@group(0) @binding(0) var<uniform> p: P;
@group(0) @binding(1) var<storage, read> x: array<f32>;
${gather ? '@group(0) @binding(2) var<storage, read> idx: array<u32>;' : ''}
@group(0) @binding(${gather ? 3 : 2}) var<storage, read_write> y: array<f32>;
${WGSL_FLAT_GROUP}
@compute @workgroup_size(${WG})
fn main(@builtin(workgroup_id) wid: vec3u, @builtin(num_workgroups) nwg: vec3u, @builtin(local_invocation_index) li: u32) {
  let i = flat_group(wid, nwg) * ${WG}u + li;
  if (i >= p.count) { return; }
  let r = i / p.w;
  let j = i - r * p.w;
  y[i] = x[r * p.c + ${gather ? 'idx[j]' : 'p.start + j'}];
}`;
}

/**
 * Columns [start, start + width) of x [n, C] → [n, width] (splits fused projections at run time).
 * @throws Error when the range leaves [0, C).
 */
export function sliceColsGpu(host: KernelHost, x: Tensor, start: number, width: number): GpuTensor {
  const gx = host.gpu(x);
  const C = cols(x), n = x.size / C;
  if (!(Number.isInteger(start) && Number.isInteger(width) && start >= 0 && width >= 0 && start + width <= C)) {
    throw new Error(`sliceCols: columns ${start}..${start + width} outside [0, ${C})`);
  }
  const y = host.alloc([n, width]);
  if (y.size === 0) return y;
  host.dispatch(host.pipeline('slice_cols', () => source(false)), [gx, y], new Params().u32(y.size).u32(width).u32(C).u32(start), grid(Math.ceil(y.size / WG), host.maxWorkgroupsPerDim));
  return y;
}

/**
 * Columns `idx` of x [n, C] → [n, idx.length] (repeats allowed).
 * @throws Error on a column outside [0, C).
 */
export function gatherColsGpu(host: KernelHost, x: Tensor, idx: Int32Array): GpuTensor {
  const gx = host.gpu(x);
  const C = cols(x), n = x.size / C;
  for (const c of idx) if (!(c >= 0 && c < C)) throw new Error(`gatherCols: column ${c} is outside [0, ${C})`);
  const y = host.alloc([n, idx.length]);
  if (y.size === 0) return y;
  const gi = host.hostData(idx);
  host.dispatch(host.pipeline('gather_cols', () => source(true)), [gx, gi, y], new Params().u32(y.size).u32(idx.length).u32(C).u32(0), grid(Math.ceil(y.size / WG), host.maxWorkgroupsPerDim));
  host.release(gi);
  return y;
}
