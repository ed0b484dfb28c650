/**
 * An independent implementation of the documented sampler (workers/engine/analysis/sampling.ts,
 * api.ts GenerateRequest) and of its generator, for exact-id checks with a fixed seed.
 */

/** mulberry32 (Tommy Ettinger's public-domain generator), written out here independently. */
export function mulberry32(seed: number): () => number {
  let s = seed >>> 0;
  return () => {
    s = (s + 0x6d2b79f5) | 0;
    let t = Math.imul(s ^ (s >>> 15), 1 | s);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/**
 * The sampling definition: candidates in vocabulary order (k = 0) or the k highest log-probs in
 * descending order (ties: lower id first); weights exp((log p − max) / temperature); the first
 * candidate whose cumulative weight reaches u · Σ weights, u uniform in [0, 1).
 */
export function referenceSample(lp: ArrayLike<number>, temperature: number, k: number, u: number): number {
  const ids = Array.from({ length: lp.length }, (_, i) => i);
  if (temperature <= 0) return ids.reduce((best, i) => (lp[i] > lp[best] ? i : best), 0);
  const cand = k > 0 && k < lp.length ? [...ids].sort((a, b) => lp[b] - lp[a] || a - b).slice(0, k) : ids;
  const max = Math.max(...cand.map((i) => lp[i]));
  const w = cand.map((i) => Math.exp((lp[i] - max) / temperature));
  const target = u * w.reduce((s, x) => s + x, 0);
  let cum = 0;
  for (let j = 0; j < cand.length; j++) {
    cum += w[j];
    if (target <= cum) return cand[j];
  }
  return cand[cand.length - 1];
}
