/**
 * SAE activation of each row of hidden_pre [n, C] (the reference for sae_act.wgsl.ts):
 * JumpReLU y_j = pre_j · (pre_j > θ_j) (strict >; θ = 0 is ReLU), then with k > 0 TopK: when the row has
 * at least k positive entries, only those ≥ the k-th largest stay (exact ties with it all stay).
 * Definitions: JumpReLU, Rajamanoharan et al. 2024 (arXiv 2407.14435) and the Gemma Scope
 * tutorial; TopK, Gao et al. 2024 (arXiv 2406.04093), SAELens `TopK` (topk, then ReLU).
 * @param threshold θ [C]. @param k 0 = no TopK.
 */
export function saeActivationCpu(pre: Float32Array, threshold: Float32Array, k: number): Float32Array {
  const C = threshold.length, n = pre.length / C;
  const y = new Float32Array(pre.length);
  for (let r = 0; r < n; r++) {
    const o = r * C;
    for (let j = 0; j < C; j++) y[o + j] = pre[o + j] > threshold[j] ? pre[o + j] : 0;
    if (k <= 0) continue;
    const positive = Array.from(y.subarray(o, o + C)).filter((v) => v > 0).sort((a, b) => b - a);
    if (positive.length < k) continue;
    const kth = positive[k - 1];
    for (let j = 0; j < C; j++) if (y[o + j] < kth) y[o + j] = 0;
  }
  return y;
}
