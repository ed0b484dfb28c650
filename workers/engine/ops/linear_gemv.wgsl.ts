import type { Activation } from '../backend/backend';
import { Params, type ComputeType, type GpuDtype, type GpuTensor, type KernelHost, type Reduction } from '../backend/webgpu_host';
import { ACT_LIB } from './activation.wgsl';

/**
 * The one skeleton of every few-row linear kernel (linear.wgsl.ts, linear_fused.wgsl.ts,
 * linear_quant.wgsl.ts):
 *
 *   y[row, colOff + o] = epilogue( Σ_k prologue(x[row, k]) · W[o, k] (+ b) )
 *
 * in two shapes: the dot kernel (one invocation per output and block of rows, no barriers: the
 * 'cpu' tuning) and the GEMV (lanes per output striding along `in`, then a reduction: the 'gpu'
 * tuning). They differ per caller only through three hooks:
 * - the weight read (weightRead): float32, packed binary16 or a Q8_0/Q4_0 block, one value or a vec4;
 * - the compute type: 'f32', or 'f16' (needs 'shader-f16'): x and W in binary16, each product (each
 *   vec4 dot of four products) rounded to binary16, the running sum over `in` in float32 (a binary16
 *   sum over 576–1536 terms would lose ~√in·2⁻¹¹ of the result; the f32 sum keeps the error at the
 *   products' roundings). Everything outside the dot product (norm scale, bias, activation, residual,
 *   y) stays float32, so hooks see float32 values;
 * - the GEMV reduction: a tree in workgroup memory, or subgroupAdd (needs 'subgroups').
 * The optional fusions (RMSNorm prologue, gate·up with an activation, residual epilogue) are the
 * ones linear_fused.wgsl.ts documents.
 */

export type { ComputeType, Reduction };

/** One kernel variant; a pipeline is compiled per distinct variant. */
export interface GemvVariant {
  /** Storage of the weight w. */
  w: GpuDtype;
  bias: boolean;
  /** RMSNorm prologue with weight g [in] (eps, offset in the params). */
  norm: boolean;
  /** Gated MLP: a second weight u read in the same pass, y = act(x̂·wᵀ + b)·(x̂·uᵀ + c). */
  gated: Activation | null;
  /** Storage of u (ignored unless gated). */
  u: GpuDtype;
  upBias: boolean;
  /** Epilogue y += r [n, ldy]. */
  residual: boolean;
  /** Dot kernel only: x, w, u and g read four values per step (in % 4 = 0). */
  vec4: boolean;
  compute: ComputeType;
  /** GEMV only. */
  reduce: Reduction;
}

/** Defaults of the fields a plain linear layer leaves off. */
export function plainVariant(w: GpuDtype, bias: boolean, vec4: boolean, compute: ComputeType, reduce: Reduction): GemvVariant {
  return { w, bias, norm: false, gated: null, u: 'f32', upBias: false, residual: false, vec4, compute, reduce };
}

/** The compute type for a weight stored as `store` on `host`: binary16 arithmetic only for binary16 weights on a host that enables it. */
export function computeType(host: KernelHost, store: GpuDtype): ComputeType {
  return host.compute === 'f16' && store === 'f16' ? 'f16' : 'f32';
}

/** The GEMV reduction `host` supports. */
export function reduction(host: KernelHost): Reduction {
  return host.subgroups ? 'subgroup' : 'tree';
}

/** GEMV: outputs per workgroup of 256 invocations (32 lanes each for the tree reduction). */
export const GEMV_ROWS = 8;
/** Dot kernel: invocations (outputs) per workgroup. */
export const DOT_WG = 16;

/**
 * The weight-read hook: declares storage binding `name` and `fn(o, k) -> T`, step k of row o of an
 * [out, in] weight (element k, or elements 4k..4k+3 when vec4) in the compute type T. float32 is
 * read as is; binary16 as `array<f16>` under 'f16' compute, else as packed pairs unpacked with core
 * unpack2x16float (backend/f16.ts layout); Q8_0/Q4_0 (backend/quant.ts layout: quant words, then
 * binary16 scales from word p.s0; `s0` names another params field) dequantise d·q / d·(q − 8) in float32.
 */
