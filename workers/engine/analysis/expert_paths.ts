/**
 * Expert paths of a mixture-of-experts model ("Polysemantic Experts, Monosemantic Paths", arXiv
 * 2604.17837: the unit worth studying may be a token's route across layers rather than one expert):
 * a token's path is its top-1 expert (the highest-weight choice) at each sparse layer in order; the
 * paths of every token of a set of prompts are grouped, each with its count and example tokens.
 */

/** One prompt's routing: its tokens and, per sparse layer in order, the chosen experts [T·k] (descending weight). */
export interface PromptRoute {
  tokens: readonly string[];
  expertIndices: readonly ArrayLike<number>[];
}

/** One path: the top-1 expert per sparse layer, the tokens that took it, and up to `maxExamples` of them. */
export interface ExpertPath {
  path: number[];
  count: number;
  examples: string[];
}

/**
 * The paths of every token of `routes`, most frequent first (ties: the path first met first).
 * @param k experts per token (num_experts_per_tok): the stride of expertIndices.
 * @throws Error when a prompt's layers do not hold T·k ids each.
 */
export function expertPaths(routes: readonly PromptRoute[], k: number, maxExamples = 6): ExpertPath[] {
  const byKey = new Map<string, ExpertPath>();
  for (const r of routes) {
    const T = r.tokens.length;
    r.expertIndices.forEach((ix, l) => { if (ix.length !== T * k) throw new Error(`sparse layer ${l} holds ${ix.length} expert ids, not ${T} tokens × k = ${k}`); });
    for (let t = 0; t < T; t++) {
      const path = r.expertIndices.map((ix) => ix[t * k]);
      const key = path.join(',');
      const p = byKey.get(key) ?? { path, count: 0, examples: [] };
      p.count++;
      if (p.examples.length < maxExamples) p.examples.push(r.tokens[t]);
      byKey.set(key, p);
    }
  }
  return [...byKey.values()].sort((a, b) => b.count - a.count);
}
