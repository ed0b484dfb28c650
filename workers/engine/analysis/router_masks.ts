/**
 * Random router masks for the route sweep (studies/route_sweep.ts), after RoSais ("Sparse Models,
 * Sparse Safety: Unsafe Routes in Mixture-of-Experts LLMs", Jiang et al., arXiv 2602.08621): a mask
 * of a router (one sparse layer's routing) is Φ ∈ {0, −∞}^n_experts added to its routing scores
 * (the router logits) before the softmax and top-k, so the experts at −∞ cannot be chosen and the
 * others keep their scores. The paper draws Φ at random and does not fix how many entries are −∞;
 * here each entry is −∞ with probability ½, independently, and a draw is redrawn until it bans at
 * least one expert and leaves at least k (a token must still find its k experts).
 */
import { seededRandom } from './sampling';

/** One router's mask: the sparse layer and its banned experts (ascending). */
export interface RouterMask {
  layer: number;
  experts: number[];
}

/**
 * `n` masks, each of `m` distinct routers drawn uniformly from `routers` (ascending layer order
 * within a mask), each router's Φ drawn as the module docstring says. Seeded (analysis/sampling.ts
 * seededRandom): the same arguments give the same masks.
 * @param routers the sparse layers.
 * @throws Error when m is not in 1..routers.length, n < 1, or n_experts − k < 1 (no expert can be banned).
 */
export function drawRouterMasks(routers: readonly number[], nExperts: number, topK: number, n: number, m: number, seed: number): RouterMask[][] {
  if (!Number.isInteger(n) || n < 1) throw new Error(`the number of masks must be a whole number ≥ 1 (got ${n})`);
  if (!Number.isInteger(m) || m < 1 || m > routers.length) throw new Error(`a mask covers 1..${routers.length} routers (the model's sparse layers), got ${m}`);
  if (nExperts - topK < 1) throw new Error(`every token uses all ${nExperts} experts (k = ${topK}): no router mask leaves k experts`);
  const rand = seededRandom(seed);
  const out: RouterMask[][] = [];
  for (let s = 0; s < n; s++) {
    // a partial Fisher–Yates shuffle picks the m routers
    const pool = [...routers];
    for (let i = 0; i < m; i++) {
      const j = i + Math.floor(rand() * (pool.length - i));
      [pool[i], pool[j]] = [pool[j], pool[i]];
    }
    const chosen = pool.slice(0, m).sort((a, b) => a - b);
    out.push(chosen.map((layer) => {
      for (;;) {
        const experts = Array.from({ length: nExperts }, (_, e) => e).filter(() => rand() < 0.5);
        if (experts.length >= 1 && experts.length <= nExperts - topK) return { layer, experts };
      }
    }));
  }
  return out;
}