export function weightRead(binding: number, name: string, fn: string, store: GpuDtype, vec4: boolean, compute: ComputeType, s0 = 's0'): string {
  const h = compute === 'f16';
  const T = vec4 ? (h ? 'vec4<f16>' : 'vec4f') : (h ? 'f16' : 'f32');
  const at = `@group(0) @binding(${binding}) var<storage, read> ${name}`;
  const idx = vec4 ? 'o * (p.nIn / 4u) + k' : 'o * p.nIn + k';
  if (store === 'f32') return `${at}: array<${vec4 ? 'vec4f' : 'f32'}>;\nfn ${fn}(o: u32, k: u32) -> ${T} { return ${T}(${name}[${idx}]); }`;
  if (store === 'f16') {
    if (h) return `${at}: array<${T}>;\nfn ${fn}(o: u32, k: u32) -> ${T} { return ${name}[${idx}]; }`;
    return vec4
      ? `${at}: array<vec2<u32>>;\nfn ${fn}(o: u32, k: u32) -> vec4f { let q = ${name}[${idx}]; return vec4f(unpack2x16float(q.x), unpack2x16float(q.y)); }`
      : `${at}: array<u32>;\nfn ${fn}(o: u32, k: u32) -> f32 { let i = ${idx}; let pair = unpack2x16float(${name}[i >> 1u]); return select(pair.x, pair.y, (i & 1u) == 1u); }`;
  }
  const words = store === 'q8_0' ? 8 : 4;
  const scale = `fn ${fn}_scale(bi: u32) -> f32 { let pr = unpack2x16float(${name}[p.${s0} + (bi >> 1u)]); return select(pr.x, pr.y, (bi & 1u) == 1u); }`;
  const bpr = '((p.nIn + 31u) / 32u)';
  let body: string;
  if (vec4) {
    // elements 4k..4k+3 lie in block k/8, at quad j = k % 8 of it
    const quad = store === 'q8_0'
      ? `let v = i32(${name}[bi * 8u + j]);
  let q = vec4f(f32(extractBits(v, 0u, 8u)), f32(extractBits(v, 8u, 8u)), f32(extractBits(v, 16u, 8u)), f32(extractBits(v, 24u, 8u)));`
      : `let v = ${name}[bi * 4u + j % 4u];
  let s = select(0u, 4u, j >= 4u);
  let q = vec4f(f32(extractBits(v, s, 4u)), f32(extractBits(v, s + 8u, 4u)), f32(extractBits(v, s + 16u, 4u)), f32(extractBits(v, s + 24u, 4u))) - 8.0;`;
    body = `let bi = o * ${bpr} + k / 8u;
  let j = k % 8u;
  ${quad}
  return ${T}(${fn}_scale(bi) * q);`;
  } else {
    const one = store === 'q8_0'
      ? `let q = f32(extractBits(i32(${name}[bi * ${words}u + e / 4u]), 8u * (e % 4u), 8u));`
      : `let q = f32(extractBits(${name}[bi * 4u + (e % 16u) / 4u], 8u * (e % 4u) + select(0u, 4u, e >= 16u), 4u)) - 8.0;`;
    body = `let bi = o * ${bpr} + k / 32u;
  let e = k % 32u;
  ${one}
  return ${T}(${fn}_scale(bi) * q);`;
  }
  return `${at}: array<u32>;\n${scale}\nfn ${fn}(o: u32, k: u32) -> ${T} {\n  ${body}\n}`;
}

/** Binding names in dispatch order: x, w, [b], [g], [u], [c], [r], y. */
export function bindingNames(v: GemvVariant): string[] {
  const names: string[] = ['x', 'w'];
  if (v.bias) names.push('b');
  if (v.norm) names.push('g');
  if (v.gated) names.push('u');
  if (v.gated && v.upBias) names.push('c');
  if (v.residual) names.push('r');
  names.push('y');
  return names;
}

/**
 * The params every variant reads, in this order: n (rows of x), nIn, nOut (this dispatch's rows of
 * w), ldy (y's row width), colOff (y's column of w's row 0), eps, offset (norm), s0 (quantised w:
 * word where the scales start).
 */
const PARAMS = 'struct P { n: u32, nIn: u32, nOut: u32, ldy: u32, colOff: u32, eps: f32, offset: f32, s0: u32 }';

function declarations(v: GemvVariant): string {
  const names = bindingNames(v);
  const at = (name: string) => names.indexOf(name) + 1;
  const vt = v.vec4 ? 'vec4f' : 'f32';
  return [
    v.compute === 'f16' ? 'enable f16;' : '',
    PARAMS,
    '@group(0) @binding(0) var<uniform> p: P;',
    `@group(0) @binding(${at('x')}) var<storage, read> x: array<${vt}>;`,
    weightRead(at('w'), 'w', 'wv', v.w, v.vec4, v.compute),
    v.bias ? `@group(0) @binding(${at('b')}) var<storage, read> b: array<f32>;` : '',
    v.norm ? `@group(0) @binding(${at('g')}) var<storage, read> g: array<${vt}>;` : '',
    v.gated ? weightRead(at('u'), 'u', 'uv', v.u, v.vec4, v.compute) : '',
    v.gated && v.upBias ? `@group(0) @binding(${at('c')}) var<storage, read> c: array<f32>;` : '',
    v.residual ? `@group(0) @binding(${at('r')}) var<storage, read> r: array<f32>;` : '',
    `@group(0) @binding(${at('y')}) var<storage, read_write> y: array<f32>;`,
    v.gated ? ACT_LIB : '',
  ].filter((s) => s).join('\n');
}

