import type { Tensor } from '../backend/backend';
import { Params, type GpuTensor, type KernelHost } from '../backend/webgpu_host';
import { computeType, dispatchGemv, GEMV_ROWS, plainVariant, reduction, term, type ComputeType } from './linear_gemv.wgsl';
import { wgslWeight, wgslWeightVec4 } from './wgsl_math';

/** Output tile of the tiled matmul: TILE×TILE per workgroup of 16×16, 4×4 outputs per invocation. */
const TILE = 64;
const TK = 16;
/** Tuning 'gpu': up to this many rows use the GEMV path (one pass over w per row); more use the tiled matmul. */
export const GEMV_MAX_ROWS = 4;

/**
 * The bindings every linear variant shares: params, x (elements of type `xType`), the weight
 * declaration `wDecl` at binding 2, an optional bias, and y.
 */
function bindings(bias: boolean, xType: string, wDecl: string): string {
  return /* wgsl */ `
struct P { n: u32, nIn: u32, nOut: u32, ldy: u32, colOff: u32 }
@group(0) @binding(0) var<uniform> p: P;
@group(0) @binding(1) var<storage, read> x: array<${xType}>;
${wDecl}
${bias ? '@group(0) @binding(3) var<storage, read> b: array<f32>;' : ''}
@group(0) @binding(${bias ? 4 : 3}) var<storage, read_write> y: array<f32>;`;
}

/**
 * y [n, out] = x [n, in]·wᵀ (+ b), w [out, in]: this dispatch's weight holds outputs
 * colOff..colOff+nOut−1 of y's ldy columns (a part of a row-chunked weight, or all of it). Each
 * workgroup stages a 64×16 slab of x and of w in workgroup memory per step of 16 along `in`, and
 * each invocation accumulates a 4×4 block of outputs (rows ly + 16a, columns lx + 16b, so that
 * writes are coalesced).
 */
function tiledSource(bias: boolean, f16: boolean, compute: ComputeType): string {
  return /* wgsl */ `
${compute === 'f16' ? 'enable f16;' : ''}
${bindings(bias, 'f32', wgslWeight(2, 'w', 'wv', f16))}
var<workgroup> xs: array<f32, ${TILE * TK}>;
var<workgroup> ws: array<f32, ${TILE * TK}>;
@compute @workgroup_size(16, 16)
fn main(@builtin(workgroup_id) wid: vec3u, @builtin(local_invocation_id) lid: vec3u) {
  let row0 = wid.y * ${TILE}u;
  let col0 = wid.x * ${TILE}u;
  let tid = lid.y * 16u + lid.x;
  var acc: array<f32, 16>;
  for (var k0 = 0u; k0 < p.nIn; k0 = k0 + ${TK}u) {
    for (var l = 0u; l < ${(TILE * TK) / 256}u; l = l + 1u) {
      let e = tid + l * 256u;
      let r = e / ${TK}u;
      let gk = k0 + e % ${TK}u;
      var xv = 0.0;
      if (row0 + r < p.n && gk < p.nIn) { xv = x[(row0 + r) * p.nIn + gk]; }
      xs[e] = xv;
      var wval = 0.0;
      if (col0 + r < p.nOut && gk < p.nIn) { wval = wv((col0 + r) * p.nIn + gk); }
      ws[e] = wval;
    }
    workgroupBarrier();
    for (var k = 0u; k < ${TK}u; k = k + 1u) {
      var a: array<f32, 4>;
      var bv: array<f32, 4>;
      for (var i = 0u; i < 4u; i = i + 1u) {
        a[i] = xs[(lid.y + 16u * i) * ${TK}u + k];
        bv[i] = ws[(lid.x + 16u * i) * ${TK}u + k];
      }
      for (var i = 0u; i < 4u; i = i + 1u) {
        for (var j = 0u; j < 4u; j = j + 1u) {
          acc[i * 4u + j] = acc[i * 4u + j] + ${term(compute, false, 'a[i]', 'bv[j]')};
        }
      }
    }
    workgroupBarrier();
  }
  for (var i = 0u; i < 4u; i = i + 1u) {
    let r = row0 + lid.y + 16u * i;
    for (var j = 0u; j < 4u; j = j + 1u) {
      let c = col0 + lid.x + 16u * j;
      if (r < p.n && c < p.nOut) { y[r * p.ldy + p.colOff + c] = acc[i * 4u + j]${bias ? ' + b[p.colOff + c]' : ''}; }
    }
  }
}`;
}

