/**
 * Routing divergence between two mixture-of-experts models on the same prompt (a base model and
 * its fine-tune, the Compare view's A and B; issue 26): per sparse layer and token, the Jaccard
 * overlap of the experts each model chose and the JS divergence (nats) of their router
 * distributions (analysis/route_divergence.ts).
 */
import type { Engine } from '../engine';
import type { PromptInput } from '../prompt';
import { routeDivergence, type LayerDivergence } from '../analysis/route_divergence';

/**
 * One forward per model over the prompt, capturing hook_router_logits and hook_expert_indices at
 * every sparse layer.
 * @returns null when A has no routers (a dense pair).
 * @throws Error when B's routers differ from A's (sparse layers, n_experts, top-k) or the prompt
 *   tokenises differently, before any forward.
 */
export async function modelRouteDivergence(a: Engine, b: Engine, req: PromptInput): Promise<LayerDivergence[] | null> {
  const ma = a.spec.moe, mb = b.spec.moe;
  if (!ma) return null;
  if (!mb || mb.nExperts !== ma.nExperts || mb.topK !== ma.topK || mb.sparse.join() !== ma.sparse.join()) throw new Error('routing divergence needs model B to have the same routers as A (sparse layers, n_experts, top-k)');
  const ids = a.encodePrompt(req), idsB = b.encodePrompt(req);
  if (ids.join() !== idsB.join()) throw new Error('routing divergence compares token by token: the two models tokenise the prompt differently');
  const sparse = ma.sparse.flatMap((s, l) => (s ? [l] : []));
  const hooks = sparse.flatMap((l) => [`blocks.${l}.mlp.hook_router_logits`, `blocks.${l}.mlp.hook_expert_indices`]);
  const routing = async (e: Engine) => {
    const r = await e.run(ids, { capture: hooks, logits: 'last' });
    return sparse.map((l) => ({ routerLogits: r.captured.get(`blocks.${l}.mlp.hook_router_logits`)!, expertIndices: r.captured.get(`blocks.${l}.mlp.hook_expert_indices`)! }));
  };
  return routeDivergence(sparse, await routing(a), await routing(b), ids.length, ma.nExperts, ma.topK);
}
