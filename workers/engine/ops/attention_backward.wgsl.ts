import type { AttentionBackwardParams, Tensor } from '../backend/backend';
import { Params, type GpuTensor, type KernelHost, type Reduction } from '../backend/webgpu_host';
import { reduction } from './linear_gemv.wgsl';
import { NORM_WG as WG, wgslReduceHeader, wgslReduceSum } from './norm.wgsl';

const PARAMS = /* wgsl */ `struct P { T: u32, nHeads: u32, nKvHeads: u32, headDim: u32, scale: f32, softcap: f32, window: u32 }
@group(0) @binding(0) var<uniform> p: P;`;

/** The first query whose window holds key j … and the last: i in [j, j + window − 1] ∩ [0, T). */
const WINDOW = /* wgsl */ `
fn first_key(i: u32) -> u32 { if (p.window > 0u && i + 1u > p.window) { return i + 1u - p.window; } return 0u; }
fn last_query(j: u32) -> u32 { if (p.window > 0u) { return min(p.T - 1u, j + p.window - 1u); } return p.T - 1u; }`;

/**
 * Pass 1, one workgroup per (head h, query i): dP_ij = dz_i·v_j over the keys j of i's window (kept
 * in dS's row), Σ_j P_ij·dP_ij (a workgroup sum), then dS_ij = P_ij·(dP_ij − Σ) × (1 − (S_ij/cap)²)
 * with soft-capping, and dq_i = scale·Σ_j dS_ij·k_j (each invocation a head dim). Entries of dS
 * outside the window are never written nor read.
 */
const rowSource = (r: Reduction, softcap: boolean): string => /* wgsl */ `
${wgslReduceHeader(r)}
${PARAMS}
@group(0) @binding(1) var<storage, read> q: array<f32>;
@group(0) @binding(2) var<storage, read> k: array<f32>;
@group(0) @binding(3) var<storage, read> v: array<f32>;
@group(0) @binding(4) var<storage, read> pat: array<f32>;
@group(0) @binding(5) var<storage, read> dz: array<f32>;
${softcap ? '@group(0) @binding(6) var<storage, read> sc: array<f32>;' : ''}
@group(0) @binding(${softcap ? 7 : 6}) var<storage, read_write> dS: array<f32>;
@group(0) @binding(${softcap ? 8 : 7}) var<storage, read_write> dq: array<f32>;
${wgslReduceSum(r)}
${WINDOW}
@compute @workgroup_size(${WG})
fn main(@builtin(workgroup_id) wid: vec3u, @builtin(local_invocation_index) li: u32) {
  let h = wid.x;
  let i = wid.y;
  let d = p.headDim;
  let kvW = p.nKvHeads * d;
  let koff = (h / (p.nHeads / p.nKvHeads)) * d;
  let zo = (i * p.nHeads + h) * d;
  let row = (h * p.T + i) * p.T;
  let lo = first_key(i);
  var part = 0.0;
  for (var j = lo + li; j <= i; j = j + ${WG}u) {
    var a = 0.0;
    for (var e = 0u; e < d; e = e + 1u) { a = a + dz[zo + e] * v[j * kvW + koff + e]; }
    dS[row + j] = a;
    part = part + pat[row + j] * a;
  }
  let sum = reduce_sum(li, part);
  for (var j = lo + li; j <= i; j = j + ${WG}u) {
    var ds = pat[row + j] * (dS[row + j] - sum);
    ${softcap ? 'let c = sc[row + j] / p.softcap; ds = ds * (1.0 - c * c);' : ''}
    dS[row + j] = ds;
  }
  storageBarrier();
  workgroupBarrier();
  for (var e = li; e < d; e = e + ${WG}u) {
    var a = 0.0;
    for (var j = lo; j <= i; j = j + 1u) { a = a + dS[row + j] * k[j * kvW + koff + e]; }
    dq[zo + e] = p.scale * a;
  }
}`;

/**
 * Pass 2, one workgroup per (KV head kh, key j): over the query heads h of kh's group and the
 * queries i whose window holds j, dk_j = scale·Σ dS_ij·q_i and dv_j = Σ P_ij·dz_i (each invocation a head dim).
 */
