/**
 * The llama.cpp architectures a GGUF file is imported as, and what each one's tensors and metadata
 * stand for in Hugging Face terms: the HF state_dict names of its tensors, what
 * convert_hf_to_gguf.py did to them, and the config.json its metadata amounts to. Learnt from
 * ggml-org/llama.cpp: gguf-py/gguf/constants.py (MODEL_TENSORS, TENSOR_NAMES, the `{arch}.*` keys),
 * gguf-py/gguf/tensor_mapping.py (HF names), convert_hf_to_gguf.py (LlamaModel, Qwen3Model,
 * Gemma2Model, Gemma3Model) and src/llama-model.cpp (the defaults the loader assumes).
 *
 * - "llama" (Llama 2/3, Mistral, SmolLM, TinyLlama; Mixtral with `llama.expert_count`): attn_q /
 *   attn_k rows permuted for GGML's interleaved RoPE (LlamaModel.permute). Llama 3's rope_scaling
 *   "llama3" is not metadata: the converter writes a `rope_freqs.weight` tensor [head_dim / 2] of
 *   per-frequency divisors (generate_extra_tensors), which becomes rope_scaling "freq_factors".
 *   "linear" is `llama.rope.scaling.type` + `.factor`.
 * - "qwen3": the Llama names plus `attn_q_norm` / `attn_k_norm` [head_dim]; NEOX RoPE, so q/k rows
 *   stay in HF order.
 * - "gemma2" / "gemma3": `post_attention_norm` (HF post_attention_layernorm, after attention),
 *   `ffn_norm` (pre_feedforward_layernorm), `post_ffw_norm` (post_feedforward_layernorm); Gemma 3
 *   adds `attn_q_norm` / `attn_k_norm`. The converter adds 1 to every weight whose HF name ends in
 *   "norm.weight" (the file holds the (1 + w) the RMSNorm multiplies by); the import subtracts it
 *   again, so the weights are HF's. The metadata has no query_pre_attn_scalar: llama-model.cpp
 *   scales by head_dim^−½, except for the 27B models (Gemma 2: 46 layers, Gemma 3: 62) where it is
 *   (hidden_size / heads)^−½; the import sets query_pre_attn_scalar so. Gemma 3's local layers are
 *   every layer but each sixth (llama.cpp's set_swa_pattern(6)) with RoPE base 10000 unless
 *   `gemma3.rope.freq_base_swa` says otherwise; its final soft-cap is absent unless
 *   `gemma3.final_logit_softcapping` is set. Gemma 2's caps default to llama.cpp's 50 / 30 and its
 *   RoPE base to 10000 (the converter writes none). The √hidden_size embedding scale is the
 *   architecture's own (arch/gemma2.ts); no torch_dtype is known, so it stays float32, as llama.cpp
 *   and transformers' own GGUF loading (float32) compute it.
 */
import type { HFConfig } from '../arch/types';

/** What the import reads of a file's metadata (io/gguf.ts implements it over the parsed header). */
export interface GgufMeta {
  /** The value of `key`, or undefined. */
  value(key: string): unknown;
  /**
   * A numeric value, or `fallback` when absent, checked against the bounds of the config key it
   * becomes. @throws GgufError naming the key when absent without a fallback, or not a number.
   */
  num(key: string, fallback?: number): number;
  /** @throws GgufError: `key` holds something this import cannot represent, and why. */
  refuse(key: string, why: string): never;
}

/** Facts about the file's tensors the config needs. */
export interface GgufTensorFacts {
  /** Rows of token_embd.weight (the vocabulary). */
  vocab: number;
  /** Whether the file has `output.weight` (an untied head). */
  hasOutput: boolean;
  /** `rope_freqs.weight` [head_dim / 2] as float32, or null. */
  ropeFreqs: Float32Array | null;
}

