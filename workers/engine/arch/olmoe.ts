import type { Architecture, HFConfig, WeightSource, Upload } from './types';
import type { ModelSpec, ModelWeights } from './spec';
import { num } from './config';
import { llamaAttention, llamaSpec, llamaWeights } from './llama';
import { moeSpec, PROJ_NAMES, readExperts, refuseUnsupportedMoe } from './moe_common';
import { WeightReader } from './weights';

/**
 * OLMoE: Llama attention without biases whose `self_attn.q_norm` / `k_norm` RMSNorms run over the
 * WHOLE q / k projection ([n_heads·d_head], [n_kv_heads·d_head]) before the head reshape and RoPE
 * (ModelSpec.qkNorm with weights as wide as the projection; Qwen3's are per head), and a sparse
 * mixture of experts on every layer (`mlp.gate` router, `mlp.experts.{e}.{gate,up,down}_proj` of
 * width intermediate_size; top-k renormalised only when `norm_topk_prob`). `clip_qkv` is refused.
 * HF reference: `modeling_olmoe.py`. Hooks: as Mixtral's.
 */
export const olmoe: Architecture = {
  modelTypes: ['olmoe'],

  spec(c: HFConfig): ModelSpec {
    refuseUnsupportedMoe(c);
    const s = llamaSpec(c);
    return { ...s, qkNorm: true, moe: moeSpec(c, { nLayers: s.nLayers, dExpert: num(c, 'intermediate_size'), normTopk: c.norm_topk_prob === true }) };
  },

  weights(spec: ModelSpec, src: WeightSource, up: Upload, config: HFConfig): ModelWeights {
    const r = new WeightReader(src, up);
    const m = spec.moe!;
    return llamaWeights(config, spec, r, (l) => {
      const p = `model.layers.${l}`;
      return {
        ...llamaAttention(r, spec, l),
        qNorm: r.tensor(`${p}.self_attn.q_norm.weight`, [spec.nHeads * spec.dHead]),
        kNorm: r.tensor(`${p}.self_attn.k_norm.weight`, [spec.nKvHeads * spec.dHead]),
        moe: {
          router: r.tensor(`${p}.mlp.gate.weight`, [m.nExperts, spec.dModel]),
          experts: readExperts(r, `${p}.mlp.experts`, m, spec.dModel, PROJ_NAMES),
        },
      };
    });
  },
};
