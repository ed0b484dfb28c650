import type { RowGroups, RowOp, Tensor } from '../backend/backend';
import { grid, Params, type GpuTensor, type KernelHost, type KernelTuning } from '../backend/webgpu_host';
import { WGSL_ACOS, WGSL_FLAT_GROUP, WGSL_SINCOS } from './wgsl_math';

/** 'gpu': lanes per segment (one workgroup each). */
const GPU_WG = 256;
/** 'cpu': segments per workgroup (one invocation each). */
const CPU_WG = 16;
const KIND: Record<RowOp['kind'], number> = { add: 0, add_norm_preserving: 1, rotate: 2, project_out: 3, set: 4, patch: 5 };

/**
 * One kernel for every RowOp kind (switch on p.kind), over segments: a segment is one column group
 * [g·gw, (g+1)·gw) of one row (the whole row when the op has no groups). `sel` holds one flag per
 * segment (row selected and group selected); unselected segments are copied unchanged.
 * Reductions (max|h|, max|s|, then h·h, h·v, ‖s‖², and for rotate ‖e2‖²) run over the segment on
 * values scaled to at most 1 (scale before squaring), with s = h/k + (α/k)·v and k = max(1, |α|), so
 * a huge dose or a huge activation never overflows a square; ‖v‖ comes from the host in float64. For patch, `v` is the replacement [n, W] and the segment reads its own columns.
 * - 'gpu': one workgroup of GPU_WG lanes per segment, reductions as workgroup tree sums;
 * - 'cpu': one invocation per segment, CPU_WG per workgroup, plain loops and no barriers.
 */
