import type { Architecture, HFConfig, WeightSource, Upload } from './types';
import type { BlockWeights, ModelSpec, ModelWeights } from './spec';
import { activation, layerWindows, num, ropeInvFreq, roundToDtype } from './config';
import { llamaBlock, llamaSpec, llamaWeights } from './llama';
import { WeightReader } from './weights';

/**
 * The Gemma 2 spec (defaults from HF `Gemma2Config`: head_dim 256, query_pre_attn_scalar 256).
 * Gemma 3 starts from it.
 * @throws Error when a required config key is missing or torch_dtype is unsupported.
 */
export function gemma2Spec(c: HFConfig): ModelSpec {
  const base = llamaSpec(c);
  const dHead = num(c, 'head_dim', 256);
  return {
    ...base,
    dHead,
    normOffset: 1,
    act: activation(c.hidden_activation ?? c.hidden_act ?? 'gelu_pytorch_tanh'),
    sandwichNorms: true,
    rotaryDims: dHead,
    invFreq: ropeInvFreq(num(c, 'rope_theta', 10000), dHead, c.rope_scaling),
    attnScale: num(c, 'query_pre_attn_scalar', 256) ** -0.5,
    attnSoftcap: num(c, 'attn_logit_softcapping', 0),
    finalSoftcap: num(c, 'final_logit_softcapping', 0),
    windows: layerWindows(c, base.nLayers, (l) => l % 2 === 0),
    // HF: normalizer = torch.tensor(hidden_size**0.5, dtype=hidden_states.dtype)
    embedScale: roundToDtype(Math.sqrt(base.dModel), c.torch_dtype),
  };
}

/**
 * A Gemma 2 block: the Llama block's names, except that `post_attention_layernorm` is the sandwich
 * norm after attention (not ln2), `pre_feedforward_layernorm` is ln2, and
 * `post_feedforward_layernorm` follows the MLP.
 */
export function gemma2Block(r: WeightReader, s: ModelSpec, l: number): BlockWeights {
  const p = `model.layers.${l}`;
  const llamaNames = llamaBlock(r, s, l);
  return {
    ...llamaNames,
    postAttnNorm: llamaNames.ln2,
    ln2: r.norm(`${p}.pre_feedforward_layernorm`, s.dModel),
    postMlpNorm: r.norm(`${p}.post_feedforward_layernorm`, s.dModel),
  };
}

/**
 * Gemma 2 (Gemma Team 2024, arXiv 2408.00118), over the Llama layout:
 * - RMSNorm scales by (1 + w) (normOffset 1); token embeddings are multiplied by sqrt(hidden_size)
 *   rounded to `torch_dtype` (hook_embed and hidden_states[0] include the scale);
 * - sandwich norms around both branches (hook_attn_out / hook_mlp_out are after the post-norms);
 * - GeGLU MLP with `hidden_activation` (gelu_pytorch_tanh);
 * - attention scale `query_pre_attn_scalar`^-0.5, not head_dim^-0.5; `attn_logit_softcapping`
 *   before the mask (hook_attn_scores is capped) and `final_logit_softcapping` (the logits hook is capped);
 * - `sliding_window` on even layers (layer_idx % 2 == 0), global attention on odd ones; tied head.
 * HF reference: `modeling_gemma2.py`. All hooks are present.
 */
export const gemma2: Architecture = {
  modelTypes: ['gemma2'],
  spec: gemma2Spec,
  weights(spec: ModelSpec, src: WeightSource, up: Upload, config: HFConfig): ModelWeights {
    const r = new WeightReader(src, up);
    return llamaWeights(config, spec, r, (l) => gemma2Block(r, spec, l));
  },
};
