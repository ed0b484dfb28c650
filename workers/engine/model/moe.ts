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
 * The routing is read back to the host (it is small: [pos, k]) and rows are grouped by expert, so
 * each expert's matrices run once, on the rows that chose it, and an expert no row chose is never
 * read (a decode step reads only its k experts). Interventions act through the three hooks: a
 * replaced expert_indices (forcing experts) takes its weights from p at the new indices (so
 * forcing the router's own choice changes nothing); a replaced expert_weights is used as given.
 */
import type { Activation, Backend, Tensor } from '../backend/backend';
import type { ExpertWeights, MoeSpec, MoeWeights } from '../arch/spec';
import type { RunContext } from './run_context';

/** The routing of one sparse layer for the call's rows, on the host. */
export interface Routing {
  /** Softmax of the router logits [n, n_experts] (float32, as HF computes it). */
  probs: Float32Array;
  /** Chosen experts [n, k], descending probability (ties: the lower expert index first, as torch.topk on CPU). */
  indices: Int32Array;
  /** Their weights [n, k]: p, renormalised when normTopk. */
  weights: Float32Array;
}

/** Row-wise softmax of logits [n, e] in float32 (max-subtracted); a row of all −∞ gives NaN, as torch. */
export function routerSoftmax(logits: Float32Array, nExperts: number): Float32Array {
  const n = logits.length / nExperts;
  const p = new Float32Array(logits.length);
  for (let r = 0; r < n; r++) {
    const o = r * nExperts;
    let m = -Infinity;
    for (let e = 0; e < nExperts; e++) m = Math.max(m, logits[o + e]);
    let sum = 0;
    for (let e = 0; e < nExperts; e++) { p[o + e] = Math.exp(logits[o + e] - m); sum += p[o + e]; }
    for (let e = 0; e < nExperts; e++) p[o + e] = p[o + e] / sum;
  }
  return p;
}

/** The weights of experts `indices` [n, k] under probabilities p [n, n_experts]: p, renormalised when normTopk. */
export function routeWeights(probs: Float32Array, indices: Int32Array, moe: MoeSpec): Float32Array {
  const k = moe.topK, n = indices.length / k;
  const w = new Float32Array(n * k);
  for (let r = 0; r < n; r++) {
    let sum = 0;
    for (let j = 0; j < k; j++) { w[r * k + j] = probs[r * moe.nExperts + indices[r * k + j]]; sum += w[r * k + j]; }
    if (moe.normTopk) for (let j = 0; j < k; j++) w[r * k + j] = w[r * k + j] / Math.fround(sum);
  }
  return w;
}

/** Top-k routing of router logits [n, n_experts] (see Routing). */
export function route(logits: Float32Array, moe: MoeSpec): Routing {
  const E = moe.nExperts, k = moe.topK, n = logits.length / E;
  const probs = routerSoftmax(logits, E);
  const indices = new Int32Array(n * k);
  for (let r = 0; r < n; r++) {
    const order = Array.from({ length: E }, (_, e) => e).sort((a, b) => probs[r * E + b] - probs[r * E + a] || a - b);
    for (let j = 0; j < k; j++) indices[r * k + j] = order[j];
  }
  return { probs, indices, weights: routeWeights(probs, indices, moe) };
}

/**
 * Expert indices as the hook carries them (float32 ids) back to integers.
 * @throws Error naming the hook when an id is not a whole number in [0, n_experts).
 */
function expertIds(v: Float32Array, nExperts: number, hook: string): Int32Array {
  const out = new Int32Array(v.length);
  v.forEach((x, i) => {
    if (!(Number.isInteger(x) && x >= 0 && x < nExperts)) throw new Error(`${hook}: expert id ${x} at entry ${i} is not a whole number in [0, ${nExperts})`);
    out[i] = x;
  });
  return out;
}

/**
 * The layer's sparse MLP output [pos, d_model] for its input x (ln2's output, [pos, d_model]; not
 * released), firing `${h}mlp.hook_router_logits`, `hook_expert_indices` and `hook_expert_weights`.
 * @param h the block's hook prefix `blocks.{l}.`.
 * @throws Error on a backend without readSync (WebGPU: the routing needs the host mid-forward).
 */
export function sparseMlp(b: Backend, moe: MoeSpec, w: MoeWeights, act: Activation, x: Tensor, h: string, ctx: RunContext): Tensor {
  if (!b.readSync) throw new Error(`mixture-of-experts layers need the router's choice on the host mid-forward; the ${b.kind} backend reads asynchronously (run MoE models on the CPU backend)`);
  const readSync = b.readSync.bind(b);
  const n = x.shape[0], k = moe.topK, E = moe.nExperts;
  const logitsT = ctx.fire(`${h}mlp.hook_router_logits`, b.linear(x, w.router)); // [pos, n_experts]
  const r = route(readSync(logitsT), moe);
  b.release(logitsT);
  const idxT = ctx.fire(`${h}mlp.hook_expert_indices`, b.upload(Float32Array.from(r.indices), [n, k])); // [pos, k]
  const idxHost = readSync(idxT);
  b.release(idxT);
  const indices = expertIds(idxHost, E, `${h}mlp.hook_expert_indices`);
  const changed = indices.some((e, i) => e !== r.indices[i]);
  const weights0 = changed ? routeWeights(r.probs, indices, moe) : r.weights;
  const wT = ctx.fire(`${h}mlp.hook_expert_weights`, b.upload(weights0, [n, k])); // [pos, k]
  const weights = readSync(wT);
  b.release(wT);

  // rows grouped by expert: expert e runs once, on the rows (ascending) that chose it
  const rowsOf: { row: number; weight: number }[][] = Array.from({ length: E }, () => []);
  for (let row = 0; row < n; row++) for (let j = 0; j < k; j++) rowsOf[indices[row * k + j]].push({ row, weight: weights[row * k + j] });
  let out: Tensor | null = null;
  for (let e = 0; e < E; e++) {
    const sel = rowsOf[e];
    if (sel.length === 0) continue;
    const xe = gatherRows(b, x, sel.map((s) => s.row)); // [rows_e, d_model]
    const ye = gatedMlp(b, w.experts[e], act, xe); // [rows_e, d_model]
    if (xe !== x) b.release(xe);
    const scaled = scaleRows(b, ye, sel.map((s) => s.weight));
    b.release(ye);
    const full = scatterRows(b, scaled, sel.map((s) => s.row), n);
    if (full !== scaled) b.release(scaled);
    out = accumulate(b, out, full);
  }
  if (w.shared) {
    const ys = gatedMlp(b, w.shared, act, x);
    const g = b.linear(x, w.shared.gateW); // [pos, 1]
    const gate = Array.from(readSync(g), (z) => 1 / (1 + Math.exp(-z)));
    b.release(g);
    out = accumulate(b, out, scaleRows(b, ys, gate));
    b.release(ys);
  }
  return out ?? b.zeros([n, x.shape[1]]);
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

/**
 * Row r of y [m, d] times s[r] → new tensor: relu(S)·y with S the scales broadcast over the row
 * (exact for s ≥ 0: relu(s)·y = s·y); a negative scale (a set routing weight) is
 * relu(S)·y − relu(−S)·y.
 */
function scaleRows(b: Backend, y: Tensor, s: readonly number[]): Tensor {
  const [m, d] = y.shape;
  const broadcast = (sign: number): Tensor => {
    const a = new Float32Array(m * d);
    for (let r = 0; r < m; r++) a.fill(sign * s[r], r * d, (r + 1) * d);
    return b.upload(a, [m, d]);
  };
  const pos = broadcast(1);
  const plus = b.gatedAct(pos, y, 'relu');
  b.release(pos);
  if (s.every((v) => v >= 0)) return plus;
  const neg = broadcast(-1);
  const minus = b.gatedAct(neg, y, 'relu');
  b.release(neg);
  const out = b.sub(plus, minus);
  b.release(plus); b.release(minus);
  return out;
}
