import type { Architecture, HFConfig, WeightSource, Upload } from './types';
import type { ModelSpec, ModelWeights } from './spec';
import { layerWindows, num } from './config';
import { llamaAttention, llamaSpec, llamaWeights } from './llama';
import { moeSpec, readExperts } from './moe_common';
import { WeightReader } from './weights';

/**
 * Mixtral: the Mistral block (Llama attention, sliding window on every layer when set) with a
 * sparse mixture of experts in place of the MLP on every layer (`block_sparse_moe.gate` router
 * [num_local_experts, hidden]; experts `block_sparse_moe.experts.{e}.w1|w3|w2` = gate|up|down,
 * width intermediate_size); the top `num_experts_per_tok` softmax probabilities always renormalised.
 * HF reference: `modeling_mixtral.py`. Hooks: all but mlp.hook_pre / hook_post (no single MLP),
 * plus the router hooks mlp.hook_router_logits / hook_expert_indices / hook_expert_weights.
 */
export const mixtral: Architecture = {
  modelTypes: ['mixtral'],

  spec(c: HFConfig): ModelSpec {
    const s = llamaSpec(c);
    return { ...s, windows: layerWindows(c, s.nLayers, () => true), moe: moeSpec(c, { nLayers: s.nLayers, dExpert: num(c, 'intermediate_size'), normTopk: true }) };
  },

  weights(spec: ModelSpec, src: WeightSource, up: Upload, config: HFConfig): ModelWeights {
    const r = new WeightReader(src, up);
    const m = spec.moe!;
    return llamaWeights(config, spec, r, (l) => {
      const p = `model.layers.${l}.block_sparse_moe`;
      return {
        ...llamaAttention(r, spec, l),
        moe: {
          router: r.tensor(`${p}.gate.weight`, [m.nExperts, spec.dModel]),
          experts: readExperts(r, `${p}.experts`, m, spec.dModel, { gate: 'w1', up: 'w3', down: 'w2' }),
        },
      };
    });
  },
};
