/**
 * Gradients of the margin and token attribution from them (DESIGN.md §3 "Attribution"), over the
 * backward pass of model/backward.ts (host float64, both backends):
 * - hookGradient: ∂Δ/∂h [n_tokens, width] at one [pos, width] hook, Δ = log p(good) − log p(bad)
 *   between the futures' first tokens at the last prompt position (sets: logsumexp).
 * - gradient × input: a_t = Σ_d x_td·∂Δ/∂x_td over the input embeddings x = hook_embed (one backward).
 * - integrated gradients (Sundararajan et al. 2017, arXiv 1703.01365): a_t = Σ_d (x − x')_td ·
 *   (1/N)·Σ_{k=1..N} ∂Δ/∂x_td at x' + (k/N)(x − x') (the N-step right Riemann sum; N backwards with
 *   hook_embed replaced by the interpolated embeddings), baseline x' = the corrupted prompt's
 *   embeddings (same token length), a baseline token's embedding at every position (BOS kept), or
 *   zero. Its own check, the completeness gap Σ_t a_t − (Δ(x) − Δ(x')), is returned.
 */
import type { Engine } from '../engine';
import type { SharedPrefix } from '../decision_point';
import type { FutureInput, ChatTurn } from '../prompt';
import { promptWith } from '../prompt';
import type { Intervention } from '../model/intervention';
import { backward } from '../model/backward';
import { hookInfo, assertHook } from '../model/hooks';
import type { Progress } from '../progress';
import { rowMargin } from '../analysis/margin';
import { logSoftmaxCpu } from '../ops/logits.cpu';

export interface GradRequest extends ChatTurn {
  prompt: string;
  good: FutureInput;
  bad: FutureInput;
  /** A [pos, width] hook: hook_embed, blocks.l.hook_resid_pre, blocks.l.attn.hook_z, … */
  hook: string;
  interventions?: Intervention[];
  budgetBytes?: number;
}

export interface HookGradient {
  hook: string;
  ids: number[];
  tokens: string[];
  /** Δ on the run (nats). */
  margin: number;
  width: number;
  /** ∂Δ/∂h [n_tokens·width], row-major. */
  grad: Float32Array;
}

/** Resolves prompt and futures once for the gradient studies, at their decision point (Engine.decisionPoint). */
function setUp(engine: Engine, req: ChatTurn & { prompt: string; good: FutureInput; bad: FutureInput }) {
  const d = engine.decisionPoint(promptWith(req.prompt, req), req.good, req.bad);
  return { ids: d.promptIds, input: d.input, sharedPrefix: d.sharedPrefix, objective: { kind: 'margin' as const, good: d.good.firstIds, bad: d.bad.firstIds } };
}

/**
 * ∂Δ/∂h at one hook (one forward, one backward).
 * @throws Error for an unknown hook or one that is not [pos, width], or a backward over the memory budget.
 */
export async function hookGradient(engine: Engine, req: GradRequest): Promise<HookGradient> {
  assertHook(engine.spec, req.hook);
  const info = hookInfo(req.hook)!;
  if (!info.shape.startsWith('[pos,') || req.hook === 'logits') throw new Error(`hook "${req.hook}" is ${info.shape}: gradients are taken at [pos, width] hooks (hook_embed, blocks.l.hook_resid_pre, …)`);
  const { ids, objective } = setUp(engine, req);
  const r = await backward(engine.model, ids, objective, { interventions: req.interventions, keep: (h) => h === req.hook, budgetBytes: req.budgetBytes });
  const g = r.grads.get(req.hook);
  if (!g) throw new Error(`the backward pass does not differentiate ${req.hook}`);
  return { hook: req.hook, ids, tokens: engine.tokenStrings(ids), margin: r.value, width: g.length / ids.length, grad: Float32Array.from(g) };
}

export type AttributionMethod = 'grad_x_input' | 'ig';

export interface AttributionRequest extends ChatTurn {
  prompt: string;
  good: FutureInput;
  bad: FutureInput;
  method: AttributionMethod;
  /** IG baseline: the corrupted prompt's embeddings (same token length). */
  corrupt?: string;
  /** IG baseline: this token's embedding at every position (BOS kept). Without corrupt or baselineToken: zero. */
  baselineToken?: number;
  /** IG Riemann steps (default 64). */
  steps?: number;
  interventions?: Intervention[];
  budgetBytes?: number;
}

