/**
 * Expert routes of a mixture-of-experts model on one prompt (issue 26): each sparse layer's router
 * logits, chosen experts and their weights per token, and — with two futures — the route margin
 * grid: per (layer, expert) the change of the margin Δ = log p(good) − log p(bad) when that expert
 * is banned at every position, or at the decision point alone (the last prompt token, or after the
 * futures' shared prefix when they share one: decision_point.ts; its logits score the futures' first tokens) (steering/spec.ts ban_experts: it cannot be chosen; the
 * others keep the router's own p). The margin is patching's (studies/patching.ts marginOf, metric
 * 'final' or 'sequence'). An expert no banned position chose at a layer is not run: its ban changes
 * nothing, exactly (tests/moe/route_interventions.test.ts), so its cell is 0.
 */
import type { Engine } from '../engine';
import type { SharedPrefix } from '../decision_point';
import type { Intervention } from '../model/intervention';
import type { FutureInput, ResolvedFuture, ChatTurn } from '../prompt';
import { promptWith } from '../prompt';
import type { Progress } from '../progress';
import { forwardSpan } from '../model/span';
import { marginOf, type PatchMetric } from './patching';
import { expertPaths, type ExpertPath, type PromptRoute } from '../analysis/expert_paths';
import { routeDivergence, type LayerDivergence } from '../analysis/route_divergence';

export interface RouteRequest extends ChatTurn {
  prompt: string;
  /** Both or neither: with them the route margin grid is computed. */
  good?: FutureInput;
  bad?: FutureInput;
  /** The margin scored (default 'final': the first tokens). */
  metric?: PatchMetric;
  /** Interventions of every run (the grid's bans come after them). */
  interventions?: readonly Intervention[];
  /** Where the grid bans each expert: every position (default) or the decision point (the last prompt token, or after the futures' shared prefix). */
  banAt?: BanAt;
  /** More prompts whose tokens' expert paths are counted with the prompt's (one forward each, without the interventions: those are resolved against the prompt). */
  set?: readonly string[];
  /** A second prompt of the same token count: its routing divergence from the prompt (analysis/route_divergence.ts), both under the interventions. */
  promptB?: string;
}

/** Where a route margin ban acts: every position, or the decision point (the last prompt token, or after the futures' shared prefix). */
export type BanAt = 'all' | 'decision';

/**
 * ban_experts as the engine sees it (steering/spec.ts routeOp): `experts`' router logits at sparse
 * layer `layer` set to −∞ at `positions`, before the softmax and top-k.
 */
export function banIntervention(layer: number, experts: readonly number[], positions: Intervention['positions'] = 'all'): Intervention {
  return { hook: `blocks.${layer}.mlp.hook_router_logits`, op: { kind: 'set', v: Float32Array.of(Number.NEGATIVE_INFINITY) }, positions, groups: { size: 1, indices: [...experts] } };
}

/** One sparse layer's routing over the prompt's T tokens. */
export interface LayerRoute {
  layer: number;
  /** [T·n_experts] before the softmax. */
  routerLogits: Float32Array;
  /** [T·k] expert ids, descending weight. */
  expertIndices: Int32Array;
  /** [T·k]. */
  expertWeights: Float32Array;
}

export interface RouteResult {
  /** The futures' shared prefix, teacher-forced after the prompt (decision_point.ts), or null: the margins are read after it. */
  sharedPrefix?: SharedPrefix | null;
  ids: number[];
  tokens: string[];
  nLayers: number;
  nExperts: number;
  topK: number;
  /** The sparse layers, in order (dense layers have no router). */
  layers: LayerRoute[];
  good?: ResolvedFuture;
  bad?: ResolvedFuture;
  /** Δ of the run without bans. */
  margin?: number;
  /** With futures: the prompt's and the futures' warnings (e.g. first tokens shared by both futures, which pull Δ and the grid toward 0). */
  warnings?: string[];
  /** [n_layers·n_experts]: Δ_banned − Δ per (layer, expert); NaN on dense layers. */
  routeMargin?: Float64Array;
  /** Where the grid's bans acted. */
  banAt?: BanAt;
  /** Every token's expert path (analysis/expert_paths.ts) over the prompt and `set`, most frequent first. */
  paths: ExpertPath[];
  /** Prompts the paths count: 1 + the set's. */
  pathPrompts: number;
  /** With promptB: per sparse layer, each token's Jaccard overlap and router JS divergence (nats) between the prompts. */
  divergence?: LayerDivergence[];
  /** With promptB: its tokens. */
  tokensB?: string[];
}

/**
 * The routing of `req.prompt` and, with futures, the route margin grid (one run per (sparse layer,
 * expert) that some token chose; onProgress after each).
 * @throws Error for a dense model, only one future given, an empty or too long prompt (the set's
 *   included), a bad future, a promptB whose token count differs from the prompt's (before any forward).
 */
