import type { Activation, ExpertMlp, Tensor } from '../backend/backend';
import { scaleOffset } from '../backend/quant';
import { grid, Params, type GpuDtype, type GpuTensor, type KernelHost } from '../backend/webgpu_host';
import { ACT_LIB } from './activation.wgsl';
import { term, weightRead } from './linear_gemv.wgsl';
import { WGSL_FLAT_GROUP } from './wgsl_math';

/**
 * The experts of a sparse MLP on the GPU, reading only the chosen experts' weights, with no host
 * readback mid-forward (Backend.moeExperts; the CPU groups rows on the host instead, model/moe.ts):
 *
 *   y[r] = Σ_j weights[r, j] · (down_e(act(gate_e x_r + b_g)·(up_e x_r + b_u)) + b_d),  e = indices[r, j]
 *
 * 1. plan (one workgroup): the n·k (row, slot) pairs are sorted by expert (a counting sort, pairs of
 *    one expert in slot order), giving each expert e its range off[e]..off[e+1] of the sorted list,
 *    and the indirect dispatch arguments of its two kernels: ⌈count_e / rb⌉ blocks of pairs.
 * 2. per expert e, two dispatches through dispatchWorkgroupsIndirect: up (h = act(gate x)·up x for
 *    each of its pairs, gate and up read in one pass) and down (weighted down projection of h, into
 *    the pair's own slot). An expert no row chose gets zero workgroups: its weights are never read,
 *    so a decode step reads only its k experts; in a prefill each expert's weights are read once per
 *    block of rb of its rows (tokens grouped by expert).
 * 3. combine: y[r] = the k slots of row r summed in ascending expert order, the order in which the
 *    CPU backend accumulates experts (model/moe.ts).
 *
 * One invocation per output column and block of pairs (the dot-kernel shape of linear_gemv.wgsl.ts,
 * no barriers; four values per step where the row width is a multiple of 4); weights float32, binary16 or Q8_0/Q4_0 (weightRead, float32 arithmetic), split into
 * row parts (ChunkedTensor) or not. Expert ids are rounded and clamped into [0, E) as moeRoute does.
 */

/**
 * Pairs per block (one invocation computes one output column of rb pairs, reading each weight once):
 * 1 for a single row (a decode step: each expert has at most one pair there, and a larger block
 * would only repeat it), else RB.
 */
const RB = 4;
/** Invocations per workgroup (output columns). */
const WG = 64;
/** Arguments per expert in the indirect buffer: up (x, y, z), then down (x, y, z). */
const ARGS = 6;

const PLAN = /* wgsl */ `
struct P { count: u32, e: u32, k: u32, tilesUp: u32, tilesDown: u32, rb: u32 }
@group(0) @binding(0) var<uniform> p: P;
@group(0) @binding(1) var<storage, read> idx: array<f32>;
@group(0) @binding(2) var<storage, read_write> order: array<u32>;
@group(0) @binding(3) var<storage, read_write> off: array<u32>;
@group(0) @binding(4) var<storage, read_write> args: array<u32>;
fn expert(s: u32) -> u32 { return u32(clamp(round(idx[s]), 0.0, f32(p.e - 1u))); }
@compute @workgroup_size(${WG})
fn main(@builtin(local_invocation_index) li: u32) {
  for (var e = li; e < p.e; e = e + ${WG}u) {
    var c = 0u;
    for (var s = 0u; s < p.count; s = s + 1u) { if (expert(s) == e) { c = c + 1u; } }
    off[e + 1u] = c;
  }
  storageBarrier();
  workgroupBarrier();
  if (li == 0u) {
    off[0] = 0u;
    for (var e = 0u; e < p.e; e = e + 1u) { off[e + 1u] = off[e + 1u] + off[e]; }
  }
  storageBarrier();
  workgroupBarrier();
  for (var e = li; e < p.e; e = e + ${WG}u) {
    var at = off[e];
    for (var s = 0u; s < p.count; s = s + 1u) { if (expert(s) == e) { order[at] = s; at = at + 1u; } }
    let blocks = (off[e + 1u] - off[e] + p.rb - 1u) / p.rb;
    let a = e * ${ARGS}u;
    args[a] = blocks; args[a + 1u] = select(0u, p.tilesUp, blocks > 0u); args[a + 2u] = 1u;
    args[a + 3u] = blocks; args[a + 4u] = select(0u, p.tilesDown, blocks > 0u); args[a + 5u] = 1u;
  }
}`;