/** One llama.cpp architecture as the import reads it. */
export interface GgufFamily {
  /** Block tensor names (after `blk.{l}.`) → HF names (after `model.layers.{l}.`). */
  block: Readonly<Record<string, string>>;
  /** Whether convert_hf_to_gguf.py permuted attn_q / attn_k rows (LlamaModel.permute). */
  permutesQk: boolean;
  /** What the converter added to every weight whose HF name ends in "norm.weight" (Gemma: 1). */
  normShift: number;
  /** The file may hold `rope_freqs.weight` (Llama 3 RoPE scaling). */
  ropeFreqs: boolean;
  /** The HF config.json the metadata stands for. @throws GgufError naming an unsupported key. */
  config(m: GgufMeta, t: GgufTensorFacts): HFConfig;
}

/** llama.cpp's top-level tensor names → HF names (shared by every family here). */
export const TOP_NAMES: Readonly<Record<string, string>> = {
  'token_embd.weight': 'model.embed_tokens.weight',
  'output_norm.weight': 'model.norm.weight',
  'output.weight': 'lm_head.weight',
};

const LLAMA_BLOCK: Record<string, string> = {
  'attn_norm.weight': 'input_layernorm.weight',
  'attn_q.weight': 'self_attn.q_proj.weight',
  'attn_k.weight': 'self_attn.k_proj.weight',
  'attn_v.weight': 'self_attn.v_proj.weight',
  'attn_output.weight': 'self_attn.o_proj.weight',
  'ffn_norm.weight': 'post_attention_layernorm.weight',
  'ffn_gate.weight': 'mlp.gate_proj.weight',
  'ffn_up.weight': 'mlp.up_proj.weight',
  'ffn_down.weight': 'mlp.down_proj.weight',
};

const QK_NORMS: Record<string, string> = { 'attn_q_norm.weight': 'self_attn.q_norm.weight', 'attn_k_norm.weight': 'self_attn.k_norm.weight' };

const GEMMA2_BLOCK: Record<string, string> = {
  ...LLAMA_BLOCK,
  'post_attention_norm.weight': 'post_attention_layernorm.weight',
  'ffn_norm.weight': 'pre_feedforward_layernorm.weight',
  'post_ffw_norm.weight': 'post_feedforward_layernorm.weight',
};

/** The config keys every family here shares, read under the `{arch}.` prefix. */
function common(a: string, m: GgufMeta, t: GgufTensorFacts): HFConfig {
  const nHeads = m.num(`${a}.attention.head_count`);
  const dModel = m.num(`${a}.embedding_length`);
  if (m.value(`${a}.attention.key_length`) === undefined && dModel % nHeads !== 0) m.refuse(`${a}.embedding_length`, `${dModel} is not divisible by "${a}.attention.head_count" ${nHeads} (and there is no "${a}.attention.key_length")`);
  const dHead = m.num(`${a}.attention.key_length`, dModel / nHeads);
  const dValue = m.value(`${a}.attention.value_length`);
  if (dValue !== undefined && m.num(`${a}.attention.value_length`) !== dHead) m.refuse(`${a}.attention.value_length`, `is ${String(dValue)}, not the key length ${dHead}: value heads of another width are not supported`);
  const rotary = m.value(`${a}.rope.dimension_count`);
  if (rotary !== undefined && m.num(`${a}.rope.dimension_count`) !== dHead) m.refuse(`${a}.rope.dimension_count`, `is ${String(rotary)}, not the head width ${dHead}: partial rotary embeddings are not supported in GGUF imports`);
  const id = (k: string) => (m.value(k) === undefined ? null : m.num(k));
  return {
    hidden_size: dModel,
    num_hidden_layers: m.num(`${a}.block_count`),
    intermediate_size: m.num(`${a}.feed_forward_length`),
    num_attention_heads: nHeads,
    num_key_value_heads: m.num(`${a}.attention.head_count_kv`, nHeads),
    head_dim: dHead,
    vocab_size: t.vocab,
    max_position_embeddings: m.num(`${a}.context_length`),
    rms_norm_eps: m.num(`${a}.attention.layer_norm_rms_epsilon`),
    tie_word_embeddings: !t.hasOutput,
    bos_token_id: id('tokenizer.ggml.bos_token_id'),
    eos_token_id: id('tokenizer.ggml.eos_token_id'),
    rope_scaling: linearScaling(a, m),
  };
}

