import type { QkvFusion, Tensor } from '../backend/backend';
import { GpuTensor, Params, type KernelHost } from '../backend/webgpu_host';
import { GEMV_MAX_ROWS } from './linear.wgsl';
import { computeType, gemvFrame, GEMV_ROWS, reduction, term, type ComputeType, type Reduction } from './linear_gemv.wgsl';
import { wgslWeight, wgslWeightVec4 } from './wgsl_math';

/**
 * The attention input of a decode step in one dispatch: q, k and v projections of x (optionally
 * RMS-normalised in the prologue, as linear_fused.wgsl.ts), their biases, rotary position embedding
 * of q and k (rotate_half layout, Su et al. 2021, arXiv 2104.09864; HF `apply_rotary_pos_emb`), and
 * the write of k and v straight into the KV cache rows pos0.. (no copy that would close the compute
 * pass). Returns q [n, n_heads·d_head].
 *
 * Rotary pairs dims (j, j + half) of a head, so outputs are computed in pairs: pair (head, jj) of the
 * concatenated [q heads, k heads, v heads] covers dims (jj, jj + half) when jj < half and the head
 * is rotated (q, k), else dims (2jj, 2jj + 1) (partial rotary's pass-through dims, and v). Each pair
 * is two dot products over the same row of x, rotated in the epilogue with the (cos, sin) table of
 * absolute positions (ropePositions in rope.wgsl.ts). The sums run in the same order as the unfused
 * GEMV / dot kernels, so the values equal the split path's (linear, rope, writeRows).
 *
 * Two variants as linear.wgsl.ts: 'cpu' tuning, one invocation per pair and block of rows (vec4
 * loads when d_model % 4 = 0, no barriers); 'gpu' tuning, linear_gemv.wgsl.ts's GEMV frame (8 pairs
 * per workgroup of 256, tree or subgroup reduction). Products use the same compute-type hook as the
 * unfused linear, so f16 arithmetic and subgroup sums round as the split path does.
 */

const DOT_WG = 16;

interface Variant {
  f16: [boolean, boolean, boolean];
  bias: boolean;
  norm: boolean;
  rope: boolean;
  vec4: boolean;
  /** linear_gemv.wgsl.ts's compute-type and reduction hooks, as the unfused linear uses them. */
  compute: ComputeType;
  reduce: Reduction;
}

/** Binding names in dispatch order. */
function names(v: Variant): string[] {
  return ['x', 'wq', 'wk', 'wv', ...(v.bias ? ['bqkv'] : []), ...(v.norm ? ['g'] : []), ...(v.rope ? ['cs'] : []), 'qo', 'kc', 'vc'];
}

