export interface SinkStats {
  /** α^{l,h}_0 [n_layers·n_heads]: mean attention to position 0 over queries. */
  alpha0: Float32Array;
  /** α^{l,h}_k [n_layers·n_heads·T]: mean over queries i ≥ k of A[i,k]. */
  alpha: Float32Array;
  /** Fraction of heads per layer with α_0 > ε [n_layers]. */
  sinkRate: Float32Array;
  /** Per head, the key position receiving the most total attention mass Σ_i A[i,k] [n_layers·n_heads]. */
  sinkPos: Int32Array;
  /** Per head, ‖v‖ at its sink position (the value vector of its KV head) [n_layers·n_heads]. */
  sinkValueNorm: Float32Array;
  eps: number;
}

/**
 * Attention-sink statistics (Gu et al. 2024, "When Attention Sink Emerges", arXiv 2410.10781):
 * α^{l,h}_k = mean over queries i ≥ k of A^{l,h}_{i,k}; sink rate of layer l = fraction of heads
 * with α^{l,h}_0 > ε; per head, the sink position — the key receiving the most total attention
 * mass Σ_{i≥k} A_{i,k} (sinks can sit on delimiters; the total, unlike the mean α_k, is not
 * dominated by the last keys, which only one or two queries see) — and the value-vector norm there.
 * @param patterns per layer, attention probabilities [n_heads, T, T].
 * @param values per layer, hook_v [T, n_kv_heads·d_head].
 */
export function sinkStats(patterns: Float32Array[], values: Float32Array[], nHeads: number, nKvHeads: number, dHead: number, T: number, eps = 0.3): SinkStats {
  const L = patterns.length;
  const alpha = new Float32Array(L * nHeads * T);
  const alpha0 = new Float32Array(L * nHeads);
  const sinkRate = new Float32Array(L);
  const sinkPos = new Int32Array(L * nHeads);
  const sinkValueNorm = new Float32Array(L * nHeads);
  const group = nHeads / nKvHeads;
  for (let l = 0; l < L; l++) {
    let sinks = 0;
    for (let h = 0; h < nHeads; h++) {
      const base = (l * nHeads + h) * T;
      let best = 0, bestMass = -1;
      for (let k = 0; k < T; k++) {
        let s = 0;
        for (let i = k; i < T; i++) s += patterns[l][(h * T + i) * T + k];
        alpha[base + k] = s / (T - k);
        if (s > bestMass) { bestMass = s; best = k; }
      }
      alpha0[l * nHeads + h] = alpha[base];
      if (alpha[base] > eps) sinks++;
      sinkPos[l * nHeads + h] = best;
      const kv = Math.floor(h / group);
      let nn = 0;
      for (let e = 0; e < dHead; e++) nn += values[l][best * nKvHeads * dHead + kv * dHead + e] ** 2;
      sinkValueNorm[l * nHeads + h] = Math.sqrt(nn);
    }
    sinkRate[l] = sinks / nHeads;
  }
  return { alpha, alpha0, sinkRate, sinkPos, sinkValueNorm, eps };
}

/**
 * Sink divergence between two runs of the same shape (e.g. steered vs unsteered): per head the
 * change in α_0 and the Jensen–Shannon divergence (nats) of the per-head key distributions α/Σα.
 * @returns dAlpha0, js: [n_layers·n_heads].
 */
export function sinkDivergence(a: SinkStats, b: SinkStats, T: number): { dAlpha0: Float32Array; js: Float32Array } {
  const heads = a.alpha0.length;
  const dAlpha0 = new Float32Array(heads);
  const js = new Float32Array(heads);
  for (let x = 0; x < heads; x++) {
    dAlpha0[x] = b.alpha0[x] - a.alpha0[x];
    const p = a.alpha.subarray(x * T, (x + 1) * T), q = b.alpha.subarray(x * T, (x + 1) * T);
    const sp = p.reduce((s, v) => s + v, 0), sq = q.reduce((s, v) => s + v, 0);
    let d = 0;
    for (let k = 0; k < T; k++) {
      const pk = p[k] / sp, qk = q[k] / sq, m = (pk + qk) / 2;
      if (pk > 0) d += 0.5 * pk * Math.log(pk / m);
      if (qk > 0) d += 0.5 * qk * Math.log(qk / m);
    }
    js[x] = d;
  }
  return { dAlpha0, js };
}

