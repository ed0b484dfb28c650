import type { Architecture, HFConfig, WeightSource, Upload } from './types';
import type { ModelSpec, ModelWeights } from './spec';
import { qwen2 } from './qwen2';
import { llamaBlock, llamaWeights } from './llama';
import { WeightReader } from './weights';

/**
 * Qwen3: the Qwen2 block without q/k/v biases (unless `attention_bias`) and with per-head RMSNorm
 * on queries and keys (`self_attn.q_norm`, `self_attn.k_norm`, weight [head_dim]) after the head
 * reshape and before RoPE. `head_dim` is explicit and may differ from hidden_size / heads.
 * Windows follow Qwen2's rule. HF reference: `modeling_qwen3.py`. All hooks are present;
 * `attn.hook_q` / `hook_k` are after the q/k norm and rotary.
 */
export const qwen3: Architecture = {
  modelTypes: ['qwen3'],

  spec(c: HFConfig): ModelSpec {
    return { ...qwen2.spec(c), qkNorm: true };
  },

  weights(spec: ModelSpec, src: WeightSource, up: Upload, config: HFConfig): ModelWeights {
    const r = new WeightReader(src, up);
    return llamaWeights(config, spec, r, (l) => ({
      ...llamaBlock(r, spec, l),
      qNorm: r.tensor(`model.layers.${l}.self_attn.q_norm.weight`, [spec.dHead]),
      kNorm: r.tensor(`model.layers.${l}.self_attn.k_norm.weight`, [spec.dHead]),
    }));
  },
};