/**
 * Tuning 'gpu', n > GEMV_MAX_ROWS and in % 4 = 0: a 64×64 output tile per workgroup of 16×16, each
 * invocation a 4×4 register tile (four vec4 accumulators: rows 4ty..4ty+3, columns 4tx..4tx+3).
 * x and w are read as vec4 along `in` (one vec4 of each per invocation per step of 16) and stored
 * k-major in workgroup memory, so the inner loop reads one vec4 of rows and one of columns per k.
 * Double-buffered: the next step's loads are issued before the current tile is multiplied and
 * stored into the other buffer afterwards, one barrier per step. (The register tiling and vec4
 * loads follow the usual SGEMM structure, e.g. Volkov & Demmel 2008; the WebGPU form after TVM/
 * Tint's tiled matmul samples.)
 */
function tiledVec4Source(bias: boolean, f16: boolean, compute: ComputeType): string {
  const mac = (acc: string, a: string) => (compute === 'f16' ? `${acc} = ${acc} + vec4f(f16(${a}) * vec4<f16>(b));` : `${acc} = ${acc} + ${a} * b;`);
  return /* wgsl */ `
${compute === 'f16' ? 'enable f16;' : ''}
${bindings(bias, 'vec4f', wgslWeightVec4(2, 'w', 'wv', f16))}
var<workgroup> xs: array<array<vec4f, 256>, 2>;
var<workgroup> ws: array<array<vec4f, 256>, 2>;
fn load_x(row: u32, k: u32) -> vec4f {
  if (row < p.n && k < p.nIn) { return x[(row * p.nIn + k) / 4u]; }
  return vec4f(0.0);
}
fn load_w(col: u32, k: u32) -> vec4f {
  if (col < p.nOut && k < p.nIn) { return wv((col * p.nIn + k) / 4u); }
  return vec4f(0.0);
}
@compute @workgroup_size(16, 16)
fn main(@builtin(workgroup_id) wid: vec3u, @builtin(local_invocation_id) lid: vec3u) {
  let row0 = wid.y * 64u;
  let col0 = wid.x * 64u;
  let tid = lid.y * 16u + lid.x;
  // this invocation's loads: row/column lr of the tile, k offset 4·lk of the step
  let lr = tid / 4u;
  let lk = (tid % 4u) * 4u;
  let slot = lr / 4u;
  let lane = lr % 4u;
  var acc0 = vec4f(0.0);
  var acc1 = vec4f(0.0);
  var acc2 = vec4f(0.0);
  var acc3 = vec4f(0.0);
  var xv = load_x(row0 + lr, lk);
  var wq = load_w(col0 + lr, lk);
  for (var c = 0u; c < 4u; c = c + 1u) {
    xs[0][(lk + c) * 16u + slot][lane] = xv[c];
    ws[0][(lk + c) * 16u + slot][lane] = wq[c];
  }
  workgroupBarrier();
  let steps = (p.nIn + 15u) / 16u;
  for (var t = 0u; t < steps; t = t + 1u) {
    let cur = t % 2u;
    let more = t + 1u < steps;
    if (more) {
      xv = load_x(row0 + lr, (t + 1u) * 16u + lk);
      wq = load_w(col0 + lr, (t + 1u) * 16u + lk);
    }
    for (var k = 0u; k < 16u; k = k + 1u) {
      let a = xs[cur][k * 16u + lid.y];
      let b = ws[cur][k * 16u + lid.x];
      ${mac('acc0', 'a.x')}
      ${mac('acc1', 'a.y')}
      ${mac('acc2', 'a.z')}
      ${mac('acc3', 'a.w')}
    }
    if (more) {
      let nxt = 1u - cur;
      for (var c = 0u; c < 4u; c = c + 1u) {
        xs[nxt][(lk + c) * 16u + slot][lane] = xv[c];
        ws[nxt][(lk + c) * 16u + slot][lane] = wq[c];
      }
    }
    workgroupBarrier();
  }
  var accs = array<vec4f, 4>(acc0, acc1, acc2, acc3);
  for (var i = 0u; i < 4u; i = i + 1u) {
    let r = row0 + lid.y * 4u + i;
    if (r >= p.n) { break; }
    for (var j = 0u; j < 4u; j = j + 1u) {
      let c = col0 + lid.x * 4u + j;
      if (c < p.nOut) { y[r * p.ldy + p.colOff + c] = accs[i][j]${bias ? ' + b[p.colOff + c]' : ''}; }
    }
  }
}`;
}

