import type { Tensor } from '../backend/backend';
import { grid, Params, type GpuTensor, type KernelHost } from '../backend/webgpu_host';
import { WGSL_FLAT_GROUP } from './wgsl_math';

const WG = 256;

/**
 * One invocation per element of x [n, H·headDim]: within each head, dim j < half pairs with
 * j + half (rotate_half); dims ≥ 2·half pass through. cs holds (cos, sin) per (absolute position, j).
 */
const ROPE = /* wgsl */ `
struct P { count: u32, headDim: u32, nHeads: u32, half: u32, pos0: u32 }
@group(0) @binding(0) var<uniform> p: P;
@group(0) @binding(1) var<storage, read> x: array<f32>;
@group(0) @binding(2) var<storage, read> cs: array<f32>;
@group(0) @binding(3) var<storage, read_write> y: array<f32>;
${WGSL_FLAT_GROUP}
@compute @workgroup_size(${WG})
fn main(@builtin(workgroup_id) wid: vec3u, @builtin(num_workgroups) nwg: vec3u, @builtin(local_invocation_index) li: u32) {
  let i = flat_group(wid, nwg) * ${WG}u + li;
  if (i >= p.count) { return; }
  let rh = i / p.headDim;
  let e = i - rh * p.headDim;
  let r = rh / p.nHeads + p.pos0;
  let base = i - e;
  if (e < p.half) {
    let t = 2u * (r * p.half + e);
    y[i] = x[i] * cs[t] - x[base + e + p.half] * cs[t + 1u];
  } else if (e < 2u * p.half) {
    let j = e - p.half;
    let t = 2u * (r * p.half + j);
    y[i] = x[i] * cs[t] + x[base + j] * cs[t + 1u];
  } else {
    y[i] = x[i];
  }
}`;

/**
 * The (cos, sin) table [rows, half, 2] of the angles pos·invFreq[j] for positions 0..rows−1,
 * computed in float64 on the host as in ropeCpu: WGSL's sin/cos are only specified to 2⁻¹¹
 * absolute, too loose for 1e-4 parity at positions in the thousands. Built once per invFreq and
 * grown as positions are reached (WebGpuBackend), so a decode step uploads nothing.
 */
export function ropePositions(rows: number, invFreq: Float32Array): Float32Array {
  const half = invFreq.length;
  const t = new Float32Array(rows * half * 2);
  for (let r = 0; r < rows; r++) {
    for (let j = 0; j < half; j++) {
      const a = r * invFreq[j];
      t[2 * (r * half + j)] = Math.cos(a);
      t[2 * (r * half + j) + 1] = Math.sin(a);
    }
  }
  return t;
}

/**
 * Rotary position embedding, rotate_half layout (Su et al. 2021, arXiv 2104.09864; HF
 * `apply_rotary_pos_emb`) on x [n, H·headDim] at positions pos0.. → new tensor.
 * @param table ropePositions(rows ≥ pos0 + n, invFreq) as a tensor [rows·half·2].
 * @throws Error when shapes disagree or rotaryDims is odd or exceeds headDim.
 */
export function ropeGpu(host: KernelHost, x: Tensor, nHeads: number, headDim: number, rotaryDims: number, pos0: number, table: Tensor): GpuTensor {
  const gx = host.gpu(x), gt = host.gpu(table);
  const half = rotaryDims / 2;
  if (!Number.isInteger(half) || rotaryDims > headDim) throw new Error(`rope: rotaryDims ${rotaryDims} must be even and ≤ headDim ${headDim}`);
  const w = nHeads * headDim;
  if (x.shape[x.shape.length - 1] !== w) throw new Error(`rope: x [${x.shape}] rows are not ${nHeads} heads × ${headDim}`);
  const n = x.size / w;
  if (table.size < (pos0 + n) * half * 2) throw new Error(`rope: table has ${table.size} values, positions ..${pos0 + n} need ${pos0 + n}·${half}·2`);
  const y = host.alloc(x.shape);
  if (y.size === 0) return y;
  host.dispatch(host.pipeline('rope', () => ROPE), [gx, gt, y], new Params().u32(x.size).u32(headDim).u32(nHeads).u32(half).u32(pos0), grid(Math.ceil(x.size / WG), host.maxWorkgroupsPerDim));
  return y;
}