function source(tuning: KernelTuning): string {
  const lanes = tuning === 'gpu' ? GPU_WG : 1;
  const reduce = tuning === 'gpu'
    ? /* wgsl */ `
var<workgroup> r0: array<f32, ${GPU_WG}>;
var<workgroup> r1: array<f32, ${GPU_WG}>;
var<workgroup> r2: array<f32, ${GPU_WG}>;
fn reduce3(li: u32, a: f32, b: f32, c: f32) -> vec3f {
  r0[li] = a; r1[li] = b; r2[li] = c;
  workgroupBarrier();
  for (var s = ${GPU_WG / 2}u; s > 0u; s = s >> 1u) {
    if (li < s) { r0[li] = r0[li] + r0[li + s]; r1[li] = r1[li] + r1[li + s]; r2[li] = r2[li] + r2[li + s]; }
    workgroupBarrier();
  }
  let sums = vec3f(r0[0], r1[0], r2[0]);
  workgroupBarrier();
  return sums;
}`
    : /* wgsl */ `
fn reduce3(li: u32, a: f32, b: f32, c: f32) -> vec3f { return vec3f(a, b, c); }`;
  const maxRed = tuning === 'gpu'
    ? /* wgsl */ `
fn reduce_max2(li: u32, a: f32, b: f32) -> vec2f {
  r0[li] = a; r1[li] = b;
  workgroupBarrier();
  for (var s = ${GPU_WG / 2}u; s > 0u; s = s >> 1u) {
    if (li < s) { r0[li] = max(r0[li], r0[li + s]); r1[li] = max(r1[li], r1[li + s]); }
    workgroupBarrier();
  }
  let m = vec2f(r0[0], r1[0]);
  workgroupBarrier();
  return m;
}`
    : /* wgsl */ `
fn reduce_max2(li: u32, a: f32, b: f32) -> vec2f { return vec2f(a, b); }`;
  return /* wgsl */ `
struct P { segs: u32, ng: u32, w: u32, gw: u32, kind: u32, alpha: f32, theta: f32, useT: u32, t: f32, vn: f32, ak: f32, ik: f32 }
@group(0) @binding(0) var<uniform> p: P;
@group(0) @binding(1) var<storage, read> x: array<f32>;
@group(0) @binding(2) var<storage, read> v: array<f32>;
@group(0) @binding(3) var<storage, read> sel: array<u32>;
@group(0) @binding(4) var<storage, read_write> y: array<f32>;
${WGSL_FLAT_GROUP}
${WGSL_SINCOS}
${WGSL_ACOS}
${reduce}
${maxRed}
// safe division by a scale m (0 when the segment is all zeros)
fn unit(a: f32, m: f32) -> f32 { return select(0.0, a / m, m > 0.0); }
@compute @workgroup_size(${tuning === 'gpu' ? GPU_WG : CPU_WG})
fn main(@builtin(workgroup_id) wid: vec3u, @builtin(num_workgroups) nwg: vec3u, @builtin(local_invocation_index) lix: u32) {
  let sg = ${tuning === 'gpu' ? 'flat_group(wid, nwg)' : `flat_group(wid, nwg) * ${CPU_WG}u + lix`};
  let li = ${tuning === 'gpu' ? 'lix' : '0u'};
  if (sg >= p.segs) { return; }
  let o = (sg / p.ng) * p.w + (sg % p.ng) * p.gw;
  let selected = sel[sg] != 0u;
  let vec_op = p.kind >= 1u && p.kind <= 3u;
  // Scale before squaring: sums of squares run over h/max|h| and s/max|s| (s = h/k + (alpha/k)·v,
  // k = max(1, |alpha|)) and v/‖v‖, so no square overflows float32 for any finite h and any dose.
  var mh = 0.0; var ms = 0.0;
  if (vec_op) {
    for (var i = li; i < p.gw; i = i + ${lanes}u) {
      let h = x[o + i];
      mh = max(mh, abs(h));
      ms = max(ms, abs(h * p.ik + p.ak * v[i]));
    }
  }
  let m = reduce_max2(li, mh, ms);
  var hh = 0.0; var hv = 0.0; var ss = 0.0;
  if (vec_op) {
    for (var i = li; i < p.gw; i = i + ${lanes}u) {
      let h = unit(x[o + i], m.x);
      let vi = unit(v[i], p.vn);
      let s = unit(x[o + i] * p.ik + p.ak * v[i], m.y);
      hh = hh + h * h; hv = hv + h * vi; ss = ss + s * s;
    }
  }
  let red = reduce3(li, hh, hv, ss);
  let hu = sqrt(red.x);      // ‖h‖ / max|h|
  let hn = m.x * hu;         // ‖h‖
  // rotate: e2 = v̂ − cos·ĥ spans the plane's second axis
  var cs = 0.0;
  var e2n = 0.0;
  let planar = hu > 0.0 && p.vn > 0.0;
  if (p.kind == 2u) {
    var e2s = 0.0;
    if (planar) {
      cs = clamp(red.y / hu, -1.0, 1.0);
      for (var i = li; i < p.gw; i = i + ${lanes}u) { let e = unit(v[i], p.vn) - cs * unit(x[o + i], m.x) / hu; e2s = e2s + e * e; }
    }
    e2n = sqrt(reduce3(li, e2s, 0.0, 0.0).x);
  }
  var theta = p.theta;
  if (p.useT != 0u) { theta = p.t * acos_acc(cs); }
  let sc = sincos_acc(theta);
  // add_norm_preserving: (s/max|s|)·‖h‖/‖s/max|s|‖
  var f = 0.0;
  if (red.z > 0.0) { f = hn / sqrt(red.z); }
  for (var i = li; i < p.gw; i = i + ${lanes}u) {
    let h = x[o + i];
    var res = h;
    if (selected) {
      switch p.kind {
        case 0u: { res = h + p.alpha * v[i]; }
        case 1u: { res = unit(h * p.ik + p.ak * v[i], m.y) * f; }
        case 2u: {
          // e2n below ~1e-6 (f32 noise on unit vectors): h ∥ v, the plane is undefined, keep h
          if (planar && e2n >= 1e-6) {
            let e = unit(v[i], p.vn) - cs * unit(h, m.x) / hu;
            res = hn * (sc.y * unit(h, m.x) / hu + sc.x * e / e2n);
          }
        }
        case 3u: { if (p.vn > 0.0) { res = h - (m.x * red.y) * unit(v[i], p.vn); } }
        case 4u: { res = v[i]; }
        default: { res = v[o + i]; }
      }
    }
    y[o + i] = res;
  }
}`;
}