/**
 * Linear layer y = x·wᵀ + b (nn.Linear layout): x [n, in], w [out, in], b [out] → [n, out].
 * Tuning 'gpu': n ≤ GEMV_MAX_ROWS takes the GEMV path, larger n the tiled matmul (the vec4,
 * register-tiled, double-buffered one when in % 4 = 0 and KernelHost.vec4Matmul, else the scalar one). Tuning 'cpu':
 * the dot kernel for every n, rows in blocks of dotRowBlock(n) (measured on SwiftShader, stories260K
 * decode shapes [1,64]·[172,64]ᵀ: 0.3 ms vs 6.7 ms for the GEMV; [126,64]·[512,64]ᵀ: 11–20 ms vs
 * 114 ms for the tiled matmul). w may be float32 or f16 storage (WebGpuBackend.uploadF16), and may be
 * row-chunked (ChunkedTensor: a weight over the binding limit): each part computes its own range of
 * output columns of the one result. Accumulation is float32 either way; with KernelHost.compute
 * 'f16' the products of binary16 weights are taken in binary16 (linear_gemv.wgsl.ts's compute hook;
 * the tiled kernels round x and each product the same way).
 * @throws Error when x's row width is not `in`, b's size is not `out`, or the grid exceeds the
 *   device's workgroup limits.
 */
export function linearGpu(host: KernelHost, x: Tensor, w: Tensor, bias?: Tensor): GpuTensor {
  const gx = host.gpu(x);
  if (w.shape.length !== 2) throw new Error(`linear: weight must be [out, in], got [${w.shape}]`);
  const [nOut, nIn] = w.shape;
  if (x.shape[x.shape.length - 1] !== nIn) throw new Error(`linear: x has ${x.shape[x.shape.length - 1]} columns, weight expects ${nIn}`);
  if (bias && bias.size !== nOut) throw new Error(`linear: bias has ${bias.size} values, weight has ${nOut} outputs`);
  const parts = host.rowParts(w);
  const gb = bias ? host.gpu(bias) : undefined;
  const n = x.size / nIn;
  const y = host.alloc([n, nOut]);
  if (y.size === 0) return y;
  const max = host.maxWorkgroupsPerDim;
  const tooBig = (): Error => new Error(`linear: [${n}, ${nIn}]·[${nOut}, ${nIn}]ᵀ needs more than ${max} workgroups per dimension`);
  for (const { part, row0 } of parts) {
    const rows = part.shape[0];
    const f16 = part.dtype === 'f16';
    const shape = { n, nIn, rows, ldy: nOut, colOff: row0 };
    const byName: Record<string, GpuTensor> = gb ? { x: gx, w: part, b: gb, y } : { x: gx, w: part, y };
    if (host.tuning === 'cpu') {
      dispatchGemv(host, 'dot', plainVariant(part.dtype, !!gb, nIn % 4 === 0, computeType(host, part.dtype), 'tree'), byName, shape);
    } else if (n <= GEMV_MAX_ROWS && Math.ceil(rows / GEMV_ROWS) <= max) {
      dispatchGemv(host, 'gemv', plainVariant(part.dtype, !!gb, false, computeType(host, part.dtype), reduction(host)), byName, shape);
    } else {
      const tensors = gb ? [gx, part, gb, y] : [gx, part, y];
      const params = new Params().u32(n).u32(nIn).u32(rows).u32(nOut).u32(row0);
      const compute = computeType(host, part.dtype);
      const variant = `${gb ? '_bias' : ''}${f16 ? '_f16' : ''}${compute === 'f16' ? '_h' : ''}`;
      const gx2 = Math.ceil(rows / TILE), gy = Math.ceil(n / TILE);
      if (gx2 > max || gy > max) throw tooBig();
      if (host.vec4Matmul && nIn % 4 === 0) host.dispatch(host.pipeline(`matmul_v4${variant}`, () => tiledVec4Source(!!gb, f16, compute)), tensors, params, [gx2, gy, 1]);
      else host.dispatch(host.pipeline(`matmul${variant}`, () => tiledSource(!!gb, f16, compute)), tensors, params, [gx2, gy, 1]);
    }
  }
  return y;
}
