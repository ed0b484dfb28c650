import type { AttentionParams } from '../backend/backend';

/**
 * The two inner-product loops of attention for one query row i and head h (KV head kh), over key
 * rows lo..hi: what a decode step at long context, and a prefill, spend their time in. The
 * TypeScript loops are jsAttentionDots below; backend/wasm_gemm.ts runs the same float64 arithmetic
 * in WebAssembly SIMD (f64x2 lanes), bit-identical.
 */
export interface AttentionDots {
  /** Float64 scratch of ≥ past + n entries: scores() fills s[lo..hi]; mix() reads the probabilities there. */
  readonly s: Float64Array;
  /**
   * s[j] = (q[i, h] · k[j, kh])·scale for j in [lo, hi]: float64 products of the f32 values summed in
   * four partial sums over the head dims e ≡ 0, 1, 2, 3 (mod 4), in order of e, as (a0 + a1) + (a2 + a3).
   */
  scores(i: number, h: number, kh: number, lo: number, hi: number, scale: number): void;
  /** z[i, h, e] = Σ_{j=lo..hi} s[j]·v[j, kh, e]: float64 products and sums in order of j, rounded to f32 once. */
  mix(i: number, h: number, kh: number, lo: number, hi: number): void;
  /** z [n, H·d] once every (i, h) has been mixed. */
  z(): Float32Array;
}

/**
 * The TypeScript dots on q [n, H·d] and the caches k, v [ctx, KV·d].
 * @param out where z goes (n·H·d values, every one written; default a new array).
 */
export function jsAttentionDots(q: Float32Array, k: Float32Array, v: Float32Array, p: AttentionParams, out?: Float32Array): AttentionDots {
  const { n, past, nHeads, nKvHeads, headDim: d } = p;
  const kvW = nKvHeads * d;
  const d4 = d - (d % 4);
  const z = out ?? new Float32Array(n * nHeads * d);
  const s = new Float64Array(past + n);
  const acc = new Float64Array(d);
  return {
    s,
    scores(i, h, kh, lo, hi, scale) {
      const qo = (i * nHeads + h) * d;
      for (let j = lo; j <= hi; j++) {
        const ko = j * kvW + kh * d;
        let a0 = 0, a1 = 0, a2 = 0, a3 = 0, e = 0;
        for (; e < d4; e += 4) {
          a0 += q[qo + e] * k[ko + e];
          a1 += q[qo + e + 1] * k[ko + e + 1];
          a2 += q[qo + e + 2] * k[ko + e + 2];
          a3 += q[qo + e + 3] * k[ko + e + 3];
        }
        for (; e < d; e++) a0 += q[qo + e] * k[ko + e];
        s[j] = (a0 + a1 + (a2 + a3)) * scale;
      }
    },
    mix(i, h, kh, lo, hi) {
      acc.fill(0);
      for (let j = lo; j <= hi; j++) {
        const pj = s[j];
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
      const zo = (i * nHeads + h) * d;
      for (let e = 0; e < d; e++) z[zo + e] = acc[e];
    },
    z: () => z,
  };
}

/**
 * Causal grouped-query attention (Vaswani et al. 2017; GQA: Ainslie et al. 2023, arXiv 2305.13245).
 * q [n, H·d]; k, v caches [ctx, KV·d] holding rows 0..past+n-1. Returns z [n, H·d] and, when asked,
 * the probabilities and masked scores [H, n, past+n]. Scores, the softmax and the weighted sum of
 * values are computed in float64 (the dot products by `dots`: TypeScript loops by default).
 * @param out where z goes for the default dots (n·H·d values; default a new array).
 */
export function attentionCpu(q: Float32Array, k: Float32Array, v: Float32Array, p: AttentionParams, out?: Float32Array, dots: AttentionDots = jsAttentionDots(q, k, v, p, out)): { z: Float32Array; pattern?: Float32Array; scores?: Float32Array } {
  const { n, past, nHeads, nKvHeads, scale, softcap, window } = p;
  const T = past + n;
  const group = nHeads / nKvHeads;
  const pattern = p.wantPattern ? new Float32Array(nHeads * n * T) : undefined;
  const scores = p.wantScores ? new Float32Array(nHeads * n * T).fill(-Infinity) : undefined;
  const s = dots.s;
  for (let h = 0; h < nHeads; h++) {
    const kh = Math.floor(h / group);
    for (let i = 0; i < n; i++) {
      const qi = past + i;
      const lo = window > 0 ? Math.max(0, qi - window + 1) : 0;
      dots.scores(i, h, kh, lo, qi, scale);
      let max = -Infinity;
      for (let j = lo; j <= qi; j++) {
        let sc = s[j];
        if (softcap > 0) sc = Math.tanh(sc / softcap) * softcap;
        s[j] = sc;
        if (scores) scores[(h * n + i) * T + j] = sc;
        if (sc > max) max = sc;
      }
      let sum = 0;
      for (let j = lo; j <= qi; j++) { s[j] = Math.exp(s[j] - max); sum += s[j]; }
      for (let j = lo; j <= qi; j++) {
        const pj = s[j] / sum;
        s[j] = pj;
        if (pattern) pattern[(h * n + i) * T + j] = pj;
      }
      dots.mix(i, h, kh, lo, qi);
    }
  }
  return { z: dots.z(), pattern, scores };
}