/**
 * Applies a steering op (DESIGN.md §2; definitions and sources in row_op.cpu.ts) to the rows of
 * x [n, W] where rows[r] = 1 → new tensor [n, W]. With `groups`, each selected row is split into
 * W/groups.size column groups and the op acts on each selected group on its own (norms, dots and
 * angles per group) with a vector of groups.size values; unselected rows and groups are copied
 * bit for bit.
 * - rotate leaves a segment unchanged when h ∥ v within float32 noise (‖v̂ − cos·ĥ‖ < 1e-6), where
 *   the CPU reference's float64 threshold is 1e-12.
 * @throws Error when rows is not n long, groups.size does not divide W, a group index is outside
 *   [0, W/groups.size), or the vector is not groups.size (no groups: W; patch: n·W) long.
 */
export function rowOpGpu(host: KernelHost, x: Tensor, op: RowOp, rows: Uint8Array, groups?: RowGroups): GpuTensor {
  const gx = host.gpu(x);
  const w = x.shape[x.shape.length - 1];
  const n = w === 0 ? 0 : x.size / w;
  if (rows.length !== n) throw new Error(`rowOp: row mask has ${rows.length} entries, x [${x.shape}] has ${n} rows`);
  const gw = groups ? groups.size : w;
  if (groups && !(Number.isInteger(gw) && gw > 0 && w % gw === 0)) throw new Error(`rowOp: group size ${gw} does not divide the row width ${w}`);
  const ng = gw === 0 ? 1 : w / gw;
  const picked = groups ? groups.indices : [0];
  for (const g of picked) if (!(Number.isInteger(g) && g >= 0 && g < ng)) throw new Error(`rowOp: group ${g} is outside [0, ${ng}) (${ng} groups of ${gw})`);
  const vec = op.kind === 'patch' ? op.replacement : op.v;
  const need = op.kind === 'patch' ? n * w : gw;
  if (vec.length !== need) throw new Error(`rowOp ${op.kind}: vector has ${vec.length} values, expected ${need}`);
  let vv = 0;
  if (op.kind !== 'patch') for (let i = 0; i < gw; i++) vv += op.v[i] * op.v[i];
  // ‖v‖ in float64 (v·v of a float32 vector cannot overflow a double; its root fits a float32 or is +∞)
  const vn = Math.sqrt(vv);
  const y = host.alloc(x.shape);
  if (y.size === 0) return y;
  const sel = new Uint32Array(n * ng);
  for (let r = 0; r < n; r++) if (rows[r]) for (const g of picked) sel[r * ng + g] = 1;
  const gv = host.hostData(vec);
  const gs = host.hostData(sel);
  const alpha = op.kind === 'add' || op.kind === 'add_norm_preserving' ? op.alpha : 0;
  const k = Math.max(1, Math.abs(alpha));
  const useT = op.kind === 'rotate' && op.theta === undefined;
  const params = new Params().u32(n * ng).u32(ng).u32(w).u32(gw).u32(KIND[op.kind]).f32(alpha)
    .f32(op.kind === 'rotate' ? op.theta ?? 0 : 0).u32(useT ? 1 : 0).f32(op.kind === 'rotate' ? op.t ?? 0 : 0).f32(vn).f32(alpha / k).f32(1 / k);
  const t = host.tuning;
  const groupsNeeded = t === 'gpu' ? n * ng : Math.ceil((n * ng) / CPU_WG);
  host.dispatch(host.pipeline(`row_op:${t}`, () => source(t)), [gx, gv, gs, y], params, grid(groupsNeeded, host.maxWorkgroupsPerDim));
  host.release(gv);
  host.release(gs);
  return y;
}
