/**
 * Mixture-of-experts routing (HF `MixtralSparseMoeBlock` / `Qwen2MoeSparseMoeBlock` /
 * `OlmoeSparseMoeBlock`): p = softmax(router logits) in float32, the top-k experts of p (torch.topk:
 * descending; ties here go to the lower index), their p renormalised when norm_topk_prob. WGSL twin:
 * moe_route.wgsl.ts.
 */

/**
 * Routing of logits [n, E] → indices [n, k] (float32 ids) and weights [n, k]. With `forced`
 * [n, k], those ids are the indices (rounded, clamped into [0, E)) and weights are p at them.
 */
export function moeRouteCpu(logits: Float32Array, E: number, k: number, normTopk: boolean, forced?: Float32Array): { indices: Float32Array; weights: Float32Array } {
  const n = logits.length / E;
  const indices = new Float32Array(n * k), weights = new Float32Array(n * k);
  const p = new Float32Array(E);
  for (let r = 0; r < n; r++) {
    const o = r * E;
    let m = -Infinity;
    for (let e = 0; e < E; e++) m = Math.max(m, logits[o + e]);
    let sum = 0;
    for (let e = 0; e < E; e++) { p[e] = Math.exp(logits[o + e] - m); sum += p[e]; }
    for (let e = 0; e < E; e++) p[e] = p[e] / sum;
    const chosen: number[] = [];
    for (let j = 0; j < k; j++) {
      let c: number;
      if (forced) c = Math.min(E - 1, Math.max(0, Math.round(forced[r * k + j])));
      else {
        c = -1;
        for (let e = 0; e < E; e++) if (!chosen.includes(e) && (c < 0 || p[e] > p[c])) c = e;
      }
      chosen.push(c);
    }
    let tot = 0;
    for (let j = 0; j < k; j++) { indices[r * k + j] = chosen[j]; weights[r * k + j] = p[chosen[j]]; tot += weights[r * k + j]; }
    if (normTopk) for (let j = 0; j < k; j++) weights[r * k + j] = weights[r * k + j] / Math.fround(tot);
  }
  return { indices, weights };
}
