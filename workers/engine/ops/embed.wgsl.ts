import type { Tensor } from '../backend/backend';
import { grid, Params, type GpuTensor, type KernelHost } from '../backend/webgpu_host';
import { WGSL_FLAT_GROUP, wgslWeight } from './wgsl_math';

const WG = 256;

/**
 * y[r, c] = table[ids[r] − row0, c]·scale for the ids in [row0, row0 + rows), one invocation per
 * output element; the table binding holds rows row0.. of the whole table (one part of a row-chunked
 * table, or all of it), float32 or packed f16. Outputs whose id lies in another part are left alone.
 */
function embedSource(f16: boolean): string {
  return /* wgsl */ `
struct P { count: u32, d: u32, scale: f32, row0: u32, rows: u32 }
@group(0) @binding(0) var<uniform> p: P;
${wgslWeight(1, 'table', 'tv', f16)}
@group(0) @binding(2) var<storage, read> ids: array<u32>;
@group(0) @binding(3) var<storage, read_write> y: array<f32>;
${WGSL_FLAT_GROUP}
@compute @workgroup_size(${WG})
fn main(@builtin(workgroup_id) wid: vec3u, @builtin(num_workgroups) nwg: vec3u, @builtin(local_invocation_index) li: u32) {
  let i = flat_group(wid, nwg) * ${WG}u + li;
  if (i >= p.count) { return; }
  let r = i / p.d;
  let id = ids[r];
  if (id < p.row0 || id - p.row0 >= p.rows) { return; }
  y[i] = tv((id - p.row0) * p.d + (i - r * p.d)) * p.scale;
}`;
}

/**
 * Embedding gather: rows of table [V, D] at ids, times scale (Gemma: √d_model) → [ids.length, D].
 * The table may be float32 or f16 storage and may be row-chunked (ChunkedTensor): each part is
 * dispatched only when some id falls in its rows.
 * @throws Error on an id outside [0, V) (checked on the host before anything is recorded).
 */
export function embedGpu(host: KernelHost, table: Tensor, ids: Int32Array, scale: number): GpuTensor {
  if (table.shape.length !== 2) throw new Error(`embed: table must be [V, D], got [${table.shape}]`);
  const parts = host.rowParts(table);
  const [V, D] = table.shape;
  for (const id of ids) if (!(id >= 0 && id < V)) throw new Error(`token id ${id} is outside the vocabulary [0, ${V})`);
  const y = host.alloc([ids.length, D]);
  if (y.size === 0) return y;
  const gi = host.hostData(ids);
  const groups = grid(Math.ceil(y.size / WG), host.maxWorkgroupsPerDim);
  for (const { part, row0 } of parts) {
    const rows = part.shape[0];
    if (!ids.some((id) => id >= row0 && id < row0 + rows)) continue;
    const f16 = part.dtype === 'f16';
    const params = new Params().u32(y.size).u32(D).f32(scale).u32(row0).u32(rows);
    host.dispatch(host.pipeline(f16 ? 'embed_f16' : 'embed', () => embedSource(f16)), [part, gi, y], params, groups);
  }
  host.release(gi);
  return y;
}