/**
 * Shared frame of the up and down kernels: workgroup (bx, by) takes pairs off[e] + bx·rb … (at most
 * rb, fewer in the last block) and output columns o = by·WG + lane, o + tiles·WG, … < nOut (this
 * weight part's rows; colOff = its first row).
 */
const FRAME_PARAMS = 'struct P { e: u32, k: u32, nIn: u32, nOut: u32, ld: u32, colOff: u32, tiles: u32, s0: u32 }';

function upSource(w: string, u: string, bg: boolean, bu: boolean, act: Activation, store: GpuDtype, RB: number, v4: boolean): string {
  const vt = v4 ? 'vec4f' : 'f32';
  return /* wgsl */ `
${FRAME_PARAMS}
@group(0) @binding(0) var<uniform> p: P;
@group(0) @binding(1) var<storage, read> x: array<${vt}>;
@group(0) @binding(2) var<storage, read> order: array<u32>;
@group(0) @binding(3) var<storage, read> off: array<u32>;
${weightRead(4, w, 'wv', store, v4, 'f32')}
${weightRead(5, u, 'uv', store, v4, 'f32')}
@group(0) @binding(6) var<storage, read_write> h: array<f32>;
${bg ? '@group(0) @binding(7) var<storage, read> bg: array<f32>;' : ''}
${bu ? `@group(0) @binding(${bg ? 8 : 7}) var<storage, read> bu: array<f32>;` : ''}
${ACT_LIB}
@compute @workgroup_size(${WG})
fn main(@builtin(workgroup_id) wid: vec3u, @builtin(local_invocation_index) li: u32) {
  let first = off[p.e] + wid.x * ${RB}u;
  let m = min(${RB}u, off[p.e + 1u] - first);
  var rows: array<u32, ${RB}>;
  for (var j = 0u; j < ${RB}u; j = j + 1u) { rows[j] = order[first + min(j, m - 1u)] / p.k; }
  for (var o = wid.y * ${WG}u + li; o < p.nOut; o = o + p.tiles * ${WG}u) {
    var acc: array<f32, ${RB}>;
    var accu: array<f32, ${RB}>;
    let kn = p.nIn${v4 ? ' / 4u' : ''};
    for (var c = 0u; c < kn; c = c + 1u) {
      let wk = wv(o, c);
      let uk = uv(o, c);
      for (var j = 0u; j < ${RB}u; j = j + 1u) {
        let xv = x[rows[j] * kn + c];
        acc[j] = acc[j] + ${term('f32', v4, 'xv', 'wk')};
        accu[j] = accu[j] + ${term('f32', v4, 'xv', 'uk')};
      }
    }
    let col = p.colOff + o;
    for (var j = 0u; j < m; j = j + 1u) {
      h[(first + j) * p.ld + col] = act_${act}(acc[j]${bg ? ' + bg[col]' : ''}) * (accu[j]${bu ? ' + bu[col]' : ''});
    }
  }
}`;
}

