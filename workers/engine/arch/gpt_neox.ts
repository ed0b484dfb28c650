import type { Architecture, HFConfig, WeightSource, Upload } from './types';
import type { BlockWeights, ModelSpec, ModelWeights } from './spec';
import { activation, ids, num, ropeInvFreq, headDimOf } from './config';
import { perHeadQkvRows, WeightReader } from './weights';

/**
 * GPT-NeoX / Pythia (Black et al. 2022, arXiv 2204.06745): LayerNorm blocks with biases, exact-erf
 * GELU (`hidden_act` gelu), untied `embed_out` head (tie_word_embeddings defaults to false here).
 * The fused `attention.query_key_value` has output rows laid out [heads, 3, head_dim] and is split
 * into q, k, v at load. Partial rotary: the first head_dim·`rotary_pct` dims of each head rotate
 * (rotate_half within them), base `rotary_emb_base`; newer configs spell these
 * `partial_rotary_factor` / `rope_theta`. `use_parallel_residual` (default true):
 * x + attn(ln1(x)) + mlp(ln2(x)), so blocks.{l}.hook_resid_mid is absent (hooks.ts). The
 * `attention.bias`, `attention.masked_bias` and `rotary_emb.inv_freq` buffers of Pythia
 * checkpoints are ignored. HF reference: `modeling_gpt_neox.py`.
 */
export const gptNeox: Architecture = {
  modelTypes: ['gpt_neox'],

  spec(c: HFConfig): ModelSpec {
    const dModel = num(c, 'hidden_size');
    const nHeads = num(c, 'num_attention_heads');
    const dHead = headDimOf(dModel, nHeads);
    const nLayers = num(c, 'num_hidden_layers');
    const rotaryDims = Math.trunc(dHead * num(c, ['rotary_pct', 'partial_rotary_factor'], 1));
    return {
      modelType: 'gpt_neox',
      nLayers, dModel, nHeads, nKvHeads: nHeads, dHead,
      dMlp: num(c, 'intermediate_size'),
      dVocab: num(c, 'vocab_size'),
      nCtx: num(c, 'max_position_embeddings'),
      norm: 'layer', normEps: num(c, 'layer_norm_eps', 1e-5), normOffset: 0,
      act: activation(c.hidden_act ?? 'gelu'), gatedMlp: false,
      parallelResidual: c.use_parallel_residual !== false, sandwichNorms: false, qkNorm: false,
      positional: 'rotary', rotaryDims,
      invFreq: ropeInvFreq(num(c, ['rotary_emb_base', 'rope_theta'], 10000), rotaryDims, c.rope_scaling),
      attnScale: 1 / Math.sqrt(dHead), attnSoftcap: 0, finalSoftcap: 0,
      windows: new Array<number>(nLayers).fill(0),
      embedScale: 1,
      bosTokenId: typeof c.bos_token_id === 'number' ? c.bos_token_id : null,
      eosTokenIds: ids(c.eos_token_id),
    };
  },

  weights(s: ModelSpec, src: WeightSource, up: Upload, config: HFConfig): ModelWeights {
    const r = new WeightReader(src, up);
    const d = s.dModel;
    const embed = r.tensor('gpt_neox.embed_in.weight', [s.dVocab, d]);
    const blocks = Array.from({ length: s.nLayers }, (_, l): BlockWeights => {
      const p = `gpt_neox.layers.${l}`;
      const [q, k, v] = r.fused(`${p}.attention.query_key_value`, perHeadQkvRows(s.nHeads, s.dHead), d);
      return {
        ln1: r.norm(`${p}.input_layernorm`, d),
        ln2: r.norm(`${p}.post_attention_layernorm`, d),
        q, k, v,
        o: r.linear(`${p}.attention.dense`, d, d),
        up: r.linear(`${p}.mlp.dense_h_to_4h`, s.dMlp, d),
        down: r.linear(`${p}.mlp.dense_4h_to_h`, d, s.dMlp),
      };
    });
    const weights: ModelWeights = {
      embed, blocks,
      lnFinal: r.norm('gpt_neox.final_layer_norm', d),
      unembed: r.unembed('embed_out.weight', embed, config.tie_word_embeddings === true, [s.dVocab, d]),
    };
    r.assertAllUsed(/\.attention\.(bias|masked_bias|rotary_emb\.inv_freq)$/);
    return weights;
  },
};
