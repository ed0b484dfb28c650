import type { Tensor } from '../backend/backend';
import { grid, Params, type KernelHost } from '../backend/webgpu_host';
import { WGSL_FLAT_GROUP } from './wgsl_math';

const WG = 256;

/** cache[offset·W + i] = x[i]: one invocation per value of x. */
const WRITE_ROWS = /* wgsl */ `
struct P { count: u32, start: u32 }
@group(0) @binding(0) var<uniform> p: P;
@group(0) @binding(1) var<storage, read> x: array<f32>;
@group(0) @binding(2) var<storage, read_write> cache: array<f32>;
${WGSL_FLAT_GROUP}
@compute @workgroup_size(${WG})
fn main(@builtin(workgroup_id) wid: vec3u, @builtin(num_workgroups) nwg: vec3u, @builtin(local_invocation_index) li: u32) {
  let i = flat_group(wid, nwg) * ${WG}u + li;
  if (i < p.count) { cache[p.start + i] = x[i]; }
}`;

/**
 * Writes x [n, W] into rows offset..offset+n−1 of cache [ctx, W] in place, as a dispatch rather
 * than a buffer copy: a copy closes the compute pass, and the split attention path writes k and v
 * of every layer.
 * @throws Error when the widths differ or the rows fall outside the cache.
 */
export function writeRowsGpu(host: KernelHost, cache: Tensor, x: Tensor, offset: number): void {
  const gc = host.gpu(cache), gx = host.gpu(x);
  const W = cache.shape[cache.shape.length - 1];
  const rows = cache.size / W, n = x.size / W;
  if (x.shape[x.shape.length - 1] !== W) throw new Error('writeRows: widths differ');
  if (!Number.isInteger(offset) || offset < 0 || offset + n > rows) throw new Error(`writeRows: rows ${offset}..${offset + n} exceed the cache (${rows} rows)`);
  if (x.size === 0) return;
  host.dispatch(host.pipeline('write_rows', () => WRITE_ROWS), [gx, gc], new Params().u32(x.size).u32(offset * W), grid(Math.ceil(x.size / WG), host.maxWorkgroupsPerDim));
}
