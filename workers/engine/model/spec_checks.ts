/**
 * Checks of a ModelSpec against itself and against the checkpoint, before the weights are
 * uploaded and the KV cache allocated (issue #8: config numbers that allocate or loop without
 * bound, or that disagree with the file), and of the spec's wiring flags against the uploaded
 * block weights (checkBlockWeights, before the KV cache is allocated). The per-key bounds are in
 * arch/config.ts CONFIG_BOUNDS; these are the relations between keys.
 */
import type { WeightSource } from '../arch/types';
import type { BlockWeights, ModelSpec, ModelWeights } from '../arch/spec';

/**
 * @throws Error naming the config keys, their values and the rule: num_key_value_heads must
 *   divide num_attention_heads (grouped-query attention), token ids must lie in the vocabulary,
 *   the head width must be a positive whole number.
 */
export function checkSpec(s: ModelSpec): void {
  if (s.nHeads % s.nKvHeads !== 0) throw new Error(`config.json "num_attention_heads" ${s.nHeads} is not a multiple of "num_key_value_heads" ${s.nKvHeads}; expected each key/value head to serve a whole number of query heads`);
  if (!(Number.isInteger(s.dHead) && s.dHead > 0)) throw new Error(`config.json: head_dim is ${s.dHead}; expected a positive whole number`);
  for (const [key, id] of [['bos_token_id', s.bosTokenId], ...s.eosTokenIds.map((e) => ['eos_token_id', e] as const)] as const) {
    if (id !== null && !(Number.isInteger(id) && id >= 0 && id < s.dVocab)) throw new Error(`config.json "${key}" ${id} is outside the vocabulary [0, ${s.dVocab}) (vocab_size)`);
  }
  for (const w of s.windows) if (!(Number.isInteger(w) && w >= 0)) throw new Error(`config.json "sliding_window" ${w}; expected a whole number ≥ 0`);
}

/** Block indices a checkpoint holds, from names like model.layers.3.…, transformer.h.3.…, gpt_neox.layers.3.… */
export function checkpointLayers(src: WeightSource): number {
  let max = -1;
  for (const name of src.names()) {
    const m = /(?:^|\.)(?:layers|h|blocks)\.(\d+)\./.exec(name);
    if (m) max = Math.max(max, Number(m[1]));
  }
  return max + 1;
}

/**
 * @throws Error when config.json's layer count differs from the blocks the checkpoint holds
 *   (naming both), rather than a message about some missing or unused tensor.
 */
export function checkLayersAgainstCheckpoint(s: ModelSpec, src: WeightSource, label: string): void {
  const n = checkpointLayers(src);
  if (n > 0 && n !== s.nLayers) throw new Error(`${label}: config.json gives ${s.nLayers} layers (num_hidden_layers / n_layer) but the checkpoint holds blocks 0..${n - 1} (${n} layers)`);
}

/**
 * The block weights each wiring flag of the spec requires: present when the flag is set, absent
 * when it is not (the forward pass reads the flags, so a weight it would skip or miss is refused).
 */
const FLAG_WEIGHTS: readonly { flag: 'gatedMlp' | 'sandwichNorms' | 'qkNorm'; fields: readonly { field: keyof BlockWeights; what: string }[] }[] = [
  { flag: 'gatedMlp', fields: [{ field: 'gate', what: 'gate projection (HF mlp.gate_proj, or the gate half of gate_up_proj)' }] },
  {
    flag: 'sandwichNorms',
    fields: [
      { field: 'postAttnNorm', what: 'post-attention sandwich norm (HF Gemma 2 post_attention_layernorm)' },
      { field: 'postMlpNorm', what: 'post-MLP sandwich norm (HF post_feedforward_layernorm)' },
    ],
  },
  {
    flag: 'qkNorm',
    fields: [
      { field: 'qNorm', what: 'query norm (HF self_attn.q_norm)' },
      { field: 'kNorm', what: 'key norm (HF self_attn.k_norm)' },
    ],
  },
];

/**
 * Checks the spec's wiring flags against every block's weights: gate ⇔ gatedMlp, postAttnNorm and
 * postMlpNorm ⇔ sandwichNorms, qNorm and kNorm ⇔ qkNorm; moe ⇔ ModelSpec.moe.sparse[l] (a sparse
 * layer holds no dense gate/up/down, a dense one both up and down). A disagreement is an architecture file's
 * bug (its spec and its weight names out of step), caught at load rather than as wrong numbers.
 * @throws Error naming the layer, the flag, its value and the missing or unexpected weight; also
 *   when the weights hold another number of blocks than the spec's n_layers.
 */
export function checkBlockWeights(s: ModelSpec, w: ModelWeights): void {
  if (w.blocks.length !== s.nLayers) throw new Error(`the weights hold ${w.blocks.length} blocks, the spec ${s.nLayers} layers (num_hidden_layers)`);
  w.blocks.forEach((bw, l) => {
    const sparse = s.moe?.sparse[l] === true;
    if (sparse !== (bw.moe !== undefined)) {
      throw new Error(`layer ${l}: ModelSpec.moe says the MLP is ${sparse ? 'sparse (mixture of experts)' : 'dense'} (${s.modelType}) but the block ${bw.moe ? 'holds' : 'has no'} router and experts (BlockWeights.moe)`);
    }
    if (sparse && (bw.up || bw.down || bw.gate)) throw new Error(`layer ${l}: a sparse (mixture-of-experts) layer holds a dense MLP projection (BlockWeights.gate/up/down are unexpected there)`);
    if (!sparse && (!bw.up || !bw.down)) throw new Error(`layer ${l}: the dense MLP has no ${bw.up ? 'down' : 'up'} projection (BlockWeights.${bw.up ? 'down' : 'up'} is missing)`);
    for (const { flag, fields } of FLAG_WEIGHTS) {
      for (const { field, what } of fields) {
        if (sparse && flag === 'gatedMlp') continue;
        const has = bw[field] !== undefined;
        if (s[flag] && !has) throw new Error(`layer ${l}: ModelSpec.${flag} is true (${s.modelType}) but the block has no ${what}: BlockWeights.${field} is missing`);
        if (!s[flag] && has) throw new Error(`layer ${l}: ModelSpec.${flag} is false (${s.modelType}) but the block holds a ${what}: BlockWeights.${field} is unexpected (the forward pass would ignore it)`);
      }
    }
  });
}
