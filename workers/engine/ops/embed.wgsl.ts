import type { Tensor } from '../backend/backend';
import { grid, Params, type GpuTensor, type KernelHost } from '../backend/webgpu_host';
import { WGSL_FLAT_GROUP } from './wgsl_math';

const WG = 256;

/** y[r, c] = table[ids[r], c]·scale, one invocation per output element. */
const EMBED = /* wgsl */ `
struct P { count: u32, d: u32, scale: f32 }
@group(0) @binding(0) var<uniform> p: P;
@group(0) @binding(1) var<storage, read> table: array<f32>;
@group(0) @binding(2) var<storage, read> ids: array<u32>;
@group(0) @binding(3) var<storage, read_write> y: array<f32>;
${WGSL_FLAT_GROUP}
@compute @workgroup_size(${WG})
fn main(@builtin(workgroup_id) wid: vec3u, @builtin(num_workgroups) nwg: vec3u, @builtin(local_invocation_index) li: u32) {
  let i = flat_group(wid, nwg) * ${WG}u + li;
  if (i >= p.count) { return; }
  let r = i / p.d;
  y[i] = table[ids[r] * p.d + (i - r * p.d)] * p.scale;
}`;

/**
 * Embedding gather: rows of table [V, D] at ids, times scale (Gemma: √d_model) → [ids.length, D].
 * @throws Error on an id outside [0, V) (checked on the host before anything is recorded).
 */
export function embedGpu(host: KernelHost, table: Tensor, ids: Int32Array, scale: number): GpuTensor {
  const gt = host.gpu(table);
  const [V, D] = table.shape;
  for (const id of ids) if (!(id >= 0 && id < V)) throw new Error(`token id ${id} is outside the vocabulary [0, ${V})`);
  const y = host.alloc([ids.length, D]);
  if (y.size === 0) return y;
  const gi = host.hostData(ids);
  host.dispatch(host.pipeline('embed', () => EMBED), [gt, gi, y], new Params().u32(y.size).u32(D).f32(scale), grid(Math.ceil(y.size / WG), host.maxWorkgroupsPerDim));
  host.release(gi);
  return y;
}
