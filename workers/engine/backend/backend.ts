import type { QuantizedMatrix } from './quant';

/**
 * The op interface every backend implements (CPU reference in TypeScript, WebGPU in WGSL).
 *
 * Conventions shared by all ops:
 * - Tensors are float32, row-major (C order). A "row" is the last dimension.
 * - Ops never mutate their inputs, except the explicitly named in-place ones (`writeRows`).
 * - Ops are recorded synchronously and return a new tensor handle; only `read` is async.
 *   The caller owns every returned tensor and calls `release` when done with it.
 * - Linear weights use nn.Linear layout [out, in]; architectures convert other layouts
 *   (Conv1D [in, out], fused projections) at load time.
 */
export interface Tensor {
  /** Dimensions, outermost first. */
  readonly shape: readonly number[];
  /** Product of `shape`. */
  readonly size: number;
}

/**
 * Elementwise activations. 'sigmoid' and 'identity' are never a model's hidden_act: the sparse MLP
 * (model/moe.ts) uses them in gatedAct for σ(z)·y (Qwen2-MoE's shared-expert gate) and s·y (routing weights).
 */
export type Activation = 'silu' | 'gelu' | 'gelu_tanh' | 'relu' | 'sigmoid' | 'identity';

/**
 * One expert of a sparse MLP as Backend.moeExperts reads it: down(act(gate x + b)·(up x + b)) + b,
 * gate and up [d_expert, d_model], down [d_model, d_expert] (arch/spec.ts ExpertWeights).
 */
export interface ExpertMlp {
  gate: { w: Tensor; b?: Tensor };
  up: { w: Tensor; b?: Tensor };
  down: { w: Tensor; b?: Tensor };
}

/** Parameters of one causal attention call (see `Backend.attention`). */
export interface AttentionParams {
  /** Number of new query positions n. */
  n: number;
  /** Number of positions already in the KV cache before this call (keys 0..past+n-1 are read). */
  past: number;
  nHeads: number;
  nKvHeads: number;
  headDim: number;
  /** Multiplier applied to q·k (usually headDim^-0.5; Gemma 2: query_pre_attn_scalar^-0.5). */
  scale: number;
  /** Gemma 2 attn_logit_softcapping: s ← cap·tanh(s/cap) after scaling, before the mask. 0 = off. */
  softcap: number;
  /** Sliding window w: query i sees keys j with i − w < j ≤ i. 0 = full causal attention. */
  window: number;
  /** Also return the attention probabilities [nHeads, n, past+n] (blocks.l.attn.hook_pattern). */
  wantPattern: boolean;
  /** Also return the masked pre-softmax scores [nHeads, n, past+n] (masked entries −Infinity). */
  wantScores: boolean;
}

/** Parameters of one attention backward over a whole prompt (see `Backend.attentionBackward`). */
export interface AttentionBackwardParams {
  /** Positions T (queries and keys 0..T−1). */
  n: number;
  nHeads: number;
  nKvHeads: number;
  headDim: number;
  /** As AttentionParams.scale. */
  scale: number;
  /** As AttentionParams.softcap (0 = off). */
  softcap: number;
  /** As AttentionParams.window (0 = full causal attention). */
  window: number;
}

/** Input gradients of attention (Backend.attentionBackward). */
export interface AttentionGrads {
  /** ∂m/∂q [T, nHeads·headDim]. */
  dq: Tensor;
  /** ∂m/∂k, ∂m/∂v [T, nKvHeads·headDim] (summed over the query heads that read each KV head). */
  dk: Tensor;
  dv: Tensor;
}

export interface AttentionResult {
  /** [n, nHeads·headDim]: per-head weighted values, heads concatenated (blocks.l.attn.hook_z flattened). */
  z: Tensor;
  /** [nHeads, n, past+n] softmax probabilities; masked entries exactly 0. */
  pattern?: Tensor;
  /** [nHeads, n, past+n] scaled, soft-capped, masked scores; masked entries −Infinity. */
  scores?: Tensor;
}

/**
 * Row-wise steering op applied at a hook (DESIGN.md §2 Interventions). `rows` selects the rows
 * it touches (1 = apply); the others pass through unchanged. The vector has the row width
 * (d_model for residual hooks, n_heads·d_head for hook_z with zeros outside the chosen heads).
 */