function decl(v: Variant): string {
  const ns = names(v);
  const at = (n: string): number => ns.indexOf(n) + 1;
  const vt = v.vec4 ? 'vec4f' : 'f32';
  const weight = v.vec4 ? wgslWeightVec4 : wgslWeight;
  const ro = (n: string, t = 'f32'): string => `@group(0) @binding(${at(n)}) var<storage, read> ${n}: array<${t}>;`;
  const rw = (n: string): string => `@group(0) @binding(${at(n)}) var<storage, read_write> ${n}: array<f32>;`;
  return [
    v.compute === 'f16' ? 'enable f16;' : '',
    'struct P { n: u32, nIn: u32, nHeads: u32, nKv: u32, dHead: u32, half: u32, pos0: u32, eps: f32, offset: f32 }',
    'fn pair_count() -> u32 { return (p.nHeads + 2u * p.nKv) * (p.dHead / 2u); }',
    '@group(0) @binding(0) var<uniform> p: P;',
    ro('x', vt),
    weight(at('wq'), 'wq', 'wqv', v.f16[0]),
    weight(at('wk'), 'wk', 'wkv', v.f16[1]),
    weight(at('wv'), 'wv', 'wvv', v.f16[2]),
    v.bias ? ro('bqkv') : '',
    v.norm ? ro('g', vt) : '',
    v.rope ? ro('cs') : '',
    rw('qo'), rw('kc'), rw('vc'),
    `fn wsel(seg: u32, i: u32) -> ${vt} { if (seg == 0u) { return wqv(i); } if (seg == 1u) { return wkv(i); } return wvv(i); }`,
    v.bias ? 'fn bsel(seg: u32, c: u32) -> f32 { let qW = p.nHeads * p.dHead; return bqkv[select(select(qW + p.nKv * p.dHead, qW, seg == 1u), 0u, seg == 0u) + c]; }' : '',
    /* wgsl */ `
struct Pair { seg: u32, ca: u32, cb: u32, jj: u32, rot: bool }
// pair index → segment (0 q, 1 k, 2 v), its two columns within the segment, and whether it rotates
fn pair_of(pi: u32) -> Pair {
  let hp = p.dHead / 2u;
  let hh = pi / hp;
  let jj = pi - hh * hp;
  var seg = 0u;
  var head = hh;
  if (hh >= p.nHeads) {
    seg = 1u;
    head = hh - p.nHeads;
    if (head >= p.nKv) { seg = 2u; head = head - p.nKv; }
  }
  let rot = seg < 2u && jj < p.half;
  var ea = 2u * jj;
  var eb = ea + 1u;
  if (rot) { ea = jj; eb = jj + p.half; }
  return Pair(seg, head * p.dHead + ea, head * p.dHead + eb, jj, rot);
}
// the epilogue of pair q at row r: norm scale s, bias, rotation, write to q or the cache rows
fn finish(q: Pair, r: u32, sa: f32, sb: f32, s: f32) {
  var a = sa * s;
  var b = sb * s;
  ${v.bias ? 'a = a + bsel(q.seg, q.ca);\n  b = b + bsel(q.seg, q.cb);' : ''}
  ${v.rope ? `if (q.rot) {
    let t = 2u * ((p.pos0 + r) * p.half + q.jj);
    let c = cs[t];
    let sn = cs[t + 1u];
    let a2 = a * c - b * sn;
    b = b * c + a * sn;
    a = a2;
  }` : ''}
  if (q.seg == 0u) {
    let w = p.nHeads * p.dHead;
    qo[r * w + q.ca] = a;
    qo[r * w + q.cb] = b;
  } else {
    let o = (p.pos0 + r) * p.nKv * p.dHead;
    if (q.seg == 1u) { kc[o + q.ca] = a; kc[o + q.cb] = b; } else { vc[o + q.ca] = a; vc[o + q.cb] = b; }
  }
}`,
  ].join('\n');
}

/** 'gpu' tuning: linear_gemv.wgsl.ts's GEMV frame over pairs (sums x, y and the norm's Σx² z). */
function gemvSource(v: Variant): string {
  const loop = (first: string, stride: string) => `let oa = q.ca * p.nIn;
      let ob = q.cb * p.nIn;
      for (var k = ${first}; k < p.nIn; k = k + ${stride}) {
        let xv = x[row * p.nIn + k];
        ${v.norm ? 'let xg = xv * (g[k] + p.offset);\n        sums.z = sums.z + xv * xv;' : 'let xg = xv;'}
        sums.x = sums.x + ${term(v.compute, false, 'xg', 'wsel(q.seg, oa + k)')};
        sums.y = sums.y + ${term(v.compute, false, 'xg', 'wsel(q.seg, ob + k)')};
      }`;
  const finish = `finish(q, row, t.x, t.y, ${v.norm ? '1.0 / sqrt(t.z / f32(p.nIn) + p.eps)' : '1.0'});`;
  return gemvFrame(decl(v), v.reduce, 'vec3f', 'pair_count()', loop, finish, 'let q = pair_of(min(o, pair_count() - 1u));');
}

