import type { RowOp, Tensor } from '../backend/backend';
import { grid, Params, type GpuTensor, type KernelHost } from '../backend/webgpu_host';
import { WGSL_ACOS, WGSL_FLAT_GROUP, WGSL_SINCOS } from './wgsl_math';

const WG = 256;
const KIND: Record<RowOp['kind'], number> = { add: 0, add_norm_preserving: 1, rotate: 2, project_out: 3, set: 4, patch: 5 };

/**
 * One workgroup per row, one kernel for every RowOp kind (switch on p.kind). Unselected rows are
 * copied. Reductions (h·h, h·v, ‖h + αv‖², and for rotate ‖e2‖²) are workgroup tree sums; v·v
 * comes from the host in float64. For patch, `v` is the replacement [n, W] and row r reads row r.
 */
const ROW_OP = /* wgsl */ `
struct P { n: u32, w: u32, kind: u32, alpha: f32, theta: f32, useT: u32, t: f32, vv: f32 }
@group(0) @binding(0) var<uniform> p: P;
@group(0) @binding(1) var<storage, read> x: array<f32>;
@group(0) @binding(2) var<storage, read> v: array<f32>;
@group(0) @binding(3) var<storage, read> rows: array<u32>;
@group(0) @binding(4) var<storage, read_write> y: array<f32>;
var<workgroup> r0: array<f32, ${WG}>;
var<workgroup> r1: array<f32, ${WG}>;
var<workgroup> r2: array<f32, ${WG}>;
${WGSL_FLAT_GROUP}
${WGSL_SINCOS}
${WGSL_ACOS}
fn reduce3(li: u32, a: f32, b: f32, c: f32) -> vec3f {
  r0[li] = a; r1[li] = b; r2[li] = c;
  workgroupBarrier();
  for (var s = ${WG / 2}u; s > 0u; s = s >> 1u) {
    if (li < s) { r0[li] = r0[li] + r0[li + s]; r1[li] = r1[li] + r1[li + s]; r2[li] = r2[li] + r2[li + s]; }
    workgroupBarrier();
  }
  let sums = vec3f(r0[0], r1[0], r2[0]);
  workgroupBarrier();
  return sums;
}
@compute @workgroup_size(${WG})
fn main(@builtin(workgroup_id) wid: vec3u, @builtin(num_workgroups) nwg: vec3u, @builtin(local_invocation_index) li: u32) {
  let r = flat_group(wid, nwg);
  if (r >= p.n) { return; }
  let o = r * p.w;
  let selected = rows[r] != 0u;
  var hh = 0.0; var hv = 0.0; var ss = 0.0;
  for (var i = li; i < p.w; i = i + ${WG}u) {
    let h = x[o + i];
    let vi = v[select(i, o + i, p.kind == 5u)];
    let s = h + p.alpha * vi;
    hh = hh + h * h; hv = hv + h * vi; ss = ss + s * s;
  }
  let red = reduce3(li, hh, hv, ss);
  let hn = sqrt(red.x);
  let vn = sqrt(p.vv);
  // rotate: e2 = v̂ − cos·ĥ spans the plane's second axis
  var cs = 0.0;
  var e2n = 0.0;
  let planar = hn > 0.0 && vn > 0.0;
  if (p.kind == 2u) {
    var e2s = 0.0;
    if (planar) {
      cs = clamp(red.y / (hn * vn), -1.0, 1.0);
      for (var i = li; i < p.w; i = i + ${WG}u) { let e = v[i] / vn - cs * x[o + i] / hn; e2s = e2s + e * e; }
    }
    e2n = sqrt(reduce3(li, e2s, 0.0, 0.0).x);
  }
  var theta = p.theta;
  if (p.useT != 0u) { theta = p.t * acos_acc(cs); }
  let sc = sincos_acc(theta);
  var f = 0.0;
  if (red.z > 0.0) { f = hn / sqrt(red.z); }
  for (var i = li; i < p.w; i = i + ${WG}u) {
    let h = x[o + i];
    var res = h;
    if (selected) {
      switch p.kind {
        case 0u: { res = h + p.alpha * v[i]; }
        case 1u: { res = (h + p.alpha * v[i]) * f; }
        case 2u: {
          // e2n below ~1e-6 (f32 noise on unit vectors): h ∥ v, the plane is undefined, keep h
          if (planar && e2n >= 1e-6) {
            let e = v[i] / vn - cs * h / hn;
            res = hn * (sc.y * h / hn + sc.x * e / e2n);
          }
        }
        case 3u: { if (p.vv > 0.0) { res = h - (red.y / p.vv) * v[i]; } }
        case 4u: { res = v[i]; }
        default: { res = v[o + i]; }
      }
    }
    y[o + i] = res;
  }
}`;

/**
 * Applies a steering op (DESIGN.md §2; definitions and sources in row_op.cpu.ts) to the rows of
 * x [n, W] where rows[r] = 1 → new tensor [n, W].
 * - rotate leaves a row unchanged when h ∥ v within float32 noise (‖v̂ − cos·ĥ‖ < 1e-6), where the
 *   CPU reference's float64 threshold is 1e-12.
 * @throws Error when the vector is not W long (patch: n·W), or rows is not n long.
 */
export function rowOpGpu(host: KernelHost, x: Tensor, op: RowOp, rows: Uint8Array): GpuTensor {
  const gx = host.gpu(x);
  const w = x.shape[x.shape.length - 1];
  const n = w === 0 ? 0 : x.size / w;
  if (rows.length !== n) throw new Error(`rowOp: row mask has ${rows.length} entries, x [${x.shape}] has ${n} rows`);
  const vec = op.kind === 'patch' ? op.replacement : op.v;
  const need = op.kind === 'patch' ? n * w : w;
  if (vec.length !== need) throw new Error(`rowOp ${op.kind}: vector has ${vec.length} values, expected ${need}`);
  let vv = 0;
  if (op.kind !== 'patch') for (let i = 0; i < w; i++) vv += op.v[i] * op.v[i];
  const y = host.alloc(x.shape);
  if (y.size === 0) return y;
  const gv = host.hostData(vec);
  const gr = host.hostData(Uint32Array.from(rows));
  const alpha = op.kind === 'add' || op.kind === 'add_norm_preserving' ? op.alpha : 0;
  const useT = op.kind === 'rotate' && op.theta === undefined;
  const params = new Params().u32(n).u32(w).u32(KIND[op.kind]).f32(alpha)
    .f32(op.kind === 'rotate' ? op.theta ?? 0 : 0).u32(useT ? 1 : 0).f32(op.kind === 'rotate' ? op.t ?? 0 : 0).f32(vv);
  host.dispatch(host.pipeline('row_op', () => ROW_OP), [gx, gv, gr, y], params, grid(n, host.maxWorkgroupsPerDim));
  host.release(gv);
  host.release(gr);
  return y;
}