export type RowOp =
  /** h += alpha·v */
  | { kind: 'add'; v: Float32Array; alpha: number }
  /** h' = (h + alpha·v)·‖h‖/‖h + alpha·v‖ */
  | { kind: 'add_norm_preserving'; v: Float32Array; alpha: number }
  /** rotate ĥ toward v̂ in the plane (h, v) by angle theta (radians), or by fraction t of the angle; keep ‖h‖ */
  | { kind: 'rotate'; v: Float32Array; theta?: number; t?: number }
  /** h ← h − (h·v̂)v̂ */
  | { kind: 'project_out'; v: Float32Array }
  /** h ← v (mean ablation when v is a mean activation; zero ablation when v = 0) */
  | { kind: 'set'; v: Float32Array }
  /** h ← replacement[row] (activation patching); replacement is [n, width] */
  | { kind: 'patch'; replacement: Float32Array };

/** Column groups a RowOp acts on independently (per-head steering at attn.hook_z). */
export interface RowGroups {
  /** Group width (d_head). */
  size: number;
  /** Selected group indices (heads). */
  indices: number[];
}

/**
 * Options of a fused linear (FusedOps.linear; WGSL in ops/linear_fused.wgsl.ts), all optional:
 * y = epilogue(prologue(x)·wᵀ + bias).
 */
export interface LinearFusion {
  /** Prologue: RMSNorm of each row of x, x/√(mean(x²) + eps)·(w + offset), w [in]. */
  norm?: { w: Tensor; eps: number; offset: number };
  /** Gated MLP: y = act(x̂·wᵀ + bias)·(x̂·upᵀ + up bias), w being the gate projection; up [out, in]. */
  gateUp?: { w: Tensor; bias?: Tensor; act: Activation };
  /** Epilogue: y += residual [n, out] (the residual stream). */
  residual?: Tensor;
}

/**
 * Inputs of FusedOps.qkv: the attention projections of x [n, d_model] with RoPE, k and v written
 * into the KV cache at rows pos0..pos0+n−1 (the block's hooks hook_q/k/v then never materialise).
 */
export interface QkvFusion {
  x: Tensor;
  q: { w: Tensor; b?: Tensor };
  k: { w: Tensor; b?: Tensor };
  v: { w: Tensor; b?: Tensor };
  /** RMSNorm prologue (ln1 folded), as LinearFusion.norm. */
  norm?: LinearFusion['norm'];
  /** Rotary embedding of q and k (rotate_half layout) at positions pos0..: as Backend.rope. */
  rope?: { rotaryDims: number; invFreq: Float32Array };
  nHeads: number;
  nKvHeads: number;
  headDim: number;
  /** [ctx, n_kv_heads·d_head] each. */
  kCache: Tensor;
  vCache: Tensor;
  pos0: number;
}

/**
 * Fused kernels a backend may offer for few-row (decode) calls, where dispatches rather than
 * arithmetic bound a block. The forward pass uses them only where the hooks they fuse over are
 * neither captured nor intervened on (model/fusion_plan.ts).
 */
export interface FusedOps {
  /** Largest row count n the fused kernels take. */
  readonly maxRows: number;
  /**
   * Whether folding an RMSNorm into the projections pays: on a GPU decode streams the weights and
   * the per-output sum of squares of x is free; on a CPU implementation of WebGPU it repeats that
   * sum for every output column and costs more than the dispatches it saves (bench/run-model.ts).
   */
  readonly foldsNorm: boolean;
  /**
   * One dispatch for y = epilogue(prologue(x)·wᵀ + bias): x [n, in], w [out, in] → [n, out].
   * @throws Error on mismatched shapes or n > maxRows.
   */
  linear(x: Tensor, w: Tensor, bias: Tensor | undefined, f: LinearFusion): Tensor;
  /**
   * One dispatch for q = rope(x̂·W_qᵀ + b_q) [n, n_heads·d_head], writing rope(x̂·W_kᵀ + b_k) and
   * x̂·W_vᵀ + b_v into the KV cache rows pos0.. (ops/qkv_rope.wgsl.ts).
   * @returns q, or null when the kernel does not take this case (nothing recorded; take the split ops).
   * @throws Error on mismatched shapes or cache rows out of range.
   */
  qkv(f: QkvFusion): Tensor | null;
}