/** 'cpu' tuning: one invocation per pair and block of rb rows (rows past n repeat the last, unwritten). */
function dotSource(v: Variant, rb: number): string {
  const mul = (a: string, b: string) => term(v.compute, v.vec4, a, b);
  const sq = v.vec4 ? 'dot(xv, xv)' : 'xv * xv';
  return /* wgsl */ `
${decl(v)}
@compute @workgroup_size(${DOT_WG})
fn main(@builtin(global_invocation_id) gid: vec3u) {
  let pairs = (p.nHeads + 2u * p.nKv) * (p.dHead / 2u);
  if (gid.x >= pairs) { return; }
  let q = pair_of(gid.x);
  let r0 = gid.y * ${rb}u;
  let last = p.n - 1u;
  let kn = p.nIn${v.vec4 ? ' / 4u' : ''};
  let oa = q.ca * kn;
  let ob = q.cb * kn;
  var acca: array<f32, ${rb}>;
  var accb: array<f32, ${rb}>;
  var ss: array<f32, ${rb}>;
  for (var k = 0u; k < kn; k = k + 1u) {
    let wa = wsel(q.seg, oa + k);
    let wb = wsel(q.seg, ob + k);
    ${v.norm ? 'let gk = g[k] + p.offset;' : ''}
    for (var j = 0u; j < ${rb}u; j = j + 1u) {
      let xv = x[min(r0 + j, last) * kn + k];
      ${v.norm ? `ss[j] = ss[j] + ${sq};
      let xg = xv * gk;` : 'let xg = xv;'}
      acca[j] = acca[j] + ${mul('xg', 'wa')};
      accb[j] = accb[j] + ${mul('xg', 'wb')};
    }
  }
  for (var j = 0u; j < ${rb}u; j = j + 1u) {
    let row = r0 + j;
    if (row >= p.n) { break; }
    finish(q, row, acca[j], accb[j], ${v.norm ? '1.0 / sqrt(ss[j] / f32(p.nIn) + p.eps)' : '1.0'});
  }
}`;
}

/** A single-buffer float32 or f16 tensor of this host (a weight the kernel can read), else null. */
function plain(host: KernelHost, t: Tensor): GpuTensor | null {
  const parts = host.rowParts(t);
  if (parts.length !== 1) return null;
  const g = parts[0].part;
  return g instanceof GpuTensor && (g.dtype === 'f32' || g.dtype === 'f16') ? g : null;
}

/** Storage buffers the kernel binds for these options (checked against maxStorageBuffersPerShaderStage). */
export function qkvBindings(f: Pick<QkvFusion, 'q' | 'norm' | 'rope'>): number {
  return names({ f16: [false, false, false], bias: !!f.q.b, norm: !!f.norm, rope: !!f.rope, vec4: false, compute: 'f32', reduce: 'tree' }).length;
}

/**
 * q = rope(x̂·Wqᵀ + bq) returned; rope(x̂·Wkᵀ + bk) and x̂·Wvᵀ + bv written to rows pos0..pos0+n−1 of
 * the K and V caches, in one dispatch (see the file comment). x̂ = RMSNorm(x) when `f.norm` is given.
 * @param table the (cos, sin) table of absolute positions 0.. (ropePositions), covering pos0 + n rows; unused without f.rope.
 * @param bias [b_q, b_k, b_v] concatenated (one binding instead of three), when the projections have biases.
 * @param maxBuffers the device's maxStorageBuffersPerShaderStage.
 * @returns q [n, nHeads·headDim], or null (nothing recorded) when the kernel does not take this case:
 *   more than GEMV_MAX_ROWS rows, an odd headDim, biases on some projections only, a weight split
 *   across buffers or stored in another format, f16 arithmetic on some projections only, or more
 *   bindings than the device allows.
 * @throws Error on mismatched shapes or cache rows out of range.
 */
