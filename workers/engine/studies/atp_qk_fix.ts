/**
 * AtP*'s correction for attention saturation (Kramár et al. 2024, arXiv 2403.00745, §3.1.1 "QK fix"):
 * attribution patching linearises the softmax, which fails where a patched query or key moves a
 * saturated attention pattern. For a query/key change AtP* recomputes the pattern exactly and keeps
 * only the gradient with respect to the pattern linear:
 *
 *   QK term = Σ_{h,i,j} ∂Δ/∂A[h,i,j] · (A'[h,i,j] − A[h,i,j]),   ∂Δ/∂A[h,i,j] = ∂Δ/∂z[i,h] · v[j,kv(h)]
 *
 * Here it applies to the `resid_pre` cells of the patching grid, the only hook of the grid whose
 * patch moves its own block's queries and keys: patching x^l_t replaces ln1(x^l_t), hence q_t, k_t
 * and v_t of block l, by the source run's values exactly (they read position t alone). Block l's
 * attention is then recomputed for the patched query, key and value, and only what follows it is
 * linear:
 *
 *   AtP*(l, t) = δ_t · (∂Δ/∂x_t − J_ln1(x_t)ᵀ ∂Δ/∂ln1_t)         the residual (skip) path, linear
 *              + Σ_{h, i ≥ t} ∂Δ/∂z[i,h] · (z'[i,h] − z[i,h])     z' = A'·v' with A' = softmax of the scores
 *                                                                 with q_t, k_t replaced, v' with v_t replaced
 *
 * (the pattern term Σ ∂Δ/∂A·(A' − A) of AtP*, the value term Σ A·∂Δ/∂z·(v'_t − v_t) and their
 * product, which a linear value term would miss where the patch moves the pattern onto a changed
 * value). δ_t = x'_t − x_t (source minus run), primes the source run's values, unprimed the run's
 * (the run the backward differentiated). Rows i < t keep their output; row t is recomputed whole; a
 * row i > t changes in its key t only, renormalised. Soft-capping (cap·tanh(s/cap)) and the sliding
 * window are applied as in ops/attention.cpu.ts. Cost per layer O(H·T²·d_head).
 * The other hooks (attn_out, mlp_out, attn.hook_z) feed no query or key of their own block, so the
 * correction leaves their cells as AtP has them.
 */
import type { ModelSpec } from '../arch/spec';
import type { HostNorm } from '../analysis/frozen_norm';
import { rmsNormBackwardCpu, layerNormBackwardCpu } from '../ops/norm_backward.cpu';

/** What the correction reads of one block l of the two runs (row-major, float32 captures / float64 gradients). */
export interface QkFixLayer {
  /** hook_resid_pre of the run and of the source run [T, d_model]. */
  x: ArrayLike<number>;
  xSrc: ArrayLike<number>;
  /** attn.hook_q [T, H·d_head], hook_k / hook_v [T, KV·d_head] of the run and of the source (after rotary / QK-norm, as cached). */
  q: ArrayLike<number>; k: ArrayLike<number>; v: ArrayLike<number>;
  qSrc: ArrayLike<number>; kSrc: ArrayLike<number>; vSrc: ArrayLike<number>;
  /** attn.hook_pattern of the run [H, T, T]. */
  pattern: ArrayLike<number>;
  /** ∂Δ/∂ at the run: hook_resid_pre [T, d_model], ln1.hook_normalized [T, d_model], attn.hook_z [T, H·d_head]. */
  gX: Float64Array; gN1: Float64Array; gZ: Float64Array;
  /** Block l's first norm (ln1). */
  ln1: HostNorm;
  /** The sliding window of block l (0 = none). */
  window: number;
}

/**
 * The AtP* estimate of patching resid_pre at every position t of one block (see the module comment),
 * in nats (the estimate of Δ_patched − Δ_run) [T].
 * @throws Error when the arrays do not have the shapes of `T` tokens of `spec`.
 */
