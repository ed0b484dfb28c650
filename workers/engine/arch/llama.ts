import type { Architecture, HFConfig, WeightSource, Upload } from './types';
import type { BlockWeights, ModelSpec, ModelWeights } from './spec';
import { activation, headDimOf, ids, layerWindows, num, ropeInvFreq, tiedEmbeddings } from './config';
import { WeightReader } from './weights';

/**
 * The Llama spec from HF config keys. Qwen2/3, Phi-3 and Gemma start from it and override what
 * differs. Sliding windows are left at 0: each family says where its windows are.
 * @throws Error when a required config key is missing.
 */
export function llamaSpec(c: HFConfig): ModelSpec {
  const dModel = num(c, 'hidden_size');
  const nHeads = num(c, 'num_attention_heads');
  const dHead = c.head_dim == null ? headDimOf(dModel, nHeads) : num(c, 'head_dim');
  const nLayers = num(c, 'num_hidden_layers');
  return {
    modelType: String(c.model_type),
    nLayers, dModel, nHeads, dHead,
    nKvHeads: num(c, 'num_key_value_heads', nHeads),
    dMlp: num(c, 'intermediate_size'),
    dVocab: num(c, 'vocab_size'),
    nCtx: num(c, 'max_position_embeddings'),
    norm: 'rms', normEps: num(c, 'rms_norm_eps', 1e-6), normOffset: 0,
    act: activation(c.hidden_act ?? 'silu'), gatedMlp: true,
    parallelResidual: false, sandwichNorms: false, qkNorm: false,
    positional: 'rotary', rotaryDims: dHead,
    invFreq: ropeInvFreq(num(c, 'rope_theta', 10000), dHead, c.rope_scaling),
    attnScale: 1 / Math.sqrt(dHead), attnSoftcap: 0, finalSoftcap: 0,
    windows: new Array<number>(nLayers).fill(0),
    embedScale: 1,
    bosTokenId: typeof c.bos_token_id === 'number' ? c.bos_token_id : null,
    eosTokenIds: ids(c.eos_token_id),
  };
}

/**
 * One `model.layers.{l}` block under HF Llama names (`self_attn.{q,k,v,o}_proj`,
 * `mlp.{gate,up,down}_proj`, `input_layernorm`, `post_attention_layernorm`). Biases are read
 * wherever the checkpoint has them (Llama attention_bias / mlp_bias, Qwen2 q/k/v).
 */
export function llamaBlock(r: WeightReader, s: ModelSpec, l: number): BlockWeights {
  const p = `model.layers.${l}`;
  return {
    ...llamaAttention(r, s, l),
    gate: r.linear(`${p}.mlp.gate_proj`, s.dMlp, s.dModel),
    up: r.linear(`${p}.mlp.up_proj`, s.dMlp, s.dModel),
    down: r.linear(`${p}.mlp.down_proj`, s.dModel, s.dMlp),
  };
}

/**
 * A `model.layers.{l}` block's norms and attention under HF Llama names (llamaBlock without the
 * MLP: the mixture-of-experts families add theirs).
 */
export function llamaAttention(r: WeightReader, s: ModelSpec, l: number): Omit<BlockWeights, 'up' | 'down'> {
  const p = `model.layers.${l}`;
  const qW = s.nHeads * s.dHead, kvW = s.nKvHeads * s.dHead;
  return {
    ln1: r.norm(`${p}.input_layernorm`, s.dModel),
    ln2: r.norm(`${p}.post_attention_layernorm`, s.dModel),
    q: r.linear(`${p}.self_attn.q_proj`, qW, s.dModel),
    k: r.linear(`${p}.self_attn.k_proj`, kvW, s.dModel),
    v: r.linear(`${p}.self_attn.v_proj`, kvW, s.dModel),
    o: r.linear(`${p}.self_attn.o_proj`, s.dModel, qW),
  };
}

/**
 * Embedding, blocks, final norm and head under HF Llama names (`model.embed_tokens`, `model.norm`,
 * `lm_head`), then checks that no tensor was left unread.
 * @throws Error when a tensor is missing, misshapen, or left unread.
 */
export function llamaWeights(c: HFConfig, s: ModelSpec, r: WeightReader, block: (l: number) => BlockWeights): ModelWeights {
  const embed = r.tensor('model.embed_tokens.weight', [s.dVocab, s.dModel]);
  const blocks = Array.from({ length: s.nLayers }, (_, l) => block(l));
  const weights: ModelWeights = {
    embed, blocks,
    lnFinal: r.norm('model.norm', s.dModel),
    unembed: r.unembed('lm_head.weight', embed, tiedEmbeddings(c), [s.dVocab, s.dModel]),
  };
  // rotary_emb.inv_freq: a buffer older checkpoints saved; recomputed from the config here
  r.assertAllUsed(/\.rotary_emb\.inv_freq$/);
  return weights;
}

/**
 * Llama family: Llama 2/3 (rope_scaling llama3), TinyLlama, SmolLM/SmolLM2, llama2.c stories
 * models, and Mistral (`sliding_window` on every layer when set). Pre-norm RMSNorm blocks,
 * rotate_half RoPE, GQA, SwiGLU MLP, optional tied head. HF reference: `modeling_llama.py`,
 * `modeling_mistral.py`. All hooks are present.
 */
export const llama: Architecture = {
  modelTypes: ['llama', 'mistral'],

  spec(c: HFConfig): ModelSpec {
    const s = llamaSpec(c);
    return c.model_type === 'mistral' ? { ...s, windows: layerWindows(c, s.nLayers, () => true) } : s;
  },

  weights(spec: ModelSpec, src: WeightSource, up: Upload, config: HFConfig): ModelWeights {
    const r = new WeightReader(src, up);
    return llamaWeights(config, spec, r, (l) => llamaBlock(r, spec, l));
  },
};