export interface Backend {
  /** 'cpu' or 'webgpu'. */
  readonly kind: 'cpu' | 'webgpu';
  /** Human-readable description: the WebGPU adapter's vendor/architecture, or "CPU (TypeScript)". */
  readonly description: string;
  /** Fused decode kernels (WebGPU); absent where every op is its own call anyway (CPU). */
  readonly fused?: FusedOps;

  /** Copies host data into a new tensor. Throws if data.length ≠ product(shape). */
  upload(data: Float32Array, shape: readonly number[]): Tensor;
  /**
   * upload() for an array the caller hands over: the CPU backend keeps `data` itself as the tensor's
   * storage (no copy, no second allocation: a 1B model's 4.9 GB of weights are mapped once), WebGPU
   * copies it to the device as upload() does. The caller must not read or write `data` afterwards.
   * Throws if data.length ≠ product(shape).
   */
  adopt(data: Float32Array, shape: readonly number[]): Tensor;
  /**
   * Stores a block-quantised weight [out, in] (Q8_0/Q4_0, backend/quant.ts) in its packed form; only
   * linear() accepts the result (as its weight), dequantising inside the matmul; read() dequantises.
   */
  uploadQuant(q: QuantizedMatrix): Tensor;
  /** Allocates a zero-filled tensor. */
  zeros(shape: readonly number[]): Tensor;
  /** Reads the tensor back to the host. */
  read(t: Tensor): Promise<Float32Array>;
  /**
   * Reads a small tensor back to the host at once, mid-forward, where the backend's tensors live on
   * the host (CPU): the sparse MLP's routing (model/moe.ts) needs the router's top-k there. Absent on
   * WebGPU, whose reads are asynchronous.
   */
  readSync?(t: Tensor): Float32Array;
  /** Frees the tensor's memory; using it afterwards is an error. */
  release(t: Tensor): void;
  /** Waits for all recorded work to finish (no-op on CPU). */
  sync(): Promise<void>;
  /** Frees everything this backend allocated. */
  dispose(): void;
  /**
   * Frees the memory kept for reuse (WebGPU: the pooled buffers of released tensors), after the
   * recorded work is done; absent where released memory is already given back.
   */
  trimPool?(): Promise<void>;

