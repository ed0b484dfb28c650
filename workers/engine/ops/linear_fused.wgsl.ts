import type { Activation, LinearFusion, Tensor } from '../backend/backend';
import { Params, type GpuTensor, type KernelHost } from '../backend/webgpu_host';
import { ACT_LIB, gatedActGpu } from './activation.wgsl';
import { addGpu } from './add.wgsl';
import { GEMV_MAX_ROWS } from './linear.wgsl';
import { wgslWeight, wgslWeightVec4 } from './wgsl_math';

/**
 * Fused linear kernels for the few-row (decode) shapes, where a transformer block is bound by the
 * number of dispatches rather than by arithmetic: one dispatch computes
 *
 *   y = epilogue( prologue(x) · Wᵀ + b )
 *
 * with, each optional,
 * - prologue `norm`: RMSNorm of each row of x (Zhang & Sennrich 2019; HF LlamaRMSNorm), folded into
 *   the dot product: Σ_k (x_k·s·(g_k + offset))·W_ok = s·Σ_k x_k·(g_k + offset)·W_ok with
 *   s = 1/√(mean_k x_k² + eps), the sum of squares accumulated in the same pass over x;
 * - `gateUp`: a second weight U read in the same pass, y = act(x̂·Wᵀ + b)·(x̂·Uᵀ + c) (SwiGLU /
 *   GeGLU: Shazeer 2020, arXiv 2002.05202), W being the gate projection;
 * - epilogue `residual`: y += r (the residual stream: the block's output or resid_mid).
 *
 * Same numbers as the unfused ops up to float32 rounding order (the norm scale is applied after the
 * sum instead of before each product). Two variants as linear.wgsl.ts: 'cpu' tuning, one invocation
 * per output with a block of rows (no barriers, for SwiftShader/lavapipe); 'gpu' tuning, a GEMV with
 * 32 lanes per output and a tree sum in workgroup memory (n ≤ GEMV_MAX_ROWS).
 */

/** 'cpu' variant: outputs per workgroup. */
const DOT_WG = 16;
/** 'gpu' variant: outputs per workgroup of 256 (32 lanes each). */
const GEMV_ROWS = 8;

interface Variant {
  bias: boolean;
  f16: boolean;
  norm: boolean;
  gated: Activation | null;
  upBias: boolean;
  upF16: boolean;
  residual: boolean;
  /** 'cpu' kernel only: x, w, u and g read as vec4 (in % 4 = 0). */
  vec4: boolean;
}

/** Bindings in dispatch order: x, w, [b], [g], [u], [c], [r], y. */
function bindings(v: Variant): { decl: string; names: string[] } {
  const names: string[] = ['x', 'w'];
  if (v.bias) names.push('b');
  if (v.norm) names.push('g');
  if (v.gated) names.push('u');
  if (v.gated && v.upBias) names.push('c');
  if (v.residual) names.push('r');
  names.push('y');
  const at = (name: string) => names.indexOf(name) + 1;
  const weight = v.vec4 ? wgslWeightVec4 : wgslWeight;
  const vt = v.vec4 ? 'vec4f' : 'f32';
  const decl = [
    'struct P { n: u32, nIn: u32, nOut: u32, ldy: u32, colOff: u32, eps: f32, offset: f32 }',
    '@group(0) @binding(0) var<uniform> p: P;',
    `@group(0) @binding(${at('x')}) var<storage, read> x: array<${vt}>;`,
    weight(at('w'), 'w', 'wv', v.f16),
    v.bias ? `@group(0) @binding(${at('b')}) var<storage, read> b: array<f32>;` : '',
    v.norm ? `@group(0) @binding(${at('g')}) var<storage, read> g: array<${vt}>;` : '',
    v.gated ? weight(at('u'), 'u', 'uv', v.upF16) : '',
    v.gated && v.upBias ? `@group(0) @binding(${at('c')}) var<storage, read> c: array<f32>;` : '',
    v.residual ? `@group(0) @binding(${at('r')}) var<storage, read> r: array<f32>;` : '',
    `@group(0) @binding(${at('y')}) var<storage, read_write> y: array<f32>;`,
    v.gated ? ACT_LIB : '',
  ].join('\n');
  return { decl, names };
}

/** WGSL that turns the sums `acc`, `accu`, `ss` of output column `col` (of y's ldy) of row `row` into y. */
function epilogue(v: Variant, acc: string, accu: string, ss: string): string {
  const lines = [
    v.norm ? `let s = 1.0 / sqrt(${ss} / f32(p.nIn) + p.eps);` : 'let s = 1.0;',
    `var val = ${acc} * s${v.bias ? ' + b[col]' : ''};`,
  ];
  if (v.gated) lines.push(`val = act_${v.gated}(val) * (${accu} * s${v.upBias ? ' + c[col]' : ''});`);
  if (v.residual) lines.push('val = val + r[row * p.ldy + col];');
  lines.push('y[row * p.ldy + col] = val;');
  return lines.join('\n    ');
}

