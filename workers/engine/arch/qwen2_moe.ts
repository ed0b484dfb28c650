import type { Architecture, HFConfig, WeightSource, Upload } from './types';
import type { ModelSpec, ModelWeights } from './spec';
import { num } from './config';
import { llamaAttention, llamaBlock, llamaWeights } from './llama';
import { moeSpec, PROJ_NAMES, readExperts, readGatedMlp } from './moe_common';
import { qwen2 } from './qwen2';
import { WeightReader } from './weights';

/**
 * Which layers of a Qwen2-MoE config are sparse (HF `Qwen2MoeDecoderLayer`): those not in
 * `mlp_only_layers` with num_experts > 0 and (l + 1) % `decoder_sparse_step` = 0.
 */
export function qwen2MoeSparseLayers(c: HFConfig, nLayers: number): boolean[] {
  const only = Array.isArray(c.mlp_only_layers) ? c.mlp_only_layers : [];
  const step = num(c, 'decoder_sparse_step', 1);
  return Array.from({ length: nLayers }, (_, l) => !only.includes(l) && (l + 1) % step === 0);
}

/**
 * Qwen2-MoE (Qwen1.5-MoE, Qwen2-57B-A14B): the Qwen2 block (q/k/v biases, windows as Qwen2) with a
 * sparse mixture of experts on the layers qwen2MoeSparseLayers selects (`mlp.gate` router;
 * `mlp.experts.{e}.{gate,up,down}_proj` of width moe_intermediate_size; top-k renormalised only when
 * `norm_topk_prob`) plus a shared expert `mlp.shared_expert.*` (shared_expert_intermediate_size)
 * scaled by sigmoid(`mlp.shared_expert_gate`·x); the other layers keep Qwen2's dense MLP
 * (intermediate_size). HF reference: `modeling_qwen2_moe.py`. Hooks: the dense layers all of
 * Qwen2's; the sparse ones the router hooks in place of mlp.hook_pre / hook_post.
 */
export const qwen2Moe: Architecture = {
  modelTypes: ['qwen2_moe'],

  spec(c: HFConfig): ModelSpec {
    const s = qwen2.spec(c);
    return {
      ...s,
      moe: moeSpec(c, {
        nLayers: s.nLayers, dExpert: num(c, 'moe_intermediate_size'), normTopk: c.norm_topk_prob === true,
        dShared: num(c, 'shared_expert_intermediate_size', 0), sparse: qwen2MoeSparseLayers(c, s.nLayers),
      }),
    };
  },

  weights(spec: ModelSpec, src: WeightSource, up: Upload, config: HFConfig): ModelWeights {
    const r = new WeightReader(src, up);
    const m = spec.moe!;
    return llamaWeights(config, spec, r, (l) => {
      if (!m.sparse[l]) return llamaBlock(r, spec, l);
      const p = `model.layers.${l}.mlp`;
      return {
        ...llamaAttention(r, spec, l),
        moe: {
          router: r.tensor(`${p}.gate.weight`, [m.nExperts, spec.dModel]),
          experts: readExperts(r, `${p}.experts`, m, spec.dModel, PROJ_NAMES),
          shared: m.dShared > 0
            ? { ...readGatedMlp(r, `${p}.shared_expert`, m.dShared, spec.dModel, PROJ_NAMES), gateW: r.tensor(`${p}.shared_expert_gate.weight`, [1, spec.dModel]) }
            : undefined,
        },
      };
    });
  },
};
