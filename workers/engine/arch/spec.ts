import type { Activation, Tensor } from '../backend/backend';

/**
 * Everything the shared transformer block needs to know about a model, derived from its HF
 * `config.json` by the architecture file. Names follow TransformerLens `HookedTransformerConfig`
 * (d_model, n_heads, d_head, d_mlp, n_ctx) in camelCase.
 */
export interface ModelSpec {
  /** HF `model_type` (llama, gpt2, ...). */
  modelType: string;
  nLayers: number;
  dModel: number;
  nHeads: number;
  /** Key/value heads (GQA; equals nHeads for multi-head attention). */
  nKvHeads: number;
  dHead: number;
  dMlp: number;
  dVocab: number;
  /** max_position_embeddings: the longest sequence the model accepts. */
  nCtx: number;
  norm: 'rms' | 'layer';
  normEps: number;
  /** 1 for Gemma's (1 + w) RMSNorm, else 0. */
  normOffset: number;
  act: Activation;
  /**
   * MLP is down(act(gate(x)) · up(x)) (SwiGLU / GeGLU) when true, down(act(up(x))) when false.
   * The block wires its MLP by this flag; the Transformer refuses weights whose blocks hold a gate
   * projection exactly where it is false (model/spec_checks.ts checkBlockWeights), as for
   * sandwichNorms and qkNorm.
   */
  gatedMlp: boolean;
  /** GPT-NeoX use_parallel_residual: x + attn(ln1(x)) + mlp(ln2(x)); no hook_resid_mid. */
  parallelResidual: boolean;
  /**
   * Gemma 2 post_attention_layernorm / post_feedforward_layernorm on each branch output
   * (BlockWeights.postAttnNorm, postMlpNorm; hook_attn_out / hook_mlp_out are after them).
   */
  sandwichNorms: boolean;
  /**
   * q_norm / k_norm before RoPE (BlockWeights.qNorm, kNorm): RMSNorm over groups of the norm
   * weight's width — d_head for Qwen3 / Gemma 3 (per head), the whole projection for OLMoE.
   */
  qkNorm: boolean;
  positional: 'rotary' | 'learned';
  /** Number of leading dims per head that rotate (head_dim · partial_rotary_factor). */
  rotaryDims: number;
  /** Rotary inverse frequencies, rotaryDims/2 entries (llama3 scaling already applied). */
  invFreq: Float32Array;
  /**
   * Per-layer inverse frequencies where layers differ (Gemma 3: `rope_local_base_freq` on
   * sliding-window layers, `rope_theta` + rope_scaling on global ones); absent = invFreq everywhere.
   */
  invFreqPerLayer?: Float32Array[];
  /** Factor applied to q·k. */
  attnScale: number;
  /** attn_logit_softcapping (0 = off). */
  attnSoftcap: number;
  /** final_logit_softcapping (0 = off). */
  finalSoftcap: number;
  /** Sliding window per layer (0 = full causal). */
  windows: number[];
  /** Multiplier on token embeddings (Gemma: sqrt(d_model) rounded to the model dtype). */
  embedScale: number;
  bosTokenId: number | null;
  eosTokenIds: number[];
  /** Mixture-of-experts MLPs (Mixtral, Qwen2-MoE, OLMoE); absent for dense models. */
  moe?: MoeSpec;
}

/**
 * A sparse MLP (model/moe.ts): router logits = W_router·x [n_experts]; p = softmax; the top-k
 * experts kept, their p renormalised to sum 1 when normTopk; out = Σ_k p_k·expert_k(x), each expert
 * a gated MLP down(act(gate x)·up x); plus, where dShared > 0, a shared gated MLP scaled by
 * sigmoid(W_sg·x) (Qwen2-MoE).
 */
export interface MoeSpec {
  nExperts: number;
  /** num_experts_per_tok. */
  topK: number;
  /** Renormalise the kept probabilities (Mixtral: always; Qwen2-MoE / OLMoE: norm_topk_prob). */
  normTopk: boolean;
  /** Each expert's intermediate width. */
  dExpert: number;
  /** The shared expert's intermediate width (0 = none). */
  dShared: number;
  /** Per layer: true where the MLP is sparse (BlockWeights.moe), false where it is the dense MLP (d_mlp). */
  sparse: boolean[];
}

export interface LinearWeights { w: Tensor; b?: Tensor }
export interface NormWeights { w: Tensor; b?: Tensor }

/**
 * One block's weights in canonical form: every linear in nn.Linear layout [out, in], fused
 * projections split. The optional fields are present exactly where the spec's flag says
 * (gate ⇔ gatedMlp, postAttnNorm / postMlpNorm ⇔ sandwichNorms, qNorm / kNorm ⇔ qkNorm).
 */
export interface BlockWeights {
  ln1: NormWeights;
  ln2: NormWeights;
  q: LinearWeights;
  k: LinearWeights;
  v: LinearWeights;
  o: LinearWeights;
  /** [d_head], shared by every head (qkNorm); [n_heads·d_head] for OLMoE's norm over the whole projection. */
  qNorm?: Tensor;
  /** [d_head] (qkNorm); [n_kv_heads·d_head] (OLMoE). */
  kNorm?: Tensor;
  /** [d_model] (sandwichNorms). */
  postAttnNorm?: NormWeights;
  /** [d_model] (sandwichNorms). */
  postMlpNorm?: NormWeights;
  /** [d_mlp, d_model] (gatedMlp: SwiGLU / GeGLU); absent in sparse layers. */
  gate?: LinearWeights;
  /** [d_mlp, d_model]; absent exactly in sparse layers (moe present). */
  up?: LinearWeights;
  /** [d_model, d_mlp]; absent exactly in sparse layers. */
  down?: LinearWeights;
  /** The sparse MLP of a mixture-of-experts layer (ModelSpec.moe.sparse[l]). */
  moe?: MoeWeights;
}

/** A gated MLP down(act(gate x)·up x): gate, up [d_ff, d_model], down [d_model, d_ff] (no biases). */
export interface ExpertWeights {
  gate: LinearWeights;
  up: LinearWeights;
  down: LinearWeights;
}

/** One sparse layer's weights (ModelSpec.moe). */
export interface MoeWeights {
  /** W_router [n_experts, d_model] (HF block_sparse_moe.gate / mlp.gate). */
  router: Tensor;
  /** n_experts gated MLPs [d_expert]. */
  experts: ExpertWeights[];
  /** Qwen2-MoE shared expert [d_shared] and its gate W_sg [1, d_model]. */
  shared?: ExpertWeights & { gateW: Tensor };
}

export interface ModelWeights {
  /** W_E [d_vocab, d_model]. */
  embed: Tensor;
  /** W_pos [n_ctx, d_model] for learned positions (GPT-2). */
  posEmbed?: Tensor;
  blocks: BlockWeights[];
  lnFinal: NormWeights;
  /** W_U in nn.Linear layout [d_vocab, d_model] (the embedding itself when tied). */
  unembed: Tensor;
  unembedBias?: Tensor;
}
