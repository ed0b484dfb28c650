/** mulberry32: a small seeded PRNG so two generations with the same seed draw the same numbers. */
export function seededRandom(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/**
 * Checks a sampling rule before any token is drawn (a NaN temperature from `--temperature abc` used to
 * sample the last vocabulary id forever).
 * @throws Error when temperature is not a finite number ≥ 0 or topK is not a whole number ≥ 0.
 */
export function checkSamplingRule(temperature: number, topK: number): void {
  if (!(Number.isFinite(temperature) && temperature >= 0)) throw new Error(`temperature must be a finite number ≥ 0 (0 = greedy), not ${temperature}`);
  if (!(Number.isInteger(topK) && topK >= 0)) throw new Error(`top-k must be a whole number ≥ 0 (0 = all tokens), not ${topK}`);
}

/**
 * Picks the next token from log-probs [V]: greedy (first maximum) when temperature ≤ 0, else a draw
 * from softmax(logp / temperature) restricted to the topK most likely tokens (0 = all).
 * @throws Error when temperature is not a finite number ≥ 0, topK is not an integer ≥ 0, or a
 *   log-prob is NaN (a NaN never becomes a token: greedy decoding used to return id 0).
 */
export function sampleToken(logProbs: Float32Array, temperature: number, topK: number, rand: () => number): number {
  checkSamplingRule(temperature, topK);
  const bad = logProbs.findIndex((x) => Number.isNaN(x));
  if (bad >= 0) throw new Error(`cannot sample: the log-prob of token ${bad} is NaN`);
  if (temperature === 0) {
    let best = 0;
    for (let i = 1; i < logProbs.length; i++) if (logProbs[i] > logProbs[best]) best = i;
    return best;
  }
  let idx = Array.from(logProbs.keys());
  if (topK > 0 && topK < idx.length) idx = idx.sort((a, b) => logProbs[b] - logProbs[a] || a - b).slice(0, topK);
  return drawToken(idx, idx.map((i) => logProbs[i]), temperature, rand);
}

/**
 * One draw from softmax(logp / temperature) over candidate tokens, walking them in the given order
 * (so the same candidates in the same order with the same rand() give the same token).
 * @param ids candidate token ids; logProbs their log-probs (same length, ≥ 1).
 */
export function drawToken(ids: ArrayLike<number>, logProbs: ArrayLike<number>, temperature: number, rand: () => number): number {
  let m = -Infinity;
  for (let j = 0; j < logProbs.length; j++) m = Math.max(m, logProbs[j]);
  const w = Array.from(logProbs, (lp) => Math.exp((lp - m) / temperature));
  const total = w.reduce((s, x) => s + x, 0);
  let u = rand() * total;
  for (let j = 0; j < ids.length; j++) {
    u -= w[j];
    if (u <= 0) return ids[j];
  }
  return ids[ids.length - 1];
}
