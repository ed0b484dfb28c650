import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CpuBackend } from '../../workers/engine/backend/cpu';
import { NodeFiles } from '../../workers/engine/io/node_files';
import { loadTransformer } from '../../workers/engine/model/load';
import type { BlockWeights, ModelSpec, ModelWeights } from '../../workers/engine/arch/spec';
import { checkBlockWeights } from '../../workers/engine/model/spec_checks';
import { Transformer } from '../../workers/engine/model/transformer';
import { sharedPath } from '../shared';

/**
 * ModelSpec.gatedMlp, sandwichNorms and qkNorm decide the block's wiring, so a model whose block
 * weights disagree with them is refused when the Transformer is made (model/spec_checks.ts
 * checkBlockWeights): gate ⇔ gatedMlp, postAttnNorm and postMlpNorm ⇔ sandwichNorms, qNorm and
 * kNorm ⇔ qkNorm. Checked on the fixtures that hold each weight (llama: gate; gemma2: sandwich
 * norms; qwen3: q/k norms) and one that holds none (gpt2).
 */
const FIXTURES = ['llama', 'gemma2', 'qwen3', 'gpt2'] as const;
const b = new CpuBackend();
const loaded = new Map<string, { spec: ModelSpec; weights: ModelWeights }>();
beforeAll(async () => {
  for (const f of FIXTURES) {
    const { model } = await loadTransformer(new NodeFiles(sharedPath('fixtures', `${f}-tiny`)), b, undefined, { contextLength: 8 });
    model.dispose();
    loaded.set(f, { spec: model.spec, weights: model.weights });
  }
});
afterAll(() => b.dispose());

/** The weights with block `l`'s field removed (the other blocks and tensors shared). */
const without = (w: ModelWeights, l: number, field: keyof BlockWeights): ModelWeights => ({
  ...w,
  blocks: w.blocks.map((bw, i) => (i === l ? { ...bw, [field]: undefined } : bw)),
});

describe('the wiring flags agree with the block weights, or the model is refused', () => {
  it('every fixture loads: its architecture sets each flag exactly where its weights hold the weight', () => {
    const flags = Object.fromEntries([...loaded].map(([f, m]) => [f, [m.spec.gatedMlp, m.spec.sandwichNorms, m.spec.qkNorm]]));
    expect(flags).toEqual({ llama: [true, false, false], gemma2: [true, true, false], qwen3: [true, false, true], gpt2: [false, false, false] });
  });

  it('a flag set without its weight is refused, naming the layer, the flag and the missing weight', () => {
    const llama = loaded.get('llama')!, gemma2 = loaded.get('gemma2')!, qwen3 = loaded.get('qwen3')!, gpt2 = loaded.get('gpt2')!;
    expect(() => new Transformer(b, llama.spec, without(llama.weights, 1, 'gate'))).toThrow('layer 1: ModelSpec.gatedMlp is true (llama) but the block has no gate projection (HF mlp.gate_proj, or the gate half of gate_up_proj): BlockWeights.gate is missing');
    expect(() => new Transformer(b, gemma2.spec, without(gemma2.weights, 0, 'postMlpNorm'))).toThrow('layer 0: ModelSpec.sandwichNorms is true (gemma2) but the block has no post-MLP sandwich norm (HF post_feedforward_layernorm): BlockWeights.postMlpNorm is missing');
    expect(() => new Transformer(b, qwen3.spec, without(qwen3.weights, 1, 'kNorm'))).toThrow('layer 1: ModelSpec.qkNorm is true (qwen3) but the block has no key norm (HF self_attn.k_norm): BlockWeights.kNorm is missing');
    expect(() => new Transformer(b, { ...gpt2.spec, gatedMlp: true }, gpt2.weights)).toThrow('layer 0: ModelSpec.gatedMlp is true (gpt2) but the block has no gate projection');
    expect(() => new Transformer(b, { ...gpt2.spec, sandwichNorms: true }, gpt2.weights)).toThrow('layer 0: ModelSpec.sandwichNorms is true (gpt2) but the block has no post-attention sandwich norm');
    expect(() => new Transformer(b, { ...gpt2.spec, qkNorm: true }, gpt2.weights)).toThrow('layer 0: ModelSpec.qkNorm is true (gpt2) but the block has no query norm');
  });

  it('a weight whose flag is off is refused as unexpected (the forward pass would ignore it)', () => {
    const llama = loaded.get('llama')!, gemma2 = loaded.get('gemma2')!, qwen3 = loaded.get('qwen3')!;
    expect(() => new Transformer(b, { ...llama.spec, gatedMlp: false }, llama.weights)).toThrow('layer 0: ModelSpec.gatedMlp is false (llama) but the block holds a gate projection (HF mlp.gate_proj, or the gate half of gate_up_proj): BlockWeights.gate is unexpected (the forward pass would ignore it)');
    expect(() => new Transformer(b, { ...gemma2.spec, sandwichNorms: false }, gemma2.weights)).toThrow('layer 0: ModelSpec.sandwichNorms is false (gemma2) but the block holds a post-attention sandwich norm');
    expect(() => new Transformer(b, { ...qwen3.spec, qkNorm: false }, qwen3.weights)).toThrow('layer 0: ModelSpec.qkNorm is false (qwen3) but the block holds a query norm');
  });

  it('the refusal comes before the KV cache is allocated; weights of another block count are refused too', () => {
    const llama = loaded.get('llama')!;
    const live = b.liveTensors();
    expect(() => new Transformer(b, { ...llama.spec, gatedMlp: false }, llama.weights)).toThrow('ModelSpec.gatedMlp is false');
    expect(b.liveTensors()).toBe(live);
    expect(() => checkBlockWeights(llama.spec, { ...llama.weights, blocks: llama.weights.blocks.slice(1) })).toThrow(`the weights hold ${llama.spec.nLayers - 1} blocks, the spec ${llama.spec.nLayers} layers (num_hidden_layers)`);
  });
});
