import type { Architecture, HFConfig, WeightSource, Upload } from './types';
import type { ModelSpec, ModelWeights } from './spec';
import { layerWindows, num, ropeInvFreq } from './config';
import { llamaSpec, llamaWeights } from './llama';
import { blockRows, WeightReader } from './weights';

/**
 * Phi-3 (and Phi-4-mini, which shares model_type phi3): the Llama block with fused projections,
 * split at load: `self_attn.qkv_proj` [(heads + 2·kv_heads)·head_dim, hidden] holds q | k | v
 * blocks, `mlp.gate_up_proj` [2·intermediate, hidden] holds gate | up halves. Optional
 * `partial_rotary_factor` and `sliding_window` on every layer. rope_scaling "longrope"
 * (Phi-3 128k) is not implemented and fails with a message. HF reference: `modeling_phi3.py`.
 * All hooks are present.
 */
export const phi3: Architecture = {
  modelTypes: ['phi3'],

  spec(c: HFConfig): ModelSpec {
    const s = llamaSpec(c);
    const rotaryDims = Math.trunc(s.dHead * num(c, 'partial_rotary_factor', 1));
    return {
      ...s,
      rotaryDims,
      invFreq: ropeInvFreq(num(c, 'rope_theta', 10000), rotaryDims, c.rope_scaling),
      windows: layerWindows(c, s.nLayers, () => true),
    };
  },

  weights(spec: ModelSpec, src: WeightSource, up: Upload, config: HFConfig): ModelWeights {
    const r = new WeightReader(src, up);
    const qW = spec.nHeads * spec.dHead, kvW = spec.nKvHeads * spec.dHead;
    return llamaWeights(config, spec, r, (l) => {
      const p = `model.layers.${l}`;
      const [q, k, v] = r.fused(`${p}.self_attn.qkv_proj`, blockRows([qW, kvW, kvW]), spec.dModel);
      const [gate, upProj] = r.fused(`${p}.mlp.gate_up_proj`, blockRows([spec.dMlp, spec.dMlp]), spec.dModel);
      return {
        ln1: r.norm(`${p}.input_layernorm`, spec.dModel),
        ln2: r.norm(`${p}.post_attention_layernorm`, spec.dModel),
        q, k, v,
        o: r.linear(`${p}.self_attn.o_proj`, spec.dModel, qW),
        gate, up: upProj,
        down: r.linear(`${p}.mlp.down_proj`, spec.dModel, spec.dMlp),
      };
    });
  },
};
