/**
 * The sparse (mixture-of-experts) MLP of one layer — Mixtral, Qwen2-MoE, OLMoE — composed from
 * Backend ops. HF reference: `MixtralSparseMoeBlock`, `Qwen2MoeSparseMoeBlock`, `OlmoeSparseMoeBlock`.
 *
 *   router_logits = W_router·x                      [pos, n_experts]  (mlp.hook_router_logits)
 *   p = softmax(router_logits) (float32); top-k of p → indices [pos, k]  (mlp.hook_expert_indices)
 *   weights = p at those indices, renormalised to sum 1 when normTopk  (mlp.hook_expert_weights)
 *   out = Σ_j weights_j · down_e(act(gate_e x)·up_e x), e = indices_j
 *       (+ sigmoid(W_sg·x)·shared(x), Qwen2-MoE)
 *
 * The routing is Backend.moeRoute (ops/moe_route.*). Where the backend's tensors live on the host
 * (CPU: Backend.readSync) the routing ([pos, k], small) is read and rows are grouped by expert, so
 * each expert's matrices run once, on the rows that chose it, and an expert no row chose is never
 * read (a decode step reads only its k experts). On WebGPU, whose reads are asynchronous while the
 * forward pass is not, the routing stays on the GPU and Backend.moeExperts does the same there
 * (ops/moe_experts.wgsl.ts: pairs sorted by expert on the device, each expert's kernels dispatched
 * indirectly with as many workgroups as rows chose it — none for an expert no row chose). Interventions act through the three
 * hooks: a replaced expert_indices (forcing experts) takes its weights from p at the new indices
 * (so forcing the router's own choice changes nothing); a replaced expert_weights is used as given.
 * An intervention at router_logits (a ban: −∞ at the banned experts) changes which experts are
 * chosen; their weights stay the router's own p (softmax of the logits before the intervention,
 * renormalised where the model does), so banning an expert that no row chose changes nothing, and
 * a row whose choice a ban changes takes the next experts at their own probabilities.
 * Each expert's weighted contribution fires as `blocks.{l}.mlp.experts.{e}.hook_out` [pos, d_model]
 * (rows that did not choose e are 0) on host-readable backends; WebGPU's fused kernel has no such
 * intermediate, so a capture or intervention there is refused (expertHooksRefused).
 */
import type { Backend, Tensor } from '../backend/backend';
import type { Activation } from '../backend/backend';
import type { ExpertWeights, MoeSpec, MoeWeights } from '../arch/spec';
import type { RunContext } from './run_context';

/**
 * @throws Error naming the hook when an expert id (float32, as the hook carries it) is not a whole
 *   number in [0, n_experts) — a forced expert that does not exist.
 */
function checkExpertIds(v: Float32Array, nExperts: number, hook: string): void {
  v.forEach((x, i) => {
    if (!(Number.isInteger(x) && x >= 0 && x < nExperts)) throw new Error(`${hook}: expert id ${x} at entry ${i} is not a whole number in [0, ${nExperts})`);
  });
}

/**
 * The layer's sparse MLP output [pos, d_model] for its input x (ln2's output, [pos, d_model]; not
 * released), firing `${h}mlp.hook_router_logits`, `hook_expert_indices` and `hook_expert_weights`.
 * @param h the block's hook prefix `blocks.{l}.`.
 * @throws Error (host-readable backends) when an intervention set an expert id that does not exist
 *   (on WebGPU such ids are rounded and clamped into range, as moeRoute takes forced ids; the
 *   intervention specs refuse them before any forward, steering/spec.ts).
 */
