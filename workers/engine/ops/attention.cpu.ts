import type { AttentionParams } from '../backend/backend';

/**
 * Causal grouped-query attention (Vaswani et al. 2017; GQA: Ainslie et al. 2023, arXiv 2305.13245).
 * q [n, H·d]; k, v caches [ctx, KV·d] holding rows 0..past+n-1. Returns z [n, H·d] and, when asked,
 * the probabilities and masked scores [H, n, past+n]. Scores and the weighted sum of values are
 * accumulated in float64, the head dims four at a time in independent sums (a decode step at long
 * context spends its time in these two loops).
 * @param out where z goes (n·H·d values, every one written; default a new array).
 */
export function attentionCpu(q: Float32Array, k: Float32Array, v: Float32Array, p: AttentionParams, out?: Float32Array): { z: Float32Array; pattern?: Float32Array; scores?: Float32Array } {
  const { n, past, nHeads, nKvHeads, headDim: d, scale, softcap, window } = p;
  const T = past + n;
  const group = nHeads / nKvHeads;
  const kvW = nKvHeads * d;
  const d4 = d - (d % 4);
  const z = out ?? new Float32Array(n * nHeads * d);
  const pattern = p.wantPattern ? new Float32Array(nHeads * n * T) : undefined;
  const scores = p.wantScores ? new Float32Array(nHeads * n * T).fill(-Infinity) : undefined;
  const s = new Float64Array(T);
  const acc = new Float64Array(d);
  for (let h = 0; h < nHeads; h++) {
    const kh = Math.floor(h / group);
    for (let i = 0; i < n; i++) {
      const qi = past + i;
      const lo = window > 0 ? Math.max(0, qi - window + 1) : 0;
      const qo = (i * nHeads + h) * d;
      let max = -Infinity;
      for (let j = lo; j <= qi; j++) {
        const ko = j * kvW + kh * d;
        let a0 = 0, a1 = 0, a2 = 0, a3 = 0, e = 0;
        for (; e < d4; e += 4) {
          a0 += q[qo + e] * k[ko + e];
          a1 += q[qo + e + 1] * k[ko + e + 1];
          a2 += q[qo + e + 2] * k[ko + e + 2];
          a3 += q[qo + e + 3] * k[ko + e + 3];
        }
        for (; e < d; e++) a0 += q[qo + e] * k[ko + e];
        let sc = (a0 + a1 + (a2 + a3)) * scale;
        if (softcap > 0) sc = Math.tanh(sc / softcap) * softcap;
        s[j] = sc;
        if (scores) scores[(h * n + i) * T + j] = sc;
        if (sc > max) max = sc;
      }
      let sum = 0;
      for (let j = lo; j <= qi; j++) { s[j] = Math.exp(s[j] - max); sum += s[j]; }
      acc.fill(0);
      for (let j = lo; j <= qi; j++) {
        const pj = s[j] / sum;
        if (pattern) pattern[(h * n + i) * T + j] = pj;
        const vo = j * kvW + kh * d;
        let e = 0;
        for (; e < d4; e += 4) {
          acc[e] += pj * v[vo + e];
          acc[e + 1] += pj * v[vo + e + 1];
          acc[e + 2] += pj * v[vo + e + 2];
          acc[e + 3] += pj * v[vo + e + 3];
        }
        for (; e < d; e++) acc[e] += pj * v[vo + e];
      }
      for (let e = 0; e < d; e++) z[qo + e] = acc[e];
    }
  }
  return { z, pattern, scores };
}
