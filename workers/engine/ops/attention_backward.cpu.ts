/**
 * Backward rule of causal grouped-query attention (attention.cpu.ts attentionCpu), float64 on the
 * host, from what the forward recorded: q [T, H·d], k, v [T, KV·d] (after rotary, as cached), the
 * probabilities P [H, T, T] and, with soft-capping, the capped scores S [H, T, T]. For query i of
 * head h (KV head kh = h / (H/KV)) over its keys j in the causal (sliding) window lo..i:
 *   dP_ij = dz_i·v_j,  dS_ij = P_ij·(dP_ij − Σ_k P_ik·dP_ik)  (softmax),
 *   × (1 − (S_ij/cap)²) with soft-capping (d cap·tanh(s/cap)/ds),
 *   dq_i += scale·dS_ij·k_j,  dk_j += scale·dS_ij·q_i,  dv_j += P_ij·dz_i
 * (keys and values of a KV head summed over the query heads that read them).
 */
export interface AttentionBackwardParams { T: number; nHeads: number; nKvHeads: number; headDim: number; scale: number; softcap: number; window: number }

export function attentionBackward(
  q: ArrayLike<number>, k: ArrayLike<number>, v: ArrayLike<number>, pattern: ArrayLike<number>, scores: ArrayLike<number> | undefined,
  dz: Float64Array, p: AttentionBackwardParams,
): { dq: Float64Array; dk: Float64Array; dv: Float64Array } {
  const { T, nHeads: H, nKvHeads: KV, headDim: d, scale, softcap, window } = p;
  const group = H / KV, qW = H * d, kvW = KV * d;
  const dq = new Float64Array(T * qW), dk = new Float64Array(T * kvW), dv = new Float64Array(T * kvW);
  const dP = new Float64Array(T);
  for (let h = 0; h < H; h++) {
    const kh = Math.floor(h / group);
    for (let i = 0; i < T; i++) {
      const lo = window > 0 ? Math.max(0, i - window + 1) : 0;
      const zo = i * qW + h * d, row = (h * T + i) * T;
      let sum = 0;
      for (let j = lo; j <= i; j++) {
        const vo = j * kvW + kh * d;
        let a = 0;
        for (let e = 0; e < d; e++) a += dz[zo + e] * v[vo + e];
        dP[j] = a;
        sum += pattern[row + j] * a;
      }
      for (let j = lo; j <= i; j++) {
        const pij = pattern[row + j];
        let ds = pij * (dP[j] - sum);
        if (softcap > 0) { const c = scores![row + j] / softcap; ds *= 1 - c * c; }
        const ko = j * kvW + kh * d;
        for (let e = 0; e < d; e++) {
          dq[zo + e] += scale * ds * k[ko + e];
          dk[ko + e] += scale * ds * q[zo + e];
          dv[ko + e] += pij * dz[zo + e];
        }
      }
    }
  }
  return { dq, dk, dv };
}
