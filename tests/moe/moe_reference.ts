/**
 * A sparse MLP layer written out by hand on the host (float64) for the MoE tests, from the loaded
 * weights alone (no engine op): HF MixtralSparseMoeBlock / Qwen2MoeSparseMoeBlock / OlmoeSparseMoeBlock,
 *   p = softmax(W_router·x); out = Σ_{e ∈ chosen} w_e·down_e(silu(gate_e x)·up_e x) (+ sigmoid(W_sg·x)·shared(x)),
 *   w_e = p_e, divided by Σ_{chosen} p where the model renormalises (norm_topk_prob).
 */
import type { Backend } from '../../workers/engine/backend/backend';
import type { ExpertWeights, MoeSpec, MoeWeights } from '../../workers/engine/arch/spec';

export function dot(a: ArrayLike<number>, b: ArrayLike<number>): number {
  let s = 0;
  for (let i = 0; i < a.length; i++) s += a[i] * b[i];
  return s;
}

export function maxDiff(a: ArrayLike<number>, b: ArrayLike<number>): number {
  let m = 0;
  for (let i = 0; i < a.length; i++) m = Math.max(m, Math.abs(a[i] - b[i]));
  return m;
}

/** Softmax of one row of router logits, float64. */
function softmax(row: ArrayLike<number>): number[] {
  const m = Math.max(...Array.from(row));
  const e = Array.from(row, (v) => Math.exp(v - m));
  const z = e.reduce((s, v) => s + v, 0);
  return e.map((v) => v / z);
}

/** KL(p‖q) in nats (terms with p = 0 count 0). */
function kl(p: readonly number[], q: readonly number[]): number {
  return p.reduce((s, v, i) => s + (v > 0 ? v * Math.log(v / q[i]) : 0), 0);
}

/**
 * Jensen–Shannon divergence (nats) of the router distributions softmax(a) and softmax(b) of two rows of
 * router logits [n_experts]: ½KL(p‖m) + ½KL(q‖m), m = (p + q)/2 (Lin 1991), float64.
 */
export function routerJs(a: ArrayLike<number>, b: ArrayLike<number>): number {
  const p = softmax(a), q = softmax(b);
  const m = p.map((v, j) => (v + q[j]) / 2);
  return kl(p, m) / 2 + kl(q, m) / 2;
}

/** down(silu(gate x)·up x) of one expert for x [d_model] → [d_model]. */
export async function expertOutput(b: Backend, e: ExpertWeights, x: ArrayLike<number>): Promise<number[]> {
  const [g, u, dn] = [await b.read(e.gate.w), await b.read(e.up.w), await b.read(e.down.w)];
  const d = x.length, dFf = g.length / d;
  const h = Array.from({ length: dFf }, (_, i) => {
    const a = dot(g.subarray(i * d, (i + 1) * d), x);
    return (a / (1 + Math.exp(-a))) * dot(u.subarray(i * d, (i + 1) * d), x);
  });
  return Array.from({ length: d }, (_, o) => dot(dn.subarray(o * dFf, (o + 1) * dFf), h));
}

/** The router's softmax p [n_experts] at x [d_model]. */
export async function routerProbs(b: Backend, mw: MoeWeights, x: ArrayLike<number>): Promise<number[]> {
  const router = await b.read(mw.router), d = x.length, E = router.length / d;
  const logits = Array.from({ length: E }, (_, e) => dot(router.subarray(e * d, (e + 1) * d), x));
  const m = Math.max(...logits), z = logits.reduce((s, l) => s + Math.exp(l - m), 0);
  return logits.map((l) => Math.exp(l - m) / z);
}

/** The layer's output [d_model] at x when the experts `chosen` run, weighted by the router's own p at x (renormalised where `moe` says). */
export async function sparseLayerByHand(b: Backend, moe: MoeSpec, mw: MoeWeights, x: ArrayLike<number>, chosen: readonly number[]): Promise<Float64Array> {
  const prob = await routerProbs(b, mw, x);
  const tot = chosen.reduce((s, e) => s + prob[e], 0);
  const y = new Float64Array(x.length);
  for (const e of chosen) {
    const w = moe.normTopk ? prob[e] / tot : prob[e];
    (await expertOutput(b, mw.experts[e], x)).forEach((v, i) => { y[i] += w * v; });
  }
  if (mw.shared) {
    const g = dot(await b.read(mw.shared.gateW), x);
    (await expertOutput(b, mw.shared, x)).forEach((v, i) => { y[i] += v / (1 + Math.exp(-g)); });
  }
  return y;
}
