/**
 * Which weights a block-quantised load (weightDtype 'q8_0' / 'q4_0') stores quantised: the linear
 * projections of the blocks (attention q/k/v/o, MLP gate/up/down and fused variants). The
 * embedding tables and the unembedding keep float32 (W_U's error would reach every logit
 * directly, and tied models share it with W_E, which is gathered by row); norms and biases are
 * 1-D and stay float32; mixture-of-experts routers stay float32 (each expert's projections are quantised). Same rule as llama.cpp's default for token_embd/output at small sizes.
 */
import type { QuantFormat } from '../backend/quant';

/** Embedding / unembedding tensors across the supported architectures (HF state_dict names). */
const FLOAT_TABLES = /(^|\.)(embed_tokens|wte|wpe|embed_in|embed_out|lm_head|word_embeddings|position_embeddings)\.weight$/;

/** Mixture-of-experts routers (Mixtral block_sparse_moe.gate, Qwen2-MoE / OLMoE mlp.gate, the shared-expert gate): kept float32 so the routing is the checkpoint's (as llama.cpp keeps ffn_gate_inp). */
const ROUTERS = /(^|\.)(block_sparse_moe\.gate|mlp\.gate|mlp\.shared_expert_gate)\.weight$/;

/** The block formats a load can store the linear weights in. */
export const QUANT_FORMATS: readonly QuantFormat[] = ['q8_0', 'q4_0'];

/** Whether `dtype` is a block-quantised storage. */
export function isQuantFormat(dtype: string): dtype is QuantFormat {
  return (QUANT_FORMATS as readonly string[]).includes(dtype);
}

/**
 * Whether a quantised load stores tensor `name` of `shape` quantised: every 2-D weight except the
 * embedding and unembedding tables.
 */
export function quantisedTensor(name: string | undefined, shape: readonly number[]): boolean {
  return shape.length === 2 && name !== undefined && !FLOAT_TABLES.test(name) && !ROUTERS.test(name);
}