export function sparseMlp(b: Backend, moe: MoeSpec, w: MoeWeights, act: Activation, x: Tensor, h: string, ctx: RunContext): Tensor {
  const [n, d] = x.shape;
  const k = moe.topK, E = moe.nExperts;
  const logits = b.linear(x, w.router); // [pos, n_experts]: the router's own logits
  const fired = ctx.fire(`${h}mlp.hook_router_logits`, b.clone(logits)); // as intervened on: they choose
  const chosen = b.moeRoute(fired, k, moe.normTopk);
  b.release(chosen.weights); b.release(fired);
  const idxT = ctx.fire(`${h}mlp.hook_expert_indices`, chosen.indices); // [pos, k]
  const host = b.readSync?.bind(b);
  const idxHost = host ? host(idxT) : null;
  if (idxHost) checkExpertIds(idxHost, E, `${h}mlp.hook_expert_indices`);
  const weighed = b.moeRoute(logits, k, moe.normTopk, idxT); // the router's p at the chosen (possibly forced) experts
  b.release(weighed.indices); b.release(logits);
  const wT = ctx.fire(`${h}mlp.hook_expert_weights`, weighed.weights); // [pos, k]
  let out: Tensor | null = null;
  const expertHook = (e: number) => `${h}mlp.experts.${e}.hook_out`;
  const touched = Array.from({ length: E }, (_, e) => ctx.touches(expertHook(e)));
  if (b.moeExperts && touched.some((t) => t)) throw expertHooksRefused(expertHook(touched.indexOf(true)));
  if (b.moeExperts) out = b.moeExperts(x, idxT, wT, w.experts, act);
  else {
    if (!idxHost || !host) throw new Error(`${h}mlp: the backend neither reads the routing on the host (readSync) nor runs experts itself (moeExperts)`);
    const weights = host(wT);
    // rows grouped by expert: expert e runs once, on the rows (ascending) that chose it
    const rowsOf: { row: number; weight: number }[][] = Array.from({ length: E }, () => []);
    for (let row = 0; row < n; row++) for (let j = 0; j < k; j++) rowsOf[idxHost[row * k + j]].push({ row, weight: weights[row * k + j] });
    for (let e = 0; e < E; e++) {
      const sel = rowsOf[e];
      if (sel.length === 0) {
        if (touched[e]) out = accumulate(b, out, ctx.fire(expertHook(e), b.zeros([n, d]))); // no row chose e: its contribution is 0 (a patch may set it)
        continue;
      }
      const xe = gatherRows(b, x, sel.map((s) => s.row)); // [rows_e, d_model]
      const ye = gatedMlp(b, w.experts[e], act, xe); // [rows_e, d_model]
      if (xe !== x) b.release(xe);
      const s = new Float32Array(sel.length * d);
      sel.forEach((r, i) => s.fill(r.weight, i * d, (i + 1) * d));
      const scaled = scale(b, b.upload(s, [sel.length, d]), ye, 'identity');
      const full = scatterRows(b, scaled, sel.map((r) => r.row), n);
      if (full !== scaled) b.release(scaled);
      out = accumulate(b, out, touched[e] ? ctx.fire(expertHook(e), full) : full);
    }
  }
  b.release(idxT); b.release(wT);
  if (w.shared) {
    // Qwen2-MoE: sigmoid(W_sg·x)·shared(x)
    const ys = gatedMlp(b, w.shared, act, x);
    const z = b.linear(x, w.shared.gateW); // [pos, 1]
    const ones = b.upload(new Float32Array(d).fill(1), [d, 1]);
    out = accumulate(b, out, scale(b, broadcast(b, z, ones), ys, 'sigmoid'));
    b.release(ones);
  }
  return out ?? b.zeros([n, d]);
}

/**
 * The refusal of a per-expert hook on a backend that runs the experts in one fused kernel
 * (Backend.moeExperts, WebGPU): no expert's output exists there on its own.
 */
function expertHooksRefused(hook: string): Error {
  return new Error(`${hook}: per-expert outputs are computed only on the CPU backend (WebGPU runs all experts in one fused kernel, ops/moe_experts.wgsl.ts, with no per-expert intermediate); switch the backend to CPU to capture or patch them`);
}

/** col [n, 1] repeated across d columns: col·onesᵀ with ones [d, 1] (exact: one product each). Releases col. */
function broadcast(b: Backend, col: Tensor, ones: Tensor): Tensor {
  const out = b.linear(col, ones);
  b.release(col);
  return out;
}

/** f(s)·y elementwise (gatedAct), releasing both. */
function scale(b: Backend, s: Tensor, y: Tensor, f: 'identity' | 'sigmoid'): Tensor {
  const out = b.gatedAct(s, y, f);
  b.release(s); b.release(y);
  return out;
}

/** down(act(gate x)·up x) of x [rows, d_model] → [rows, d_model]. */
function gatedMlp(b: Backend, e: ExpertWeights, act: Activation, x: Tensor): Tensor {
  const g = b.linear(x, e.gate.w, e.gate.b);
  const u = b.linear(x, e.up.w, e.up.b);
  const post = b.gatedAct(g, u, act);
  b.release(g); b.release(u);
  const y = b.linear(post, e.down.w, e.down.b);
  b.release(post);
  return y;
}

/** a + b (both owned; `a` null = none yet), releasing the operands. */
function accumulate(b: Backend, a: Tensor | null, t: Tensor): Tensor {
  if (!a) return t;
  const s = b.add(a, t);
  b.release(a); b.release(t);
  return s;
}

/** Maximal runs of consecutive values in an ascending list: [start, length][]. */
function runs(rows: readonly number[]): [number, number][] {
  const out: [number, number][] = [];
  for (const r of rows) {
    const last = out[out.length - 1];
    if (last && last[0] + last[1] === r) last[1]++;
    else out.push([r, 1]);
  }
  return out;
}

/** Rows `rows` (ascending) of x [n, d] → [rows.length, d]; x itself when they are all of its rows. */
function gatherRows(b: Backend, x: Tensor, rows: readonly number[]): Tensor {
  if (rows.length === x.shape[0]) return x;
  const parts = runs(rows).map(([s, len]) => b.sliceRows(x, s, len));
  if (parts.length === 1) return parts[0];
  const out = b.concatRows(parts);
  for (const p of parts) b.release(p);
  return out;
}

/** y [m, d] placed at rows `rows` (ascending) of an [n, d] tensor of zeros; y itself when m = n. */
function scatterRows(b: Backend, y: Tensor, rows: readonly number[], n: number): Tensor {
  if (rows.length === n) return y;
  const d = y.shape[1];
  const parts: Tensor[] = [];
  let next = 0, at = 0;
  for (const [s, len] of runs(rows)) {
    if (s > next) parts.push(b.zeros([s - next, d]));
    parts.push(b.sliceRows(y, at, len));
    at += len; next = s + len;
  }
  if (next < n) parts.push(b.zeros([n - next, d]));
  const out = b.concatRows(parts);
  for (const p of parts) b.release(p);
  return out;
}
