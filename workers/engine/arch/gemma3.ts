import type { Architecture, HFConfig, WeightSource, Upload } from './types';
import type { ModelSpec, ModelWeights } from './spec';
import { num, ropeInvFreq, slidingLayers } from './config';
import { gemma2Block, gemma2Spec } from './gemma2';
import { llamaWeights } from './llama';
import { WeightReader } from './weights';

/**
 * Gemma 3 text models (model_type `gemma3_text`: Gemma 3 1B, and the language model of the larger
 * ones saved on its own; Gemma Team 2025, arXiv 2503.19786). What differs from Gemma 2:
 * - per-head (1 + w) RMSNorm on queries and keys (`self_attn.q_norm`, `k_norm`, [head_dim]) before RoPE;
 * - local/global layers by `layer_types`, or else `sliding_window_pattern` (default 6): layer l is
 *   sliding unless (l + 1) % pattern == 0;
 * - two RoPEs: sliding layers use `rope_local_base_freq` (default 10000) without scaling, global
 *   layers `rope_theta` (default 1e6) with `rope_scaling` (ModelSpec.invFreqPerLayer);
 * - no soft-capping unless the config sets it (both default to null).
 * HF reference: `modeling_gemma3.py` (Gemma3TextModel). No fixture exists for it: it reuses the
 * Gemma 2 code paths the gemma2 fixture checks plus the q/k norm the qwen3 fixture checks.
 * All hooks are present.
 */
export const gemma3Text: Architecture = {
  modelTypes: ['gemma3_text'],

  spec(c: HFConfig): ModelSpec {
    const base = gemma2Spec({ rope_theta: 1_000_000, ...c });
    const pattern = num(c, 'sliding_window_pattern', 6);
    const sliding = slidingLayers(c, base.nLayers, (l) => (l + 1) % pattern !== 0);
    const window = num(c, 'sliding_window', 4096);
    const local = ropeInvFreq(num(c, 'rope_local_base_freq', 10000), base.dHead, null);
    return {
      ...base,
      qkNorm: true,
      windows: sliding.map((s) => (s ? window : 0)),
      invFreqPerLayer: sliding.map((s) => (s ? local : base.invFreq)),
    };
  },

  weights(spec: ModelSpec, src: WeightSource, up: Upload, config: HFConfig): ModelWeights {
    const r = new WeightReader(src, up);
    return llamaWeights(config, spec, r, (l) => ({
      ...gemma2Block(r, spec, l),
      qNorm: r.tensor(`model.layers.${l}.self_attn.q_norm.weight`, [spec.dHead]),
      kNorm: r.tensor(`model.layers.${l}.self_attn.k_norm.weight`, [spec.dHead]),
    }));
  },
};
