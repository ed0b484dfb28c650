/**
 * Routing divergence of a mixture-of-experts model between two runs over the same number of tokens
 * (two prompts, or one prompt under two models with routers of the same shape; issue 26), per sparse
 * layer and token:
 *   - Jaccard overlap of the chosen experts, |A ∩ B| / |A ∪ B| (1 = the same set, 0 = disjoint);
 *   - Jensen–Shannon divergence of the router distributions p = softmax(router_logits) (float64),
 *     JS(p, q) = ½ KL(p ‖ m) + ½ KL(q ‖ m), m = ½(p + q), in nats (natural log; 0 ≤ JS ≤ ln 2)
 *     (Lin 1991, "Divergence measures based on the Shannon entropy").
 */

/** One run's routing at one sparse layer over T tokens. */
export interface LayerRouting {
  /** [T·n_experts] before the softmax. */
  routerLogits: ArrayLike<number>;
  /** [T·k] chosen expert ids. */
  expertIndices: ArrayLike<number>;
}

/** One sparse layer's divergence, per token. */
export interface LayerDivergence {
  layer: number;
  /** [T] Jaccard overlap of the chosen experts. */
  jaccard: Float64Array;
  /** [T] JS divergence of the router distributions, nats. */
  js: Float64Array;
}

/** softmax of row [n] in float64 (max subtracted; −∞ logits get probability 0). */
function softmax64(row: ArrayLike<number>): Float64Array {
  let m = -Infinity;
  for (let i = 0; i < row.length; i++) m = Math.max(m, row[i]);
  const p = Float64Array.from({ length: row.length }, (_, i) => Math.exp(row[i] - m));
  const z = p.reduce((s, v) => s + v, 0);
  return p.map((v) => v / z);
}

/** JS(p, q) in nats; terms with a zero probability contribute 0. */
function jsDivergence(p: Float64Array, q: Float64Array): number {
  let s = 0;
  for (let i = 0; i < p.length; i++) {
    const m = (p[i] + q[i]) / 2;
    if (p[i] > 0) s += p[i] * Math.log(p[i] / m);
    if (q[i] > 0) s += q[i] * Math.log(q[i] / m);
  }
  return Math.max(0, s / 2);
}

/** |A ∩ B| / |A ∪ B| of two id lists (as sets). */
function jaccard(a: ArrayLike<number>, b: ArrayLike<number>): number {
  const A = new Set(Array.from(a)), B = new Set(Array.from(b));
  const inter = [...A].filter((x) => B.has(x)).length;
  return inter / (A.size + B.size - inter);
}

/**
 * The divergence of run `a` from run `b` at each sparse layer and token.
 * @param layers the sparse layers' indices (the entries of a and b, in order).
 * @param T tokens in each run; nExperts and k the routers' width and top-k.
 * @throws Error when the runs do not hold the same layers, or an entry is not [T·n_experts] / [T·k].
 */
export function routeDivergence(layers: readonly number[], a: readonly LayerRouting[], b: readonly LayerRouting[], T: number, nExperts: number, k: number): LayerDivergence[] {
  if (a.length !== layers.length || b.length !== layers.length) throw new Error(`the two runs hold ${a.length} and ${b.length} sparse layers, not ${layers.length}`);
  for (const [name, r] of [['A', a], ['B', b]] as const) {
    r.forEach((x, i) => {
      if (x.routerLogits.length !== T * nExperts) throw new Error(`run ${name}, layer ${layers[i]}: router_logits hold ${x.routerLogits.length} values, not ${T} tokens × ${nExperts} experts`);
      if (x.expertIndices.length !== T * k) throw new Error(`run ${name}, layer ${layers[i]}: expert_indices hold ${x.expertIndices.length} ids, not ${T} tokens × k = ${k}`);
    });
  }
  const row = (v: ArrayLike<number>, t: number, w: number) => Array.from({ length: w }, (_, j) => v[t * w + j]);
  return layers.map((layer, i) => ({
    layer,
    jaccard: Float64Array.from({ length: T }, (_, t) => jaccard(row(a[i].expertIndices, t, k), row(b[i].expertIndices, t, k))),
    js: Float64Array.from({ length: T }, (_, t) => jsDivergence(softmax64(row(a[i].routerLogits, t, nExperts)), softmax64(row(b[i].routerLogits, t, nExperts)))),
  }));
}
