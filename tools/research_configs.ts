/**
 * The config.json values of the four research-size models (the fields the engine reads, copied from
 * each model's published config.json: HuggingFaceTB/SmolLM2-135M, Qwen/Qwen3-0.6B,
 * meta-llama/Llama-3.2-1B, google/gemma-3-1b-pt) and the tensor list of each checkpoint in HF
 * names and shapes, for test- and bench-time checkpoints (tools/mock-hub.ts writeSparseModel: a
 * sparse file of the real size, headers only).
 */
import type { SafetensorsDtype } from '../workers/engine/io/safetensors';
import { llamaTensors, type TensorHeader } from './mock-hub';

/** The research models by short name, each its config.json. */
export const RESEARCH_CONFIGS = {
  'smollm2-135m': {
    architectures: ['LlamaForCausalLM'], model_type: 'llama', hidden_size: 576, intermediate_size: 1536, num_hidden_layers: 30,
    num_attention_heads: 9, num_key_value_heads: 3, head_dim: 64, vocab_size: 49152, max_position_embeddings: 8192, rms_norm_eps: 1e-5,
    rope_theta: 100000, tie_word_embeddings: true, hidden_act: 'silu', bos_token_id: 0, eos_token_id: 0, torch_dtype: 'bfloat16',
  },
  'qwen3-0.6b': {
    architectures: ['Qwen3ForCausalLM'], model_type: 'qwen3', hidden_size: 1024, intermediate_size: 3072, num_hidden_layers: 28,
    num_attention_heads: 16, num_key_value_heads: 8, head_dim: 128, vocab_size: 151936, max_position_embeddings: 40960, rms_norm_eps: 1e-6,
    rope_theta: 1000000, tie_word_embeddings: true, hidden_act: 'silu', attention_bias: false, bos_token_id: 151643, eos_token_id: 151645, torch_dtype: 'bfloat16',
  },
  'llama-3.2-1b': {
    architectures: ['LlamaForCausalLM'], model_type: 'llama', hidden_size: 2048, intermediate_size: 8192, num_hidden_layers: 16,
    num_attention_heads: 32, num_key_value_heads: 8, head_dim: 64, vocab_size: 128256, max_position_embeddings: 131072, rms_norm_eps: 1e-5,
    rope_theta: 500000, rope_scaling: { rope_type: 'llama3', factor: 32, low_freq_factor: 1, high_freq_factor: 4, original_max_position_embeddings: 8192 },
    tie_word_embeddings: true, hidden_act: 'silu', bos_token_id: 128000, eos_token_id: 128001, torch_dtype: 'bfloat16',
  },
  'gemma-3-1b': {
    architectures: ['Gemma3ForCausalLM'], model_type: 'gemma3_text', hidden_size: 1152, intermediate_size: 6912, num_hidden_layers: 26,
    num_attention_heads: 4, num_key_value_heads: 1, head_dim: 256, vocab_size: 262144, max_position_embeddings: 32768, rms_norm_eps: 1e-6,
    rope_theta: 1000000, rope_local_base_freq: 10000, sliding_window: 512, sliding_window_pattern: 6, query_pre_attn_scalar: 256,
    final_logit_softcapping: null, attn_logit_softcapping: null, hidden_activation: 'gelu_pytorch_tanh', tie_word_embeddings: true,
    bos_token_id: 2, eos_token_id: 1, pad_token_id: 0, torch_dtype: 'bfloat16',
  },
} as const;

export type ResearchModel = keyof typeof RESEARCH_CONFIGS;

/**
 * Every tensor of the model's HF checkpoint, all in `dtype`: the Llama set (embed_tokens, per layer
 * two norms, q/k/v/o, gate/up/down; final norm; tied, so no lm_head), plus Qwen3's and Gemma 3's
 * per-head q_norm / k_norm [head_dim] and Gemma 3's pre/post-feedforward norms [d_model].
 */
export function researchTensors(model: ResearchModel, dtype: SafetensorsDtype): TensorHeader[] {
  const c = RESEARCH_CONFIGS[model];
  const t = llamaTensors(c as unknown as Record<string, unknown>, dtype);
  if (c.model_type === 'llama') return t;
  for (let l = 0; l < c.num_hidden_layers; l++) {
    const p = `model.layers.${l}`;
    t.push({ name: `${p}.self_attn.q_norm.weight`, shape: [c.head_dim], dtype }, { name: `${p}.self_attn.k_norm.weight`, shape: [c.head_dim], dtype });
    if (c.model_type === 'gemma3_text') {
      t.push({ name: `${p}.pre_feedforward_layernorm.weight`, shape: [c.hidden_size], dtype }, { name: `${p}.post_feedforward_layernorm.weight`, shape: [c.hidden_size], dtype });
    }
  }
  return t;
}