export function qkFixedResidPre(spec: ModelSpec, T: number, a: QkFixLayer): Float64Array {
  const D = spec.dModel, H = spec.nHeads, KV = spec.nKvHeads, d = spec.dHead, group = H / KV;
  const qW = H * d, kvW = KV * d, scale = spec.attnScale, cap = spec.attnSoftcap;
  const sizes: [string, number, number][] = [['x', a.x.length, T * D], ['q', a.q.length, T * qW], ['k', a.k.length, T * kvW], ['pattern', a.pattern.length, H * T * T], ['gZ', a.gZ.length, T * qW]];
  for (const [name, got, want] of sizes) if (got !== want) throw new Error(`AtP* correction: ${name} has ${got} values, ${want} expected for ${T} tokens`);
  const capped = (s: number) => (cap > 0 ? Math.tanh(s / cap) * cap : s);
  const score = (qa: ArrayLike<number>, qo: number, ka: ArrayLike<number>, ko: number) => {
    let s = 0;
    for (let e = 0; e < d; e++) s += qa[qo + e] * ka[ko + e];
    return capped(s * scale);
  };
  // the skip path: ∂Δ/∂x minus the part through ln1 (ln1's backward of ∂Δ/∂ln1)
  const viaLn1 = spec.norm === 'rms' ? rmsNormBackwardCpu(a.x, a.ln1.w, a.ln1.eps, a.ln1.offset, a.gN1) : layerNormBackwardCpu(a.x, a.ln1.w, a.ln1.eps, a.gN1);
  const out = new Float64Array(T);
  for (let t = 0; t < T; t++) {
    let e = 0;
    for (let c = 0; c < D; c++) e += (a.xSrc[t * D + c] - a.x[t * D + c]) * (a.gX[t * D + c] - viaLn1[t * D + c]);
    out[t] = e;
  }
  const lo = (i: number) => (a.window > 0 ? Math.max(0, i - a.window + 1) : 0);
  // dP[j] = ∂Δ/∂z[i,h]·v_j (the gradient of Δ along A[h,i,j]); gSrc(i, j) the same with the source value v'_j
  const dP = new Float64Array(T), s = new Float64Array(T);
  const gSrc = (zo: number, j: number, kh: number) => { let g = 0; for (let c = 0; c < d; c++) g += a.gZ[zo + c] * a.vSrc[j * kvW + kh * d + c]; return g; };
  for (let h = 0; h < H; h++) {
    const kh = Math.floor(h / group);
    for (let i = 0; i < T; i++) {
      const zo = i * qW + h * d, row = (h * T + i) * T;
      let S = 0;
      for (let j = lo(i); j <= i; j++) {
        let g = 0;
        for (let c = 0; c < d; c++) g += a.gZ[zo + c] * a.v[j * kvW + kh * d + c];
        dP[j] = g;
        S += g * a.pattern[row + j];
      }
      // row i = t: the query, key and value at t replaced, the row recomputed whole
      let max = -Infinity;
      for (let j = lo(i); j <= i; j++) {
        s[j] = score(a.qSrc, zo, j === i ? a.kSrc : a.k, j * kvW + kh * d);
        if (s[j] > max) max = s[j];
      }
      let sum = 0;
      for (let j = lo(i); j <= i; j++) { s[j] = Math.exp(s[j] - max); sum += s[j]; }
      let rowTerm = 0;
      for (let j = lo(i); j < i; j++) rowTerm += dP[j] * s[j] / sum;
      out[i] += rowTerm + gSrc(zo, i, kh) * s[i] / sum - S;
      // rows i > t: key and value t replaced only (t in i's window), the row renormalised
      for (let t = lo(i); t < i; t++) {
        const p = a.pattern[row + t];
        if (p === 0) continue;
        const delta = score(a.q, zo, a.kSrc, t * kvW + kh * d) - score(a.q, zo, a.k, t * kvW + kh * d);
        // P'_it and 1/Z' without overflow: Z' = 1 − p + p·e^δ
        const [pNew, invZ] = delta > 0
          ? ((u: number) => [p / ((1 - p) * u + p), u / ((1 - p) * u + p)])(Math.exp(-delta))
          : ((u: number) => [(p * u) / (1 - p + p * u), 1 / (1 - p + p * u)])(Math.exp(delta));
        out[t] += (S - dP[t] * p) * invZ + gSrc(zo, t, kh) * pNew - S;
      }
    }
  }
  return out;
}