/** `{arch}.rope.scaling.type`: absent or "none" → null, "linear" → HF's linear rope_scaling; else refused. */
function linearScaling(a: string, m: GgufMeta): HFConfig | null {
  const type = m.value(`${a}.rope.scaling.type`);
  if (type === undefined || type === 'none') return null;
  if (type === 'linear') return { rope_type: 'linear', factor: m.num(`${a}.rope.scaling.factor`) };
  return m.refuse(`${a}.rope.scaling.type`, `is "${String(type)}": only "none" and "linear" RoPE scaling (and Llama 3's rope_freqs.weight) are supported in GGUF imports`);
}

/** query_pre_attn_scalar as llama-model.cpp derives it for Gemma 2 / 3 (see the module comment). */
function gemmaQueryScalar(c: HFConfig, layers27b: number): number {
  return c.num_hidden_layers === layers27b ? (c.hidden_size as number) / (c.num_attention_heads as number) : (c.head_dim as number);
}

const llama: GgufFamily = {
  block: { ...LLAMA_BLOCK, 'ffn_gate_inp.weight': 'block_sparse_moe.gate.weight' },
  permutesQk: true,
  normShift: 0,
  ropeFreqs: true,
  config(m, t) {
    const c = common('llama', m, t);
    if (t.ropeFreqs) {
      if (c.rope_scaling) m.refuse('llama.rope.scaling.type', 'is "linear" beside a rope_freqs.weight tensor: one RoPE scaling, not both');
      c.rope_scaling = { rope_type: 'freq_factors', freq_factors: Array.from(t.ropeFreqs) };
    }
    const nExperts = m.num('llama.expert_count', 0);
    const experts: HFConfig = nExperts > 0 ? { num_local_experts: nExperts, num_experts_per_tok: m.num('llama.expert_used_count'), sliding_window: null } : {};
    return { model_type: nExperts > 0 ? 'mixtral' : 'llama', ...experts, ...c, rope_theta: m.num('llama.rope.freq_base', 10000), hidden_act: 'silu' };
  },
};

const qwen3: GgufFamily = {
  block: { ...LLAMA_BLOCK, ...QK_NORMS },
  permutesQk: false,
  normShift: 0,
  ropeFreqs: false,
  config(m, t) {
    return { model_type: 'qwen3', ...common('qwen3', m, t), rope_theta: m.num('qwen3.rope.freq_base', 10000), hidden_act: 'silu', attention_bias: false };
  },
};

const gemma2: GgufFamily = {
  block: GEMMA2_BLOCK,
  permutesQk: false,
  normShift: 1,
  ropeFreqs: false,
  config(m, t) {
    const c: HFConfig = { model_type: 'gemma2', ...common('gemma2', m, t), rope_theta: m.num('gemma2.rope.freq_base', 10000), hidden_activation: 'gelu_pytorch_tanh' };
    return {
      ...c,
      query_pre_attn_scalar: gemmaQueryScalar(c, 46),
      attn_logit_softcapping: m.num('gemma2.attn_logit_softcapping', 50),
      final_logit_softcapping: m.num('gemma2.final_logit_softcapping', 30),
      sliding_window: m.num('gemma2.attention.sliding_window'),
    };
  },
};