/**
 * 'cpu' tuning: one invocation per output column and block of rb rows, four values per step when
 * v.vec4 (the row width kn is then in/4 and dot() sums the four products).
 */
function dotSource(v: Variant, rb: number): string {
  const mul = v.vec4 ? (a: string, b: string) => `dot(${a}, ${b})` : (a: string, b: string) => `${a} * ${b}`;
  return /* wgsl */ `
${bindings(v).decl}
@compute @workgroup_size(${DOT_WG})
fn main(@builtin(global_invocation_id) gid: vec3u) {
  let o = gid.x;
  if (o >= p.nOut) { return; }
  let r0 = gid.y * ${rb}u;
  let last = p.n - 1u;
  let kn = p.nIn${v.vec4 ? ' / 4u' : ''};
  var acc: array<f32, ${rb}>;
  var accu: array<f32, ${rb}>;
  var ss: array<f32, ${rb}>;
  for (var k = 0u; k < kn; k = k + 1u) {
    let wk = wv(o * kn + k);
    ${v.gated ? 'let uk = uv(o * kn + k);' : ''}
    ${v.norm ? 'let gk = g[k] + p.offset;' : ''}
    for (var j = 0u; j < ${rb}u; j = j + 1u) {
      let xv = x[min(r0 + j, last) * kn + k];
      ${v.norm ? `ss[j] = ss[j] + ${mul('xv', 'xv')};
      let xg = xv * gk;` : 'let xg = xv;'}
      acc[j] = acc[j] + ${mul('xg', 'wk')};
      ${v.gated ? `accu[j] = accu[j] + ${mul('xg', 'uk')};` : ''}
    }
  }
  let col = p.colOff + o;
  for (var j = 0u; j < ${rb}u; j = j + 1u) {
    let row = r0 + j;
    if (row >= p.n) { break; }
    ${epilogue(v, 'acc[j]', 'accu[j]', 'ss[j]')}
  }
}`;
}

/** 'gpu' tuning: a workgroup of 256 computes 8 outputs of one row, 32 lanes per output, tree sums. */
function gemvSource(v: Variant): string {
  return /* wgsl */ `
${bindings(v).decl}
var<workgroup> red: array<vec3f, 256>;
@compute @workgroup_size(256)
fn main(@builtin(workgroup_id) wid: vec3u, @builtin(local_invocation_index) li: u32) {
  let o = wid.x * ${GEMV_ROWS}u + li / 32u;
  let lane = li % 32u;
  let row = wid.y;
  var sums = vec3f(0.0);
  if (o < p.nOut) {
    let xo = row * p.nIn;
    let wo = o * p.nIn;
    for (var k = lane; k < p.nIn; k = k + 32u) {
      let xv = x[xo + k];
      ${v.norm ? 'let xg = xv * (g[k] + p.offset);\n      sums.z = sums.z + xv * xv;' : 'let xg = xv;'}
      sums.x = sums.x + xg * wv(wo + k);
      ${v.gated ? 'sums.y = sums.y + xg * uv(wo + k);' : ''}
    }
  }
  red[li] = sums;
  workgroupBarrier();
  for (var s = 16u; s > 0u; s = s >> 1u) {
    if (lane < s) { red[li] = red[li] + red[li + s]; }
    workgroupBarrier();
  }
  if (lane == 0u && o < p.nOut) {
    let col = p.colOff + o;
    let t = red[li];
    ${epilogue(v, 't.x', 't.y', 't.z')}
  }
}`;
}

/** Rows of x per invocation of the 'cpu' kernel: 1 for decode, else blocks of 4. */
function rowBlock(n: number): number {
  return n <= 1 ? 1 : 4;
}

/**
 * Largest row count the fused kernels take: the GEMV's (decode and short appends). Larger prefills
 * are arithmetic-bound and keep the tiled/vectorised unfused kernels.
 */
export function fusedMaxRows(_host: KernelHost): number {
  return GEMV_MAX_ROWS;
}

/**
 * y = epilogue(prologue(x)·wᵀ + bias) in one dispatch per weight part (see the file comment).
 * @param x [n, in] float32, n ≤ fusedMaxRows(host).
 * @param w [out, in] (float32 or f16 storage, may be row-chunked unless `f.gateUp` is given).
 * @param f fusion options: `norm` {w [in], eps, offset}, `gateUp` {w [out, in], bias [out], act},
 *   `residual` [n, out].
 * @returns [n, out].
 * @throws Error on mismatched shapes, a row count above fusedMaxRows, or a grid over the device's
 *   workgroup limits. (With `gateUp` and a weight split across buffers, gate and up run as two
 *   passes and one gatedAct.)
 */
