import type { Architecture, HFConfig, WeightSource, Upload } from './types';
import type { BlockWeights, ModelSpec, ModelWeights } from './spec';
import { activation, ids, num, tiedEmbeddings, headDimOf } from './config';
import { blockRows, WeightReader } from './weights';

/**
 * GPT-2 (Radford et al. 2019): learned absolute positions (`wpe` → ModelWeights.posEmbed, fired
 * at hook_pos_embed), pre-LN LayerNorm blocks with biases, `activation_function` (gelu_new = tanh
 * GELU), tied head. Attention and MLP use Conv1D, whose weights are stored [in, out]: they are
 * transposed to [out, in] at load, and the fused `attn.c_attn` is split into q | k | v column
 * blocks. Accepts `transformer.`-prefixed names (GPT2LMHeadModel) and the unprefixed ones of
 * OpenAI-converted checkpoints (`h.0.attn...`); the `attn.bias` / `attn.masked_bias` mask buffers
 * are ignored. HF reference: `modeling_gpt2.py`. Every hook is present, including hook_pos_embed;
 * there is no rotary.
 */
export const gpt2: Architecture = {
  modelTypes: ['gpt2'],

  spec(c: HFConfig): ModelSpec {
    if (c.scale_attn_by_inverse_layer_idx === true) throw new Error('GPT-2 scale_attn_by_inverse_layer_idx is not supported');
    const dModel = num(c, 'n_embd');
    const nHeads = num(c, 'n_head');
    const dHead = headDimOf(dModel, nHeads, ['n_embd', 'n_head']);
    const nLayers = num(c, 'n_layer');
    return {
      modelType: 'gpt2',
      nLayers, dModel, nHeads, nKvHeads: nHeads, dHead,
      dMlp: num(c, 'n_inner', 4 * dModel),
      dVocab: num(c, 'vocab_size'),
      nCtx: num(c, 'n_positions'),
      norm: 'layer', normEps: num(c, 'layer_norm_epsilon', 1e-5), normOffset: 0,
      act: activation(c.activation_function ?? 'gelu_new'), gatedMlp: false,
      parallelResidual: false, sandwichNorms: false, qkNorm: false,
      positional: 'learned', rotaryDims: 0, invFreq: new Float32Array(0),
      attnScale: c.scale_attn_weights === false ? 1 : 1 / Math.sqrt(dHead), attnSoftcap: 0, finalSoftcap: 0,
      windows: new Array<number>(nLayers).fill(0),
      embedScale: 1,
      bosTokenId: typeof c.bos_token_id === 'number' ? c.bos_token_id : null,
      eosTokenIds: ids(c.eos_token_id),
    };
  },

  weights(s: ModelSpec, src: WeightSource, up: Upload, config: HFConfig): ModelWeights {
    const r = new WeightReader(src, up);
    const pre = r.has('transformer.wte.weight') ? 'transformer.' : '';
    const d = s.dModel;
    const embed = r.tensor(`${pre}wte.weight`, [s.dVocab, d]);
    const blocks = Array.from({ length: s.nLayers }, (_, l): BlockWeights => {
      const p = `${pre}h.${l}`;
      const [q, k, v] = r.fused(`${p}.attn.c_attn`, blockRows([d, d, d]), d, true);
      return {
        ln1: r.norm(`${p}.ln_1`, d),
        ln2: r.norm(`${p}.ln_2`, d),
        q, k, v,
        o: r.conv1d(`${p}.attn.c_proj`, d, d),
        up: r.conv1d(`${p}.mlp.c_fc`, d, s.dMlp),
        down: r.conv1d(`${p}.mlp.c_proj`, s.dMlp, d),
      };
    });
    const weights: ModelWeights = {
      embed,
      posEmbed: r.tensor(`${pre}wpe.weight`, [s.nCtx, d]),
      blocks,
      lnFinal: r.norm(`${pre}ln_f`, d),
      unembed: r.unembed('lm_head.weight', embed, tiedEmbeddings(config), [s.dVocab, d]),
    };
    r.assertAllUsed(/\.attn\.(bias|masked_bias)$/);
    return weights;
  },
};