export interface AttributionResult {
  /** The futures' shared prefix, teacher-forced after the prompt (decision_point.ts), or null: the margins are read after it. */
  sharedPrefix?: SharedPrefix | null;
  method: AttributionMethod;
  ids: number[];
  tokens: string[];
  /** Δ(x) on the prompt (nats). */
  margin: number;
  /** One number per token [n_tokens]. */
  attribution: Float32Array;
  /** IG: the baseline used, Δ(x'), steps and the completeness gap Σ a − (Δ(x) − Δ(x')). */
  baseline?: 'corrupt' | 'token' | 'zero';
  baselineMargin?: number;
  steps?: number;
  completenessGap?: number;
}

/**
 * Token attribution of the margin by gradient × input or integrated gradients.
 * @param onProgress IG: after each step (done/total = k/N).
 * @throws Error for a corrupted prompt of another token length, steps not a positive integer, an unknown method.
 */
export async function tokenAttribution(engine: Engine, req: AttributionRequest, onProgress?: (p: Progress) => void, signal?: AbortSignal): Promise<AttributionResult> {
  const { ids, input, sharedPrefix, objective } = setUp(engine, req);
  const T = ids.length, D = engine.spec.dModel;
  const base = req.interventions ?? [];
  const opts = { keep: (h: string) => h === 'hook_embed', budgetBytes: req.budgetBytes };
  const tokens = engine.tokenStrings(ids);
  const embedOf = async (x: readonly number[]) => (await engine.run(x, { capture: ['hook_embed'], interventions: base, logits: 'last' })).captured.get('hook_embed')!;
  if (req.method === 'grad_x_input') {
    const r = await backward(engine.model, ids, objective, { ...opts, interventions: base });
    const x = r.acts.get('hook_embed')!, g = r.grads.get('hook_embed')!;
    const attribution = new Float32Array(T);
    for (let t = 0; t < T; t++) { let a = 0; for (let d = 0; d < D; d++) a += x[t * D + d] * g[t * D + d]; attribution[t] = a; }
    return { method: 'grad_x_input', ids, tokens, margin: r.value, attribution, sharedPrefix };
  }
  if (req.method !== 'ig') throw new Error(`attribution method "${req.method as string}": use grad_x_input or ig`);
  const N = req.steps ?? 64;
  if (!Number.isInteger(N) || N < 1) throw new Error(`IG steps ${N}: use a positive integer`);
  const x = await embedOf(ids);
  let xb: Float32Array, baseline: 'corrupt' | 'token' | 'zero';
  if (req.corrupt !== undefined) {
    const cIds = engine.encodePrompt({ ...input, prompt: req.corrupt });
    if (cIds.length !== T) throw new Error(`the prompt has ${T} tokens and the corrupted prompt ${cIds.length}; its embeddings as the IG baseline need equal token lengths: reword one of them`);
    xb = await embedOf(cIds); baseline = 'corrupt';
  } else if (req.baselineToken !== undefined) {
    const bos = engine.spec.bosTokenId;
    xb = await embedOf(ids.map((id, t) => (t === 0 && id === bos ? id : req.baselineToken!))); baseline = 'token';
  } else {
    xb = new Float32Array(T * D); baseline = 'zero';
  }
  const at = (alpha: number): Intervention => ({ hook: 'hook_embed', positions: 'all', op: { kind: 'patch', replacement: Float32Array.from(x, (v, i) => xb[i] + alpha * (v - xb[i])) } });
  const sum = new Float64Array(T * D);
  let margin = 0;
  for (let k = 1; k <= N; k++) {
    signal?.throwIfAborted();
    const r = await backward(engine.model, ids, objective, { ...opts, interventions: [...base, at(k / N)] });
    const g = r.grads.get('hook_embed')!;
    for (let i = 0; i < sum.length; i++) sum[i] += g[i];
    if (k === N) margin = r.value;
    onProgress?.({ done: k, total: N });
    await new Promise((res) => setTimeout(res, 0));
  }
  const last = (await engine.run(ids, { interventions: [...base, at(0)], logits: 'last' })).logits;
  const baselineMargin = rowMargin(logSoftmaxCpu(last, last.length), objective.good, objective.bad);
  const attribution = new Float32Array(T);
  let total = 0;
  for (let t = 0; t < T; t++) {
    let a = 0;
    for (let d = 0; d < D; d++) a += (x[t * D + d] - xb[t * D + d]) * (sum[t * D + d] / N);
    attribution[t] = a; total += a;
  }
  return { method: 'ig', ids, tokens, margin, attribution, baseline, baselineMargin, steps: N, completenessGap: total - (margin - baselineMargin), sharedPrefix };
}