export function linearFusedGpu(host: KernelHost, x: Tensor, w: Tensor, bias: Tensor | undefined, f: LinearFusion): GpuTensor {
  const gx = host.gpu(x);
  if (w.shape.length !== 2) throw new Error(`linearFused: weight must be [out, in], got [${w.shape}]`);
  const [nOut, nIn] = w.shape;
  if (x.shape[x.shape.length - 1] !== nIn) throw new Error(`linearFused: x has ${x.shape[x.shape.length - 1]} columns, weight expects ${nIn}`);
  const n = x.size / nIn;
  if (n > fusedMaxRows(host)) throw new Error(`linearFused: ${n} rows exceed the fused kernels' ${fusedMaxRows(host)}`);
  if (bias && bias.size !== nOut) throw new Error(`linearFused: bias has ${bias.size} values, weight has ${nOut} outputs`);
  if (f.norm && f.norm.w.size !== nIn) throw new Error(`linearFused: norm weight has ${f.norm.w.size} values, x has ${nIn} columns`);
  if (f.residual && f.residual.size !== n * nOut) throw new Error(`linearFused: residual [${f.residual.shape}] is not [${n}, ${nOut}]`);
  const parts = host.rowParts(w);
  const up = f.gateUp ? host.rowParts(f.gateUp.w) : null;
  if (f.gateUp) {
    if (f.gateUp.w.shape[0] !== nOut || f.gateUp.w.shape[1] !== nIn) throw new Error(`linearFused: up weight [${f.gateUp.w.shape}] differs from the gate's [${w.shape}]`);
    if (f.gateUp.bias && f.gateUp.bias.size !== nOut) throw new Error(`linearFused: up bias has ${f.gateUp.bias.size} values, weight has ${nOut} outputs`);
    if (parts.length > 1 || up!.length > 1) {
      // a weight split across buffers (ChunkedTensor): gate and up each in their own (norm-fused) pass
      const g = linearFusedGpu(host, x, w, bias, { norm: f.norm });
      const u = linearFusedGpu(host, x, f.gateUp.w, f.gateUp.bias, { norm: f.norm });
      let y = gatedActGpu(host, g, u, f.gateUp.act);
      host.release(g); host.release(u);
      if (f.residual) { const sum = addGpu(host, y, f.residual); host.release(y); y = sum; }
      return y;
    }
  }
  const y = host.alloc([n, nOut]);
  if (y.size === 0) return y;
  const max = host.maxWorkgroupsPerDim;
  for (const { part, row0 } of parts) {
    const rows = part.shape[0];
    const v: Variant = {
      bias: !!bias, f16: part.dtype === 'f16', norm: !!f.norm, gated: f.gateUp?.act ?? null,
      upBias: !!f.gateUp?.bias, upF16: up?.[0].part.dtype === 'f16', residual: !!f.residual,
      vec4: host.tuning === 'cpu' && nIn % 4 === 0,
    };
    const byName: Record<string, GpuTensor> = { x: gx, w: part, y };
    if (bias) byName.b = host.gpu(bias);
    if (f.norm) byName.g = host.gpu(f.norm.w);
    if (up) byName.u = up[0].part;
    if (f.gateUp?.bias) byName.c = host.gpu(f.gateUp.bias);
    if (f.residual) byName.r = host.gpu(f.residual);
    const tensors = bindings(v).names.map((name) => byName[name]);
    const params = new Params().u32(n).u32(nIn).u32(rows).u32(nOut).u32(row0).f32(f.norm?.eps ?? 0).f32(f.norm?.offset ?? 0);
    const key = `linear_fused:${host.tuning}:${JSON.stringify(v)}`;
    if (host.tuning === 'cpu') {
      const rb = rowBlock(n);
      const gx2 = Math.ceil(rows / DOT_WG), gy = Math.ceil(n / rb);
      if (gx2 > max || gy > max) throw new Error(`linearFused: [${n}, ${nIn}]·[${nOut}, ${nIn}]ᵀ needs more than ${max} workgroups per dimension`);
      host.dispatch(host.pipeline(`${key}:${rb}`, () => dotSource(v, rb)), tensors, params, [gx2, gy, 1]);
    } else {
      const groups = Math.ceil(rows / GEMV_ROWS);
      if (groups > max) throw new Error(`linearFused: ${nOut} outputs need more than ${max} workgroups`);
      host.dispatch(host.pipeline(key, () => gemvSource(v)), tensors, params, [groups, n, 1]);
    }
  }
  return y;
}