const keySource = /* wgsl */ `
${PARAMS}
@group(0) @binding(1) var<storage, read> q: array<f32>;
@group(0) @binding(2) var<storage, read> pat: array<f32>;
@group(0) @binding(3) var<storage, read> dz: array<f32>;
@group(0) @binding(4) var<storage, read> dS: array<f32>;
@group(0) @binding(5) var<storage, read_write> dk: array<f32>;
@group(0) @binding(6) var<storage, read_write> dv: array<f32>;
${WINDOW}
@compute @workgroup_size(${WG})
fn main(@builtin(workgroup_id) wid: vec3u, @builtin(local_invocation_index) li: u32) {
  let kh = wid.x;
  let j = wid.y;
  let d = p.headDim;
  let group = p.nHeads / p.nKvHeads;
  let hi = last_query(j);
  for (var e = li; e < d; e = e + ${WG}u) {
    var ak = 0.0;
    var av = 0.0;
    for (var h = kh * group; h < (kh + 1u) * group; h = h + 1u) {
      for (var i = j; i <= hi; i = i + 1u) {
        let at = (h * p.T + i) * p.T + j;
        let zo = (i * p.nHeads + h) * d + e;
        ak = ak + dS[at] * q[zo];
        av = av + pat[at] * dz[zo];
      }
    }
    let o = (j * p.nKvHeads + kh) * d + e;
    dk[o] = p.scale * ak;
    dv[o] = av;
  }
}`;

/**
 * The input gradients of causal grouped-query attention (Backend.attentionBackward, whose docstring
 * states the rule; CPU reference ops/attention_backward.cpu.ts) in two passes over a scratch dS
 * [H, T, T]: per (head, query) the softmax rule and dq, then per (KV head, key) dk and dv. The
 * causal mask and the sliding window bound every loop (no masked entry is read).
 * @throws Error when the shapes do not fit the params.
 */
export function attentionBackwardGpu(host: KernelHost, q: Tensor, k: Tensor, v: Tensor, pattern: Tensor, scores: Tensor | undefined, dz: Tensor, p: AttentionBackwardParams): { dq: GpuTensor; dk: GpuTensor; dv: GpuTensor } {
  const T = p.n, qW = p.nHeads * p.headDim, kvW = p.nKvHeads * p.headDim;
  const softcap = p.softcap > 0;
  if (q.size !== T * qW || dz.size !== T * qW || k.size !== T * kvW || v.size !== T * kvW || pattern.size !== p.nHeads * T * T || (softcap && scores?.size !== pattern.size) || p.nHeads % p.nKvHeads !== 0) {
    throw new Error(`attentionBackward: q [${q.shape}], k [${k.shape}], v [${v.shape}], pattern [${pattern.shape}], dz [${dz.shape}] do not fit ${T} positions of ${p.nHeads}/${p.nKvHeads} heads × ${p.headDim}`);
  }
  const gq = host.gpu(q), gk = host.gpu(k), gv = host.gpu(v), gp = host.gpu(pattern), gz = host.gpu(dz);
  const dq = host.alloc([T, qW]), dk = host.alloc([T, kvW]), dv = host.alloc([T, kvW]);
  if (T === 0) return { dq, dk, dv };
  const dS = host.alloc([p.nHeads, T, T]);
  const params = () => new Params().u32(T).u32(p.nHeads).u32(p.nKvHeads).u32(p.headDim).f32(p.scale).f32(p.softcap).u32(p.window);
  const r = reduction(host);
  host.dispatch(host.pipeline(`attention_backward_rows:${r}${softcap ? ':softcap' : ''}`, () => rowSource(r, softcap)),
    [gq, gk, gv, gp, gz, ...(softcap ? [host.gpu(scores!)] : []), dS, dq], params(), [p.nHeads, T, 1]);
  host.dispatch(host.pipeline('attention_backward_keys', () => keySource), [gq, gp, gz, dS, dk, dv], params(), [p.nKvHeads, T, 1]);
  host.release(dS);
  return { dq, dk, dv };
}
