import type { Architecture, HFConfig, WeightSource, Upload } from './types';
import type { BlockWeights, ModelSpec, ModelWeights } from '../model/spec';
import { activation, ids, num, ropeInvFreq } from './config';

/**
 * Llama family: Llama 2/3 (rope_scaling llama3), TinyLlama, SmolLM/SmolLM2, llama2.c stories
 * models, and Mistral (sliding_window on every layer). Pre-norm RMSNorm blocks, rotate_half RoPE,
 * GQA, SwiGLU MLP, optional tied head. HF reference: `modeling_llama.py`, `modeling_mistral.py`.
 * All hooks are present.
 */
export const llama: Architecture = {
  modelTypes: ['llama', 'mistral'],

  spec(c: HFConfig): ModelSpec {
    const dModel = num(c, 'hidden_size');
    const nHeads = num(c, 'num_attention_heads');
    const dHead = num(c, 'head_dim', dModel / nHeads);
    const nLayers = num(c, 'num_hidden_layers');
    const window = c.model_type === 'mistral' && typeof c.sliding_window === 'number' ? c.sliding_window : 0;
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
      windows: new Array(nLayers).fill(window),
      embedScale: 1,
      bosTokenId: typeof c.bos_token_id === 'number' ? c.bos_token_id : null,
      eosTokenIds: ids(c.eos_token_id),
    };
  },

  weights(spec: ModelSpec, src: WeightSource, up: Upload): ModelWeights {
    const t = (name: string) => { const { data, shape } = src.get(name); return up(data, shape); };
    const opt = (name: string) => (src.has(name) ? t(name) : undefined);
    const lin = (name: string) => ({ w: t(`${name}.weight`), b: opt(`${name}.bias`) });
    const blocks: BlockWeights[] = [];
    for (let l = 0; l < spec.nLayers; l++) {
      const p = `model.layers.${l}`;
      blocks.push({
        ln1: { w: t(`${p}.input_layernorm.weight`) },
        ln2: { w: t(`${p}.post_attention_layernorm.weight`) },
        q: lin(`${p}.self_attn.q_proj`), k: lin(`${p}.self_attn.k_proj`), v: lin(`${p}.self_attn.v_proj`), o: lin(`${p}.self_attn.o_proj`),
        gate: lin(`${p}.mlp.gate_proj`), up: lin(`${p}.mlp.up_proj`), down: lin(`${p}.mlp.down_proj`),
      });
    }
    const embed = t('model.embed_tokens.weight');
    return {
      embed, blocks,
      lnFinal: { w: t('model.norm.weight') },
      unembed: src.has('lm_head.weight') ? t('lm_head.weight') : embed,
    };
  },
};
