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
  /** MLP is down(act(gate(x)) · up(x)) when true, down(act(up(x))) when false. */
  gatedMlp: boolean;
  /** GPT-NeoX use_parallel_residual: x + attn(ln1(x)) + mlp(ln2(x)); no hook_resid_mid. */
  parallelResidual: boolean;
  /** Gemma 2 post_attention_layernorm / post_feedforward_layernorm on each branch output. */
  sandwichNorms: boolean;
  /** Qwen3 q_norm / k_norm: per-head RMSNorm before RoPE. */
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
}

export interface LinearWeights { w: Tensor; b?: Tensor }
export interface NormWeights { w: Tensor; b?: Tensor }

/** One block's weights in canonical form: every linear in nn.Linear layout [out, in], fused projections split. */
export interface BlockWeights {
  ln1: NormWeights;
  ln2: NormWeights;
  q: LinearWeights;
  k: LinearWeights;
  v: LinearWeights;
  o: LinearWeights;
  qNorm?: Tensor;
  kNorm?: Tensor;
  postAttnNorm?: NormWeights;
  postMlpNorm?: NormWeights;
  /** Present for gated MLPs (SwiGLU / GeGLU). */
  gate?: LinearWeights;
  up: LinearWeights;
  down: LinearWeights;
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