const gemma3: GgufFamily = {
  block: { ...GEMMA2_BLOCK, ...QK_NORMS },
  permutesQk: false,
  normShift: 1,
  ropeFreqs: false,
  config(m, t) {
    const c: HFConfig = { model_type: 'gemma3_text', ...common('gemma3', m, t), rope_theta: m.num('gemma3.rope.freq_base', 10000), hidden_activation: 'gelu_pytorch_tanh' };
    if (m.value('gemma3.attn_logit_softcapping') !== undefined) m.refuse('gemma3.attn_logit_softcapping', 'is set, but Gemma 3 has no attention soft-capping (llama.cpp ignores it; convert_hf_to_gguf.py asserts it is absent)');
    const rawWindow = m.value('gemma3.attention.sliding_window');
    const window = rawWindow === undefined || Number(rawWindow) === 0 ? 0 : m.num('gemma3.attention.sliding_window');
    const pattern = m.value('gemma3.attention.sliding_window_pattern');
    let layers: HFConfig = { sliding_window_pattern: 6 };
    if (Array.isArray(pattern)) {
      if (pattern.length !== c.num_hidden_layers || !pattern.every((x) => typeof x === 'boolean')) m.refuse('gemma3.attention.sliding_window_pattern', `holds ${pattern.length} entries; expected one true/false per layer (${String(c.num_hidden_layers)})`);
      layers = { layer_types: pattern.map((s) => (s ? 'sliding_attention' : 'full_attention')) };
    } else if (pattern !== undefined) layers = { sliding_window_pattern: m.num('gemma3.attention.sliding_window_pattern') };
    // no window: every layer global (llama.cpp: LLAMA_SWA_TYPE_NONE)
    if (window === 0) layers = { layer_types: new Array<string>(c.num_hidden_layers as number).fill('full_attention') };
    const cap = m.value('gemma3.final_logit_softcapping');
    return {
      ...c,
      ...layers,
      sliding_window: window || null,
      rope_local_base_freq: m.num('gemma3.rope.freq_base_swa', 10000),
      query_pre_attn_scalar: gemmaQueryScalar(c, 62),
      attn_logit_softcapping: null,
      final_logit_softcapping: cap === undefined ? null : m.num('gemma3.final_logit_softcapping'),
    };
  },
};

/** The families by `general.architecture`. */
export const GGUF_FAMILIES: Readonly<Record<string, GgufFamily>> = { llama, qwen3, gemma2, gemma3 };

/** The `general.architecture` values imported, quoted, for messages. */
export const GGUF_ARCHITECTURES = Object.keys(GGUF_FAMILIES).map((a) => `"${a}"`).join(', ');

/**
 * The metadata key each derived config.json key comes from, for a file of architecture `arch`:
 * errors about the config of a GGUF file name these (the file has no config.json).
 */
export function ggufConfigKeys(arch: string): Readonly<Record<string, string>> {
  const a = arch;
  return {
    hidden_size: `${a}.embedding_length`,
    num_hidden_layers: `${a}.block_count`,
    intermediate_size: `${a}.feed_forward_length`,
    num_attention_heads: `${a}.attention.head_count`,
    num_key_value_heads: `${a}.attention.head_count_kv`,
    head_dim: `${a}.attention.key_length`,
    max_position_embeddings: `${a}.context_length`,
    rms_norm_eps: `${a}.attention.layer_norm_rms_epsilon`,
    rope_theta: `${a}.rope.freq_base`,
    rope_local_base_freq: `${a}.rope.freq_base_swa`,
    sliding_window: `${a}.attention.sliding_window`,
    sliding_window_pattern: `${a}.attention.sliding_window_pattern`,
    attn_logit_softcapping: `${a}.attn_logit_softcapping`,
    final_logit_softcapping: `${a}.final_logit_softcapping`,
    bos_token_id: 'tokenizer.ggml.bos_token_id',
    eos_token_id: 'tokenizer.ggml.eos_token_id',
    vocab_size: 'token_embd.weight rows',
    num_local_experts: `${a}.expert_count`,
    num_experts_per_tok: `${a}.expert_used_count`,
  };
}