/**
 * The compute-type hook: WGSL expression for one step's contribution x·w (vec4: the dot of four) as
 * f32. Under 'f16', x (f32) is rounded to binary16 and w must already be binary16 (or is converted:
 * exact for binary16-stored values), so every kernel that uses it rounds the same way.
 */
export function term(compute: ComputeType, vec4: boolean, xv: string, wk: string): string {
  if (compute === 'f16') return vec4 ? `f32(dot(vec4<f16>(${xv}), vec4<f16>(${wk})))` : `f32(f16(${xv}) * f16(${wk}))`;
  return vec4 ? `dot(${xv}, ${wk})` : `${xv} * ${wk}`;
}

/** WGSL that turns the sums `acc`, `accu`, `ss` of output column `col` (of y's ldy) of row `row` into y. */
function epilogue(v: GemvVariant, acc: string, accu: string, ss: string): string {
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
 * Dot kernel: one invocation per output column o and block of rb rows of x (rows past n repeat the
 * last row and are not written), walking w's row o once; no workgroup memory, no barriers.
 */
export function dotSource(v: GemvVariant, rb: number): string {
  const sq = v.vec4 ? 'dot(xv, xv)' : 'xv * xv';
  return /* wgsl */ `
${declarations(v)}
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
    let wk = wv(o, k);
    ${v.gated ? 'let uk = uv(o, k);' : ''}
    ${v.norm ? 'let gk = g[k] + p.offset;' : ''}
    for (var j = 0u; j < ${rb}u; j = j + 1u) {
      let xv = x[min(r0 + j, last) * kn + k];
      ${v.norm ? `ss[j] = ss[j] + ${sq};
      let xg = xv * gk;` : 'let xg = xv;'}
      acc[j] = acc[j] + ${term(v.compute, v.vec4, 'xg', 'wk')};
      ${v.gated ? `accu[j] = accu[j] + ${term(v.compute, v.vec4, 'xg', 'uk')};` : ''}
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

/**
 * The GEMV frame, shared with qkv_rope.wgsl.ts: a workgroup of 256 invocations computes GEMV_ROWS
 * outputs o of row wid.y of x (`row`), each a sum over `in` accumulated by several lanes in `sums`
 * (type S) and then reduced:
 * - 'tree': 32 lanes per output, adjacent lanes reading adjacent weights, then a tree sum over the
 *   lanes in workgroup memory (5 barriers).
 * - 'subgroup': each subgroup claims a slot (a workgroup atomic counter, so nothing is assumed about
 *   how invocations are grouped into subgroups or about the subgroup size) and computes outputs
 *   slot, slot + slots, … of the workgroup's 8, its lanes striding along `in`, summed by one
 *   subgroupAdd. An output's sum order depends only on the subgroup size, not on which subgroup
 *   took it, so results are deterministic.
 * @param count WGSL expression: the number of outputs (o ≥ count is skipped).
 * @param loop WGSL statements accumulating lane `first`, `first + stride`, … into `sums`, for output o.
 * @param finish WGSL statements writing output o from the reduced sums `t`.
 * @param prelude WGSL statements run per output before the loop (they may read o, even when o ≥ count).
 */
export function gemvFrame(decl: string, reduce: Reduction, S: string, count: string, loop: (first: string, stride: string) => string, finish: string, prelude = ''): string {
  if (reduce === 'subgroup') {
    return /* wgsl */ `
enable subgroups;
diagnostic(off, subgroup_uniformity);
${decl}
var<workgroup> slots: atomic<u32>;
@compute @workgroup_size(256)
fn main(@builtin(workgroup_id) wid: vec3u, @builtin(subgroup_invocation_id) sgi: u32, @builtin(subgroup_size) sgs: u32) {
  var mine = 0u;
  if (sgi == 0u) { mine = atomicAdd(&slots, 1u); }
  let slot = subgroupBroadcastFirst(mine);
  workgroupBarrier();
  let nslots = atomicLoad(&slots);
  let row = wid.y;
  for (var i = slot; i < ${GEMV_ROWS}u; i = i + nslots) {
    let o = wid.x * ${GEMV_ROWS}u + i;
    ${prelude}
    var sums = ${S}(0.0);
    if (o < ${count}) {
      ${loop('sgi', 'sgs')}
    }
    let t = subgroupAdd(sums);
    if (sgi == 0u && o < ${count}) {
      ${finish}
    }
  }
}`;
  }
  return /* wgsl */ `
${decl}
var<workgroup> red: array<${S}, 256>;
@compute @workgroup_size(256)
fn main(@builtin(workgroup_id) wid: vec3u, @builtin(local_invocation_index) li: u32) {
  let o = wid.x * ${GEMV_ROWS}u + li / 32u;
  let lane = li % 32u;
  let row = wid.y;
  ${prelude}
  var sums = ${S}(0.0);
  if (o < ${count}) {
    ${loop('lane', '32u')}
  }
  red[li] = sums;
  workgroupBarrier();
  for (var s = 16u; s > 0u; s = s >> 1u) {
    if (lane < s) { red[li] = red[li] + red[li + s]; }
    workgroupBarrier();
  }
  if (lane == 0u && o < ${count}) {
    let t = red[li];
    ${finish}
  }
}`;
}

/**
 * GEMV of variant v on gemvFrame: the sums are (w, u, Σx²) in a vec3f when the variant norms or
 * gates, else one f32.
 */
export function gemvSource(v: GemvVariant): string {
  const wide = v.norm || !!v.gated;
  const comp = (name: string) => (c: 'x' | 'y' | 'z') => (wide ? `${name}.${c}` : name);
  const sums = comp('sums'), t = comp('t');
  const loop = (first: string, stride: string) => `for (var k = ${first}; k < p.nIn; k = k + ${stride}) {
      let xv = x[row * p.nIn + k];
      ${v.norm ? `let xg = xv * (g[k] + p.offset);
      ${sums('z')} = ${sums('z')} + xv * xv;` : 'let xg = xv;'}
      ${sums('x')} = ${sums('x')} + ${term(v.compute, false, 'xg', 'wv(o, k)')};
      ${v.gated ? `${sums('y')} = ${sums('y')} + ${term(v.compute, false, 'xg', 'uv(o, k)')};` : ''}
    }`;
  const finish = `let col = p.colOff + o;
    ${epilogue(v, t('x'), t('y'), t('z'))}`;
  return gemvFrame(declarations(v), v.reduce, wide ? 'vec3f' : 'f32', 'p.nOut', loop, finish);
}

/** Rows of x per invocation of the dot kernel: 1 for decode, else blocks of 4 or 8 (each w load serves them all). */
export function dotRowBlock(n: number): number {
  return n <= 1 ? 1 : n <= 4 ? 4 : 8;
}

/**
 * Records one dot-kernel or GEMV dispatch of variant `v` over `rows` outputs of w for the n rows of
 * x; `byName` holds the tensors of bindingNames(v). Pipelines are cached by the variant (and rb).
 * @throws Error when the grid exceeds the device's workgroups per dimension.
 */
export function dispatchGemv(
  host: KernelHost, kind: 'dot' | 'gemv', v: GemvVariant, byName: Record<string, GpuTensor>,
  p: { n: number; nIn: number; rows: number; ldy: number; colOff: number; eps?: number; offset?: number; s0?: number },
): void {
  const tensors = bindingNames(v).map((name) => {
    const t = byName[name];
    if (!t) throw new Error(`linear kernel: binding ${name} missing`);
    return t;
  });
  const params = new Params().u32(p.n).u32(p.nIn).u32(p.rows).u32(p.ldy).u32(p.colOff).f32(p.eps ?? 0).f32(p.offset ?? 0).u32(p.s0 ?? 0);
  const max = host.maxWorkgroupsPerDim;
  const key = JSON.stringify(kind === 'dot' ? { ...v, reduce: 'tree' } : v);
  if (kind === 'dot') {
    const rb = dotRowBlock(p.n);
    const gx = Math.ceil(p.rows / DOT_WG), gy = Math.ceil(p.n / rb);
    if (gx > max || gy > max) throw new Error(`linear: [${p.n}, ${p.nIn}]·[${p.rows}, ${p.nIn}]ᵀ needs more than ${max} workgroups per dimension`);
    host.dispatch(host.pipeline(`linear_dot${rb}:${key}`, () => dotSource(v, rb)), tensors, params, [gx, gy, 1]);
  } else {
    const groups = Math.ceil(p.rows / GEMV_ROWS);
    if (groups > max || p.n > max) throw new Error(`linear: ${p.rows} outputs need more than ${max} workgroups`);
    host.dispatch(host.pipeline(`linear_gemv:${key}`, () => gemvSource(v)), tensors, params, [groups, p.n, 1]);
  }
}