function downSource(bias: boolean, store: GpuDtype, RB: number, v4: boolean): string {
  return /* wgsl */ `
${FRAME_PARAMS}
@group(0) @binding(0) var<uniform> p: P;
@group(0) @binding(1) var<storage, read> h: array<${v4 ? 'vec4f' : 'f32'}>;
@group(0) @binding(2) var<storage, read> order: array<u32>;
@group(0) @binding(3) var<storage, read> off: array<u32>;
${weightRead(4, 'w', 'wv', store, v4, 'f32')}
@group(0) @binding(5) var<storage, read> wt: array<f32>;
@group(0) @binding(6) var<storage, read_write> y: array<f32>;
${bias ? '@group(0) @binding(7) var<storage, read> b: array<f32>;' : ''}
@compute @workgroup_size(${WG})
fn main(@builtin(workgroup_id) wid: vec3u, @builtin(local_invocation_index) li: u32) {
  let first = off[p.e] + wid.x * ${RB}u;
  let m = min(${RB}u, off[p.e + 1u] - first);
  var at: array<u32, ${RB}>;
  for (var j = 0u; j < ${RB}u; j = j + 1u) { at[j] = first + min(j, m - 1u); }
  for (var o = wid.y * ${WG}u + li; o < p.nOut; o = o + p.tiles * ${WG}u) {
    var acc: array<f32, ${RB}>;
    let kn = p.nIn${v4 ? ' / 4u' : ''};
    for (var c = 0u; c < kn; c = c + 1u) {
      let wk = wv(o, c);
      for (var j = 0u; j < ${RB}u; j = j + 1u) { acc[j] = acc[j] + ${term('f32', v4, 'h[at[j] * kn + c]', 'wk')}; }
    }
    let col = p.colOff + o;
    for (var j = 0u; j < m; j = j + 1u) {
      let s = order[first + j];
      y[s * p.ld + col] = wt[s] * (acc[j]${bias ? ' + b[col]' : ''});
    }
  }
}`;
}

const COMBINE = /* wgsl */ `
struct P { count: u32, d: u32, k: u32, e: u32 }
@group(0) @binding(0) var<uniform> p: P;
@group(0) @binding(1) var<storage, read> idx: array<f32>;
@group(0) @binding(2) var<storage, read> ys: array<f32>;
@group(0) @binding(3) var<storage, read_write> out: array<f32>;
${WGSL_FLAT_GROUP}
fn expert(s: u32) -> u32 { return u32(clamp(round(idx[s]), 0.0, f32(p.e - 1u))); }
@compute @workgroup_size(${WG})
fn main(@builtin(workgroup_id) wid: vec3u, @builtin(num_workgroups) nwg: vec3u, @builtin(local_invocation_index) li: u32) {
  let i = flat_group(wid, nwg) * ${WG}u + li;
  if (i >= p.count) { return; }
  let r = i / p.d;
  let c = i - r * p.d;
  // the k slots in ascending (expert, slot) order
  var sum = 0.0;
  var last = -1;
  for (var t = 0u; t < p.k; t = t + 1u) {
    var best = -1;
    for (var j = 0u; j < p.k; j = j + 1u) {
      let key = i32(expert(r * p.k + j) * p.k + j);
      if (key > last && (best < 0 || key < best)) { best = key; }
    }
    last = best;
    let j = u32(best) % p.k;
    sum = sum + ys[(r * p.k + j) * p.d + c];
  }
  out[i] = sum;
}`;

/** A weight's parts with the row each starts at (rowParts), checked to be a matrix [rows, cols]. */
function parts(host: KernelHost, t: Tensor, rows: number, cols: number, what: string): { part: GpuTensor; row0: number }[] {
  if (t.shape.length !== 2 || t.shape[0] !== rows || t.shape[1] !== cols) throw new Error(`moeExperts: ${what} is [${t.shape}], expected [${rows}, ${cols}]`);
  return host.rowParts(t);
}

/**
 * Backend.moeExperts on the GPU: x [n, d], indices and weights [n, k] (moeRoute's) → y [n, d].
 * @throws Error when the shapes disagree (indices / weights not [n, k]; an expert's gate or up not
 *   [d_expert, d], its down not [d, d_expert]; gate and up not stored alike) or a dispatch exceeds the
 *   device's workgroup limits.
 */
