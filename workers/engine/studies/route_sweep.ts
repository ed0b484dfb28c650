/**
 * The router-mask sweep of a mixture-of-experts model (issue 26), after RoSais ("Sparse Models,
 * Sparse Safety", Jiang et al., arXiv 2602.08621): N seeded random masks, each of m routers
 * (analysis/router_masks.ts: a router = one sparse layer's routing; masking it adds Φ ∈ {0, −∞}^E to
 * its router logits at every position, so the banned experts cannot be chosen and the others keep
 * the router's own p, as steering/spec.ts ban_experts does), and per mask the rise of the target
 * future's log-prob: rise_s = log p_s(target) − log p(target), where log p is the workbench's future
 * log-prob (studies/patching.ts futureLogProb: 'final' = log Σ p of the first tokens of its
 * alternatives; the paper takes the max over an affirmative token set, which is ≤ this sum).
 * The paper's RoSais of one router is max_s rise_s over its masks; here the worst mask (the largest
 * rise) is named over masks of m routers, with the distribution's quantiles and each mask's
 * change of the margin Δ = log p(good) − log p(bad).
 */
import { quantileSorted } from 'd3';
import type { Engine } from '../engine';
import type { SharedPrefix } from '../decision_point';
import type { Intervention } from '../model/intervention';
import type { FutureInput, ResolvedFuture, ChatTurn } from '../prompt';
import { promptWith } from '../prompt';
import type { Progress } from '../progress';
import { forwardSpan } from '../model/span';
import { logSoftmaxCpu } from '../ops/logits.cpu';
import { drawRouterMasks, type RouterMask } from '../analysis/router_masks';
import { futureLogProb, type PatchMetric } from './patching';
import { banIntervention } from './route';

export interface RouteSweepRequest extends ChatTurn {
  prompt: string;
  good: FutureInput;
  bad: FutureInput;
  /** Whose log-prob rise is measured (default 'bad': the future a mask should not make likelier). */
  target?: 'good' | 'bad';
  /** N ≥ 1 masks. */
  masks: number;
  /** m routers per mask, 1..the sparse layers. */
  maskSize: number;
  seed?: number;
  metric?: PatchMetric;
  /** Interventions of every run (the masks' bans come after them). */
  interventions?: readonly Intervention[];
}

/** The quantiles reported, in order. */
export const SWEEP_QUANTILES = [0, 0.1, 0.25, 0.5, 0.75, 0.9, 1] as const;

export interface RouteSweepResult {
  /** The futures' shared prefix, teacher-forced after the prompt (decision_point.ts), or null: the margins are read after it. */
  sharedPrefix?: SharedPrefix | null;
  ids: number[];
  tokens: string[];
  good: ResolvedFuture;
  bad: ResolvedFuture;
  target: 'good' | 'bad';
  metric: PatchMetric;
  /** log p(target) of the run without masks (nats). */
  logProb: number;
  /** Δ of the run without masks. */
  margin: number;
  /** [N]: each mask, its routers in ascending layer order. */
  masks: RouterMask[][];
  /** [N]: log p_s(target) − log p(target) (nats). */
  rise: Float64Array;
  /** [N]: Δ_s − Δ (nats). */
  marginChange: Float64Array;
  /** Index of the mask with the largest rise (the first such). */
  worst: number;
  /** rise's quantiles at SWEEP_QUANTILES (R-7 linear interpolation, d3.quantileSorted). */
  quantiles: number[];
}

/** The ban_experts interventions of one mask: Φ at each of its routers, every position. */
export function maskInterventions(mask: readonly RouterMask[]): Intervention[] {
  return mask.map((r) => banIntervention(r.layer, r.experts));
}

/**
 * The sweep: one run per mask (plus the unmasked run; onProgress after each mask).
 * @throws Error for a dense model, a mask size outside 1..the sparse layers, masks < 1, a model
 *   whose tokens use every expert, an empty or too long prompt, or a bad future (all before any forward).
 */
export async function routeSweep(engine: Engine, req: RouteSweepRequest, onProgress?: (p: Progress) => void, signal?: AbortSignal): Promise<RouteSweepResult> {
  const s = engine.spec, moe = s.moe;
  if (!moe) throw new Error(`${s.modelType} is not a mixture-of-experts model: it has no routers to mask (route-sweep runs Mixtral, Qwen2-MoE, OLMoE)`);
  const routers = moe.sparse.flatMap((sp, l) => (sp ? [l] : []));
  const masks = drawRouterMasks(routers, moe.nExperts, moe.topK, req.masks, req.maskSize, req.seed ?? 0);
  const p = promptWith(req.prompt, req);
  const { promptIds: ids, good, bad, sharedPrefix } = engine.decisionPoint(p, req.good, req.bad);
  const T = ids.length, V = s.dVocab;
  const target = req.target ?? 'bad', metric = req.metric ?? 'final';
  const logp = futureLogProb(metric, V);
  const base = req.interventions ?? [];
  /** log p(good), log p(bad) under `ivs`. */
  const score = async (ivs: readonly Intervention[]) => {
    const out = await engine.run(ids, { interventions: ivs, logits: 'last' });
    const lp = logSoftmaxCpu(out.logits.subarray(out.logits.length - V), V);
    const branch = async (q: number[]) => (await forwardSpan(engine.model, q, T, q.length, { nPrompt: T, interventions: ivs, logits: 'all' })).logits!;
    return { good: await logp(lp, ids, branch, good), bad: await logp(lp, ids, branch, bad) };
  };
  const s0 = await score(base);
  const rise = new Float64Array(masks.length), marginChange = new Float64Array(masks.length);
  for (let i = 0; i < masks.length; i++) {
    await new Promise((r) => setTimeout(r, 0));
    signal?.throwIfAborted();
    const si = await score([...base, ...maskInterventions(masks[i])]);
    rise[i] = si[target] - s0[target];
    marginChange[i] = (si.good - si.bad) - (s0.good - s0.bad);
    onProgress?.({ done: i + 1, total: masks.length });
  }
  let worst = 0;
  for (let i = 1; i < rise.length; i++) if (rise[i] > rise[worst]) worst = i;
  const sorted = Array.from(rise).sort((a, b) => a - b);
  return {
    ids, tokens: engine.tokenStrings(ids), good, bad, sharedPrefix, target, metric, logProb: s0[target], margin: s0.good - s0.bad,
    masks, rise, marginChange, worst, quantiles: SWEEP_QUANTILES.map((q) => quantileSorted(sorted, q)!),
  };
}