  /** A copy of t with the same shape. */
  clone(t: Tensor): Tensor;
  /** Rows of `table` [V, D] at `ids`, times `scale` → [ids.length, D]. Throws on an id ∉ [0, V). */
  embed(table: Tensor, ids: Int32Array, scale: number): Tensor;
  /** Rows `start..start+n-1` of `table` [P, D] → [n, D] (learned position embeddings). */
  sliceRows(table: Tensor, start: number, n: number): Tensor;
  /** Stacks tensors with equal row width along the first axis → [Σ rows, D]. */
  concatRows(parts: readonly Tensor[]): Tensor;
  /** x [n, in] · wᵀ (w is [out, in]) + bias [out] → [n, out]. */
  linear(x: Tensor, w: Tensor, bias?: Tensor): Tensor;
  /** Columns [start, start+width) of x [n, C] → [n, width] (splits fused projections at run time). */
  sliceCols(x: Tensor, start: number, width: number): Tensor;
  /** a + b, same shape. */
  add(a: Tensor, b: Tensor): Tensor;
  /** a − b, same shape. */
  sub(a: Tensor, b: Tensor): Tensor;
  /**
   * RMSNorm over groups of `w.size` consecutive values: y = x / sqrt(mean(x²) + eps) · (w + offset).
   * offset is 1 for Gemma's (1 + w) norm, else 0. Per-head norms (Qwen3 q_norm) pass x as [n, H·d] and w [d].
   */
  rmsNorm(x: Tensor, w: Tensor, eps: number, offset: number): Tensor;
  /** LayerNorm per row: (x − mean)/sqrt(var + eps)·w + b (biased variance, as torch). */
  layerNorm(x: Tensor, w: Tensor, b: Tensor | undefined, eps: number): Tensor;
  /**
   * Rotary position embedding (rotate_half / GPT-NeoX layout) on x [n, H·headDim] → new tensor:
   * in each head, dims j and j + rotaryDims/2 (j < rotaryDims/2) rotate by angle (pos0 + row)·invFreq[j];
   * dims ≥ rotaryDims pass through. invFreq has rotaryDims/2 entries.
   */
  rope(x: Tensor, nHeads: number, headDim: number, rotaryDims: number, pos0: number, invFreq: Float32Array): Tensor;
  /** Writes x [n, W] into rows offset..offset+n-1 of cache [ctx, W] (in place). */
  writeRows(cache: Tensor, x: Tensor, offset: number): void;
  /**
   * Causal multi-head attention with grouped KV heads (query head h reads kv head h / (nHeads/nKvHeads)).
   * q [n, nHeads·headDim] at absolute positions past..past+n-1; kCache, vCache [ctx, nKvHeads·headDim]
   * already hold rows 0..past+n-1.
   */
  attention(q: Tensor, kCache: Tensor, vCache: Tensor, p: AttentionParams): AttentionResult;
  /** act(x), elementwise. gelu = exact erf GELU; gelu_tanh = tanh approximation (gelu_new). */
  act(x: Tensor, act: Activation): Tensor;
  /** act(gate) · up, elementwise (SwiGLU, GeGLU). */
  gatedAct(gate: Tensor, up: Tensor, act: Activation): Tensor;
  /** cap·tanh(x/cap), elementwise (Gemma 2 final_logit_softcapping). */
  softcap(x: Tensor, cap: number): Tensor;
  /** log_softmax over each row of x [n, V]. */
  logSoftmax(x: Tensor): Tensor;
  /** Columns `cols` of x [n, C] → [n, cols.length]. */
  gatherCols(x: Tensor, cols: Int32Array): Tensor;
  /** The k largest entries of each row of x [n, C]: values [n, k] (descending) and their column indices. */
  topk(x: Tensor, k: number): Promise<{ values: Float32Array; indices: Int32Array }>;
  /**
   * Mixture-of-experts routing of router logits [n, E] (ops/moe_route.cpu.ts): p = softmax of each
   * row (float32); indices [n, k] = the k most probable experts, descending (ties: lower index),
   * as float32 ids — or `forced` [n, k] when given (ids taken as they are, clamped into [0, E));
   * weights [n, k] = p at those indices, renormalised to sum 1 when normTopk.
   */
  moeRoute(logits: Tensor, k: number, normTopk: boolean, forced?: Tensor): { indices: Tensor; weights: Tensor };
  /**
   * The chosen experts of a sparse MLP, without reading the routing back (WebGPU,
   * ops/moe_experts.wgsl.ts): x [n, d], indices and weights [n, k] (moeRoute's) → y [n, d],
   * y[r] = Σ_j weights[r, j]·expert_{indices[r, j]}(x[r]); only the chosen experts' weights are read.
   * Absent where the routing is read on the host (readSync) and rows are grouped there (CPU, model/moe.ts).
   * @throws Error on shapes that disagree.
   */
  moeExperts?(x: Tensor, indices: Tensor, weights: Tensor, experts: readonly ExpertMlp[], act: Activation): Tensor;
  /**
   * Applies a steering op to the rows of x [n, W] where rows[r] = 1 → new tensor [n, W].
   * With `groups`, each row is split into W/groups.size column groups (heads at attn.hook_z:
   * size = d_head) and the op acts on each selected group on its own, with a vector of length size.
   */
  rowOp(x: Tensor, op: RowOp, rows: Uint8Array, groups?: RowGroups): Tensor;

  // ---- backward ops (model/backward.ts: the reverse pass over the shared block; float32 like the forward)