export async function routeStudy(engine: Engine, req: RouteRequest, onProgress?: (p: Progress) => void, signal?: AbortSignal): Promise<RouteResult> {
  const s = engine.spec, moe = s.moe;
  if (!moe) throw new Error(`${s.modelType} is not a mixture-of-experts model: it has no routers (route runs Mixtral, Qwen2-MoE, OLMoE)`);
  if (moe.nExperts - 1 < moe.topK) throw new Error(`every token uses all ${moe.nExperts} experts (num_experts_per_tok ${moe.topK}): none can be banned`);
  if ((req.good === undefined) !== (req.bad === undefined)) throw new Error('the route margin needs both futures (good and bad), or neither');
  // with futures, the prompt at their decision point (the shared prefix teacher-forced after it and after prompt B)
  const d = req.good && req.bad ? engine.decisionPoint(promptWith(req.prompt, req), req.good, req.bad) : null;
  const p = d?.input ?? promptWith(req.prompt, req);
  const ids = d?.promptIds ?? engine.encodePrompt(p);
  const T = ids.length, E = moe.nExperts, k = moe.topK, L = s.nLayers;
  const idsB = req.promptB === undefined ? undefined : engine.encodePrompt({ ...p, prompt: req.promptB });
  const kShared = d?.sharedPrefix?.ids.length ?? 0; // counted in both; the message gives the prompts as typed
  if (idsB && idsB.length !== T) throw new Error(`routing divergence compares token by token: prompt B has ${idsB.length - kShared} tokens, the prompt ${T - kShared}`);
  const sparse = Array.from({ length: L }, (_, l) => l).filter((l) => moe.sparse[l]);
  const hook = (l: number, h: string) => `blocks.${l}.mlp.hook_${h}`;
  const base = req.interventions ?? [];
  const run = await engine.run(ids, { capture: sparse.flatMap((l) => [hook(l, 'router_logits'), hook(l, 'expert_indices'), hook(l, 'expert_weights')]), interventions: base, logits: 'last' });
  const layers = sparse.map((l) => ({
    layer: l,
    routerLogits: run.captured.get(hook(l, 'router_logits'))!,
    expertIndices: Int32Array.from(run.captured.get(hook(l, 'expert_indices'))!),
    expertWeights: run.captured.get(hook(l, 'expert_weights'))!,
  }));
  const tokens = engine.tokenStrings(ids);
  const routes: PromptRoute[] = [{ tokens, expertIndices: layers.map((x) => x.expertIndices) }];
  for (const q of req.set ?? []) {
    signal?.throwIfAborted();
    const qIds = engine.encodePrompt(promptWith(q, req));
    const qRun = await engine.run(qIds, { capture: sparse.map((l) => hook(l, 'expert_indices')), logits: 'last' });
    routes.push({ tokens: engine.tokenStrings(qIds), expertIndices: sparse.map((l) => qRun.captured.get(hook(l, 'expert_indices'))!) });
  }
  const result: RouteResult = { ids, tokens, nLayers: L, nExperts: E, topK: k, layers, paths: expertPaths(routes, k), pathPrompts: routes.length };
  if (idsB) {
    const bRun = await engine.run(idsB, { capture: sparse.flatMap((l) => [hook(l, 'router_logits'), hook(l, 'expert_indices')]), interventions: base, logits: 'last' });
    const routing = (r: typeof run) => sparse.map((l) => ({ routerLogits: r.captured.get(hook(l, 'router_logits'))!, expertIndices: r.captured.get(hook(l, 'expert_indices'))! }));
    result.divergence = routeDivergence(sparse, routing(run), routing(bRun), T, E, k);
    result.tokensB = engine.tokenStrings(idsB);
  }
  if (!d) return result;

  const plan = { metric: req.metric ?? 'final', good: d.good, bad: d.bad };
  const margin = marginOf(plan, s.dVocab);
  const marginUnder = async (ivs: readonly Intervention[], last: Float32Array) =>
    margin(last, ids, async (q) => (await forwardSpan(engine.model, q, T, q.length, { nPrompt: T, interventions: ivs, logits: 'all' })).logits!);
  const m0 = await marginUnder(base, run.logits.subarray(run.logits.length - s.dVocab));
  const grid = new Float64Array(L * E).fill(NaN);
  const banAt = req.banAt ?? 'all';
  const positions = banAt === 'all' ? 'all' : [T - 1];
  const chosenAt = (r: LayerRoute, e: number) => (banAt === 'all' ? r.expertIndices.includes(e) : r.expertIndices.subarray((T - 1) * k, T * k).includes(e));
  const cells = layers.flatMap((r) => Array.from({ length: E }, (_, e) => ({ l: r.layer, e, chosen: chosenAt(r, e) })));
  let done = 0;
  for (const c of cells) {
    await new Promise((r) => setTimeout(r, 0));
    signal?.throwIfAborted();
    if (!c.chosen) grid[c.l * E + c.e] = 0;
    else {
      const ivs = [...base, banIntervention(c.l, [c.e], positions)];
      const out = await engine.run(ids, { interventions: ivs, logits: 'last' });
      grid[c.l * E + c.e] = (await marginUnder(ivs, out.logits.subarray(out.logits.length - s.dVocab))) - m0;
    }
    onProgress?.({ done: ++done, total: cells.length });
  }
  return { ...result, good: plan.good, bad: plan.bad, sharedPrefix: d.sharedPrefix, margin: m0, warnings: engine.prompts.futureWarnings(p, plan.good, plan.bad), routeMargin: grid, banAt };
}
