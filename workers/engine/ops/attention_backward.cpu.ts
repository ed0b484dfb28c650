import type { AttentionBackwardParams } from '../backend/backend';
import { transpose } from './linear_backward.cpu';

/**
 * A matrix product a [n, k] · bᵀ (b [m, k]) → [n, m], float32 (the CPU backend passes its WASM GEMM).
 */
export type MatMulT = (a: Float32Array, b: Float32Array, n: number, k: number, m: number) => Float32Array;

/**
 * Backward rule of causal grouped-query attention on the CPU (Backend.attentionBackward; the
 * definition is in backend.ts, the forward attention.cpu.ts attentionCpu), as four matrix products
 * per query head through `mm` and the softmax rule in between:
 *   dP = dz_h·v_khᵀ [T, T];  dS_ij = P_ij·(dP_ij − Σ_k P_ik·dP_ik) over j in i's window (0 elsewhere),
 *   × (1 − (S_ij/cap)²) with soft-capping;  dq_h = scale·dS·k_kh;  dk_kh += scale·dSᵀ·q_h;  dv_kh += Pᵀ·dz_h.
 * The window is taken from j's range, never from P, so a masked entry's −∞ score is not read.
 * @param q [T, H·d]; k, v [T, KV·d]; pattern, scores [H, T, T]; dz [T, H·d].
 * @returns dq [T, H·d], dk and dv [T, KV·d].
 */
export function attentionBackwardCpu(
  q: Float32Array, k: Float32Array, v: Float32Array, pattern: Float32Array, scores: Float32Array | undefined, dz: Float32Array,
  p: AttentionBackwardParams, mm: MatMulT,
): { dq: Float32Array; dk: Float32Array; dv: Float32Array } {
  const { n: T, nHeads: H, nKvHeads: KV, headDim: d, scale, softcap, window } = p;
  const group = H / KV, qW = H * d, kvW = KV * d;
  const dq = new Float32Array(T * qW), dk = new Float32Array(T * kvW), dv = new Float32Array(T * kvW);
  const cols = (m: Float32Array, W: number, h: number): Float32Array => {
    const o = new Float32Array(T * d);
    for (let t = 0; t < T; t++) o.set(m.subarray(t * W + h * d, t * W + h * d + d), t * d);
    return o;
  };
  const addCols = (dst: Float32Array, W: number, h: number, src: Float32Array, s: number) => {
    for (let t = 0; t < T; t++) for (let e = 0; e < d; e++) dst[t * W + h * d + e] += s * src[t * d + e];
  };
  const dS = new Float32Array(T * T);
  for (let kh = 0; kh < KV; kh++) {
    const kT = transpose(cols(k, kvW, kh), T, d), vh = cols(v, kvW, kh);
    for (let h = kh * group; h < (kh + 1) * group; h++) {
      const dzh = cols(dz, qW, h), P = pattern.subarray(h * T * T, (h + 1) * T * T);
      const dP = mm(dzh, vh, T, d, T);
      dS.fill(0);
      for (let i = 0; i < T; i++) {
        const lo = window > 0 ? Math.max(0, i - window + 1) : 0, row = i * T;
        let sum = 0;
        for (let j = lo; j <= i; j++) sum += P[row + j] * dP[row + j];
        for (let j = lo; j <= i; j++) {
          let ds = P[row + j] * (dP[row + j] - sum);
          if (softcap > 0) { const c = scores![h * T * T + row + j] / softcap; ds *= 1 - c * c; }
          dS[row + j] = ds;
        }
      }
      addCols(dq, qW, h, mm(dS, kT, T, T, d), scale);
      addCols(dk, kvW, kh, mm(transpose(dS, T, T), transpose(cols(q, qW, h), T, d), T, T, d), scale);
      addCols(dv, kvW, kh, mm(transpose(P, T, T), transpose(dzh, T, d), T, T, d), 1);
    }
  }
  return { dq, dk, dv };
}