  /**
   * dy [n, out] · w [out, in] → dx [n, in]: the input gradient of linear(x, w, bias) (no weight
   * gradient is formed). w may be any weight linear() accepts (f16, quantised, split by rows).
   */
  linearBackward(dy: Tensor, w: Tensor): Tensor;
  /**
   * Σ_k dys[k] [n, out_k] · ws[k] [out_k, in] → dx [n, in]: the summed input gradients of linear
   * layers that read one input (q, k, v of ln1's output; gate and up of ln2's), as one product over
   * the weights stacked by rows, [dy_1 | … | dy_K] · [w_1; …; w_K] (the CPU keeps one transposed
   * copy of the stack; WebGPU reads the weights in one dispatch). Each w_k as in linearBackward.
   * @throws Error when the lists are empty or differ in length, a dy's width is not its weight's
   *   rows, or the weights differ in `in` or the dys in rows.
   */
  linearBackwardSum(dys: readonly Tensor[], ws: readonly Tensor[]): Tensor;
  /**
   * The input gradient of rmsNorm(x, w, eps, offset) given dy (x, dy [n, W], groups of w.size as in
   * rmsNorm): dx_i = r·w'_i·dy_i − x_i·r³/g·Σ_j dy_j·w'_j·x_j, r = 1/√(mean(x²) + eps), w' = w + offset.
   */
  rmsNormBackward(x: Tensor, w: Tensor, eps: number, offset: number, dy: Tensor): Tensor;
  /**
   * The input gradient of layerNorm(x, w, b, eps) given dy, per row of w.size (the bias does not enter):
   * dx = r·(ĝ − mean(ĝ) − x̂·mean(ĝ·x̂)), ĝ = dy·w, x̂ = (x − μ)·r, r = 1/√(σ² + eps).
   */
  layerNormBackward(x: Tensor, w: Tensor, eps: number, dy: Tensor): Tensor;
  /** dy·act'(x) elementwise: the input gradient of act(x, act). */
  actBackward(x: Tensor, dy: Tensor, act: Activation): Tensor;
  /** The input gradients of gatedAct(gate, up, act) given dy: dGate = dy·up·act'(gate), dUp = dy·act(gate). */
  gatedActBackward(gate: Tensor, up: Tensor, dy: Tensor, act: Activation): { dGate: Tensor; dUp: Tensor };
  /**
   * The input gradients of causal attention over a whole prompt (attention() with past = 0) from what
   * its forward returned: q [T, H·d] and k, v [T, KV·d] (after rotary), the pattern P [H, T, T] and,
   * with soft-capping, the capped scores S [H, T, T]; dz [T, H·d]. Over the keys j of query i's causal
   * (sliding) window: dP_ij = dz_i·v_j, dS_ij = P_ij·(dP_ij − Σ_k P_ik·dP_ik) (softmax) × (1 − (S_ij/cap)²)
   * with soft-capping, dq_i = scale·Σ_j dS_ij·k_j, dk_j = scale·Σ_i dS_ij·q_i, dv_j = Σ_i P_ij·dz_i.
   */
  attentionBackward(q: Tensor, k: Tensor, v: Tensor, pattern: Tensor, scores: Tensor | undefined, dz: Tensor, p: AttentionBackwardParams): AttentionGrads;

  /**
   * Sparse-autoencoder activation of each row of hidden_pre [n, C] → [n, C]: JumpReLU
   * y = pre·(pre > θ_j) with threshold [C] (zeros: ReLU), then, when k > 0, TopK (entries below
   * the row's k-th largest positive value zeroed). See ops/sae_act.cpu.ts.
   */
  saeActivation(pre: Tensor, threshold: Tensor, k: number): Tensor;
}

/** Product of the dimensions of a shape. */
export function shapeSize(shape: readonly number[]): number {
  let s = 1;
  for (const d of shape) s *= d;
  return s;
}

/**
 * The shape of Backend.linearBackwardSum(dys, ws): n rows, the shared input width nIn, and each
 * weight's rows out_k (= dys[k]'s width).
 * @throws Error when the lists are empty or differ in length, a dy's width is not its weight's rows,
 *   or the weights differ in `in` or the dys in rows.
 */
export function linearSumShape(dys: readonly Tensor[], ws: readonly Tensor[]): { n: number; nIn: number; outs: number[] } {
  if (ws.length === 0 || dys.length !== ws.length) throw new Error(`linearBackwardSum: ${dys.length} gradients for ${ws.length} weights`);
  const nIn = ws[0].shape[1], outs = ws.map((w) => w.shape[0]);
  const n = dys[0].size / Math.max(outs[0], 1);
  ws.forEach((w, k) => {
    const dy = dys[k], width = dy.shape[dy.shape.length - 1];
    if (w.shape[1] !== nIn) throw new Error(`linearBackwardSum: weight ${k} [${w.shape}] does not read the ${nIn} inputs of weight 0 [${ws[0].shape}]`);
    if (width !== outs[k]) throw new Error(`linearBackward: dy [${dy.shape}] has not the ${outs[k]} columns of weight [${w.shape}]`);
    if (dy.size !== n * outs[k]) throw new Error(`linearBackwardSum: dy ${k} [${dy.shape}] has not the ${n} rows of dy 0 [${dys[0].shape}]`);
  });
  return { n, nIn, outs };
}