export function qkvRopeGpu(host: KernelHost, f: QkvFusion, table: Tensor | null, bias: Tensor | null, maxBuffers: number): GpuTensor | null {
  const { x, nHeads, nKvHeads, headDim, pos0 } = f;
  const nIn = x.shape[x.shape.length - 1];
  const n = x.size / nIn;
  const qW = nHeads * headDim, kvW = nKvHeads * headDim;
  if (n < 1 || n > GEMV_MAX_ROWS || headDim % 2 !== 0) return null;
  const withBias = [f.q.b, f.k.b, f.v.b].filter((b) => b).length;
  if (withBias !== 0 && withBias !== 3) return null;
  if (withBias === 3 && bias?.size !== qW + 2 * kvW) throw new Error(`qkvRope: the concatenated bias has ${bias?.size ?? 0} values, not ${qW} + 2·${kvW}`);
  if (qkvBindings(f) > maxBuffers) return null;
  const ws = [f.q.w, f.k.w, f.v.w].map((w) => plain(host, w));
  if (ws.some((w) => !w)) return null;
  const want: [number, number][] = [[qW, nIn], [kvW, nIn], [kvW, nIn]];
  ws.forEach((w, i) => {
    if (w!.shape[0] !== want[i][0] || w!.shape[1] !== want[i][1]) throw new Error(`qkvRope: ${'qkv'[i]} weight [${w!.shape}] is not [${want[i]}]`);
  });
  if (f.kCache.shape[1] !== kvW || f.vCache.shape[1] !== kvW) throw new Error(`qkvRope: KV cache rows are not ${nKvHeads}·${headDim} wide`);
  if (pos0 < 0 || pos0 + n > f.kCache.shape[0]) throw new Error(`qkvRope: rows ${pos0}..${pos0 + n} exceed the cache (${f.kCache.shape[0]} rows)`);
  const half = f.rope ? f.rope.rotaryDims / 2 : 0;
  if (f.rope && (!Number.isInteger(half) || f.rope.rotaryDims > headDim)) throw new Error(`qkvRope: rotaryDims ${f.rope.rotaryDims} must be even and ≤ headDim ${headDim}`);
  if (f.rope && (!table || table.size < (pos0 + n) * half * 2)) throw new Error(`qkvRope: the rotary table does not cover positions ..${pos0 + n}`);
  const computes = new Set(ws.map((w) => computeType(host, w!.dtype)));
  if (computes.size > 1) return null; // f16 arithmetic on some projections only: the split path rounds each its own way
  const v: Variant = {
    f16: ws.map((w) => w!.dtype === 'f16') as [boolean, boolean, boolean], bias: withBias === 3, norm: !!f.norm, rope: !!f.rope,
    vec4: host.tuning === 'cpu' && nIn % 4 === 0, compute: [...computes][0], reduce: host.tuning === 'gpu' ? reduction(host) : 'tree',
  };
  const qo = host.alloc([n, qW]);
  const byName: Record<string, GpuTensor> = { x: host.gpu(x), wq: ws[0]!, wk: ws[1]!, wv: ws[2]!, qo, kc: host.gpu(f.kCache), vc: host.gpu(f.vCache) };
  if (v.bias) byName.bqkv = host.gpu(bias!);
  if (f.norm) byName.g = host.gpu(f.norm.w);
  if (f.rope) byName.cs = host.gpu(table!);
  const params = new Params().u32(n).u32(nIn).u32(nHeads).u32(nKvHeads).u32(headDim).u32(half).u32(pos0).f32(f.norm?.eps ?? 0).f32(f.norm?.offset ?? 0);
  const pairs = ((nHeads + 2 * nKvHeads) * headDim) / 2;
  const key = `qkv_rope:${host.tuning}:${JSON.stringify(v)}`;
  const tensors = names(v).map((k) => byName[k]);
  if (host.tuning === 'cpu') {
    const rb = n <= 1 ? 1 : 4;
    host.dispatch(host.pipeline(`${key}:${rb}`, () => dotSource(v, rb)), tensors, params, [Math.ceil(pairs / DOT_WG), Math.ceil(n / rb), 1]);
  } else {
    host.dispatch(host.pipeline(key, () => gemvSource(v)), tensors, params, [Math.ceil(pairs / GEMV_ROWS), n, 1]);
  }
  return qo;
}
