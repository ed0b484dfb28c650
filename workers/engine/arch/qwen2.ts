import type { Architecture, HFConfig, WeightSource, Upload } from './types';
import type { ModelSpec, ModelWeights } from './spec';
import { layerWindows, num } from './config';
import { llamaBlock, llamaSpec, llamaWeights } from './llama';
import { WeightReader } from './weights';

/**
 * Qwen2 / Qwen2.5: the Llama block with biases on q_proj, k_proj and v_proj (o_proj and the MLP have
 * none; `llamaBlock` reads whichever biases the checkpoint holds). Sliding window only when
 * `use_sliding_window` is true, and then on layers ≥ `max_window_layers` (or as `layer_types` says).
 * HF reference: `modeling_qwen2.py`. All hooks are present.
 */
export const qwen2: Architecture = {
  modelTypes: ['qwen2'],

  spec(c: HFConfig): ModelSpec {
    const s = llamaSpec(c);
    if (c.use_sliding_window !== true) return s;
    const first = num(c, 'max_window_layers', 0);
    return { ...s, windows: layerWindows(c, s.nLayers, (l) => l >= first) };
  },

  weights(spec: ModelSpec, src: WeightSource, up: Upload, config: HFConfig): ModelWeights {
    const r = new WeightReader(src, up);
    return llamaWeights(config, spec, r, (l) => llamaBlock(r, spec, l));
  },
};