export function moeExpertsGpu(host: KernelHost, x: Tensor, indices: Tensor, weights: Tensor, experts: readonly ExpertMlp[], act: Activation): GpuTensor {
  const gx = host.gpu(x), gi = host.gpu(indices), gw = host.gpu(weights);
  const d = x.shape[x.shape.length - 1], n = x.size / d, k = indices.shape[indices.shape.length - 1], E = experts.length;
  if (indices.size !== n * k || weights.size !== n * k) throw new Error(`moeExperts: indices [${indices.shape}] and weights [${weights.shape}] must both be [${n}, k]`);
  if (E === 0) throw new Error('moeExperts: no experts');
  const dE = experts[0].gate.w.shape[0];
  const layout = experts.map((ex, e) => {
    const g = parts(host, ex.gate.w, dE, d, `expert ${e}'s gate`), u = parts(host, ex.up.w, dE, d, `expert ${e}'s up`);
    if (g.length !== u.length || g.some((pg, i) => pg.part.dtype !== u[i].part.dtype || pg.part.shape[0] !== u[i].part.shape[0])) throw new Error(`moeExperts: expert ${e}'s gate and up are not stored alike`);
    return { g, u, down: parts(host, ex.down.w, d, dE, `expert ${e}'s down`) };
  });
  const y = host.alloc([n, d]);
  if (n === 0) return y;
  const count = n * k;
  const tiles = (rows: number) => Math.min(Math.ceil(rows / WG), host.maxWorkgroupsPerDim);
  const tilesUp = tiles(Math.max(...layout.flatMap((l) => l.g.map((p) => p.part.shape[0]))));
  const tilesDown = tiles(Math.max(...layout.flatMap((l) => l.down.map((p) => p.part.shape[0]))));
  const rb = n === 1 ? 1 : RB;
  if (Math.ceil(count / rb) > host.maxWorkgroupsPerDim) throw new Error(`moeExperts: ${count} (row, expert) pairs exceed ${host.maxWorkgroupsPerDim * rb} per dispatch`);
  const order = host.alloc([count]), off = host.alloc([E + 1]), args = host.alloc([E * ARGS]);
  host.dispatch(host.pipeline('moe_plan', () => PLAN), [gi, order, off, args], new Params().u32(count).u32(E).u32(k).u32(tilesUp).u32(tilesDown).u32(rb), [1, 1, 1]);
  const h = host.alloc([count, dE]), ys = host.alloc([count, d]);
  const frame = (e: number, nIn: number, nOut: number, ld: number, colOff: number, t: number, part: GpuTensor) =>
    new Params().u32(e).u32(k).u32(nIn).u32(nOut).u32(ld).u32(colOff).u32(t).u32(part.dtype === 'q8_0' || part.dtype === 'q4_0' ? scaleOffset(part.dtype, part.shape[0], part.shape[1]) : 0);
  experts.forEach((ex, e) => {
    const { g, u, down } = layout[e];
    g.forEach(({ part, row0 }, i) => {
      const bg = ex.gate.b ? host.gpu(ex.gate.b) : null, bu = ex.up.b ? host.gpu(ex.up.b) : null;
      const key = `moe_up:${part.dtype}:${act}:${rb}:${d % 4 === 0 ? 'v4' : ''}:${bg ? 'b' : ''}${bu ? 'c' : ''}`;
      const pipe = host.pipeline(key, () => upSource('wg', 'wu', !!bg, !!bu, act, part.dtype, rb, d % 4 === 0));
      const bound = [gx, order, off, part, u[i].part, h, ...(bg ? [bg] : []), ...(bu ? [bu] : [])];
      host.dispatchIndirect(pipe, bound, frame(e, d, part.shape[0], dE, row0, tilesUp, part), args, e * ARGS * 4);
    });
    down.forEach(({ part, row0 }) => {
      const bd = ex.down.b ? host.gpu(ex.down.b) : null;
      const pipe = host.pipeline(`moe_down:${part.dtype}:${rb}:${dE % 4 === 0 ? 'v4' : ''}:${bd ? 'b' : ''}`, () => downSource(!!bd, part.dtype, rb, dE % 4 === 0));
      host.dispatchIndirect(pipe, [h, order, off, part, gw, ys, ...(bd ? [bd] : [])], frame(e, dE, part.shape[0], d, row0, tilesDown, part), args, (e * ARGS + 3) * 4);
    });
  });
  host.dispatch(host.pipeline('moe_combine', () => COMBINE), [gi, ys, y], new Params().u32(y.size).u32(d).u32(k).u32(E), grid(Math.ceil(y.size / WG), host.maxWorkgroupsPerDim));
  for (const t of [order, off, args, h, ys]) host.release(t);
  return y;
}
