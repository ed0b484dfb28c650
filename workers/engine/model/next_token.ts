import type { Backend, Tensor } from '../backend/backend';
import { setMargins } from '../analysis/margin';
import { checkSamplingRule, drawToken, sampleToken } from '../analysis/sampling';

/** Largest sampling top-k chosen on the device; a wider one reads the whole distribution back. */
export const DEVICE_TOP_K_MAX = 256;

/** The token drawn at one generation step, with what the UI shows about it. */
export interface NextToken {
  id: number;
  /** log p of the chosen token (nats). */
  logProb: number;
  /** Δ = lse(log p[good]) − lse(log p[bad]) in the distribution it was drawn from (DESIGN.md §3). */
  margin: number;
}

/** How the next token is chosen (analysis/sampling.ts sampleToken semantics). */
export interface NextTokenRule {
  /** 0: greedy, first maximum. */
  temperature: number;
  /** Sample among the k most likely (0 = all). */
  topK: number;
  rand: () => number;
  /** The futures' first-token sets. */
  good: number[];
  bad: number[];
}

/**
 * Chooses the next token from logits [1, V] on the device: log_softmax, the futures' log-probs and
 * the candidates (top-1 for greedy, top-k for top-k sampling) are computed there and only those few
 * numbers are read back, not the V log-probs. Draws the same token as sampleToken on the full
 * distribution (same candidates in the same order, ties to the lower id). Full-vocabulary sampling
 * (temperature > 0 with topK 0 or > DEVICE_TOP_K_MAX) reads the whole row back.
 * @param logits [1, d_vocab]; not released.
 * @throws Error for a temperature that is not a finite number ≥ 0 or a top-k that is not a whole
 *   number ≥ 0 (checkSamplingRule), before anything runs on the device.
 */
export async function chooseNextToken(b: Backend, logits: Tensor, rule: NextTokenRule): Promise<NextToken> {
  checkSamplingRule(rule.temperature, rule.topK);
  const V = logits.shape[logits.shape.length - 1];
  const lp = b.logSoftmax(logits);
  try {
    const cols = [...new Set([...rule.good, ...rule.bad])];
    const g = b.gatherCols(lp, Int32Array.from(cols));
    let margin: number;
    try {
      margin = setMargins(await b.read(g), cols, rule.good, rule.bad)[0];
    } finally {
      b.release(g);
    }
    const k = rule.temperature <= 0 ? 1 : rule.topK > 0 && rule.topK < V ? rule.topK : 0;
    if (k > 0 && k <= DEVICE_TOP_K_MAX) {
      const top = await b.topk(lp, k);
      const id = k === 1 ? top.indices[0] : drawToken(top.indices, top.values, rule.temperature, rule.rand);
      return { id, logProb: top.values[Array.prototype.indexOf.call(top.indices, id)], margin };
    }
    const host = await b.read(lp);
    const id = sampleToken(host, rule.temperature, rule.topK, rule.rand);
    return { id, logProb: host[id], margin };
  } finally {
    b.release(lp);
  }
}
