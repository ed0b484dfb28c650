import * as fs from 'node:fs';
import { describe, expect, it } from 'vitest';
import { architectureFor } from '../../workers/engine/arch/registry';
import type { WeightSource } from '../../workers/engine/arch/types';
import { MemoryFiles } from '../../workers/engine/io/model_files';
import { activeAtStep, selectRows, type Intervention } from '../../workers/engine/model/intervention';
import { firstTouchedPosition, stepOfPosition } from '../../workers/engine/model/span';
import { checkWeightDtype, isGgufFolder, workingContext } from '../../workers/engine/model/load';
import { isQuantFormat, QUANT_FORMATS, quantisedTensor } from '../../workers/engine/model/quant_storage';
import type { ModelSpec } from '../../workers/engine/arch/spec';
import { checkLayersAgainstCheckpoint, checkpointLayers, checkSpec } from '../../workers/engine/model/spec_checks';
import { sharedPath } from '../shared';

/**
 * The rules of model/ that are small pure functions, each against its written definition
 * (closed forms, no model run): positions and steps of an intervention (DESIGN.md §2, the
 * docstrings of intervention.ts and kv_prefix.ts), the working context, the GGUF folder rule, the
 * weight storages, which tensors a quantised load stores quantised (quant_storage.ts), and the
 * config checks of spec_checks.ts with their messages.
 */

const iv = (positions: Intervention['positions'], steps?: Intervention['steps']): Intervention =>
  ({ hook: 'blocks.0.hook_resid_post', op: { kind: 'add', v: new Float32Array(1), alpha: 1 }, positions, ...(steps ? { steps } : {}) }) as Intervention;

describe('intervention positions and steps (DESIGN.md §2)', () => {
  it('a step window [start, end) holds start..end−1; no window holds every step', () => {
    const w = iv('all', { start: 2, end: 4 });
    expect([0, 1, 2, 3, 4, 5].map((s) => activeAtStep(w, s))).toEqual([false, false, true, true, false, false]);
    expect([0, 7, 1000].map((s) => activeAtStep(iv('all'), s))).toEqual([true, true, true]);
  });

  it('row masks of a call at positions 3..6 with n_prompt = 5: all, prompt (< 5), generated (≥ 4), a list, a range [4, 6)', () => {
    const site = { pos0: 3, n: 4, nPrompt: 5, step: 0 };
    expect(Array.from(selectRows('all', site))).toEqual([1, 1, 1, 1]);
    expect(Array.from(selectRows('prompt', site))).toEqual([1, 1, 0, 0]);
    expect(Array.from(selectRows('generated', site))).toEqual([0, 1, 1, 1]);
    expect(Array.from(selectRows([4, 6, 9], site))).toEqual([0, 1, 0, 1]);
    expect(Array.from(selectRows({ start: 4, end: 6 }, site))).toEqual([0, 1, 1, 0]);
    expect(selectRows('all', site)).toHaveLength(4);
  });

  it('the step of position t is 0 in the prompt and t − n_prompt + 1 after it; the first position an intervention touches', () => {
    expect([0, 4, 5, 6, 9].map((t) => stepOfPosition(t, 5))).toEqual([0, 0, 1, 2, 5]);
    // steps [2, 3) over 'generated' with n_prompt 5: step 2 is position 6
    expect(firstTouchedPosition(iv('generated', { start: 2, end: 3 }), 5, 10)).toBe(6);
    expect(firstTouchedPosition(iv({ start: 2, end: 4 }), 5, 10)).toBe(2);
    // the prompt's positions all run at step 0: a window from step 1 never touches them
    expect(firstTouchedPosition(iv('prompt', { start: 1, end: 9 }), 5, 10)).toBe(Number.POSITIVE_INFINITY);
    expect(firstTouchedPosition(iv([12]), 5, 10)).toBe(Number.POSITIVE_INFINITY);
  });
});

describe('load rules', () => {
  it('the working context is min(n_ctx, contextLength); a contextLength that is not a positive whole number is refused', () => {
    expect(workingContext(512, 8)).toBe(8);
    expect(workingContext(512, 1)).toBe(1);
    expect(workingContext(512, 4096)).toBe(512);
    for (const bad of [0, -3, 1.5, Number.NaN]) {
      expect(() => workingContext(512, bad)).toThrow(`contextLength must be a positive whole number of tokens, not ${bad}`);
    }
  });

  it('a folder is read as GGUF only when it holds model.gguf and neither model.safetensors nor an index', async () => {
    const folder = (...names: string[]) => new MemoryFiles('m', new Map(names.map((n) => [n, new Uint8Array(1)])));
    expect(await isGgufFolder(folder('model.gguf', 'tokenizer.json'))).toBe(true);
    expect(await isGgufFolder(folder('model.gguf', 'model.safetensors'))).toBe(false);
    expect(await isGgufFolder(folder('model.gguf', 'model.safetensors.index.json'))).toBe(false);
    expect(await isGgufFolder(folder('model.safetensors'))).toBe(false);
    expect(await isGgufFolder(folder('config.json'))).toBe(false);
  });

  it('the weight storages are f32, f16, q8_0 and q4_0; another is refused naming them', () => {
    for (const d of ['f32', 'f16', 'q8_0', 'q4_0']) expect(checkWeightDtype(d)).toBe(d);
    expect(() => checkWeightDtype('bf16')).toThrow('weight storage "bf16" is not one of f32, f16, q8_0, q4_0');
  });
});

describe('quantised storage (quant_storage.ts)', () => {
  it('q8_0 and q4_0 are the block formats; f32 and f16 are not', () => {
    expect(QUANT_FORMATS).toEqual(['q8_0', 'q4_0']);
    expect(['q8_0', 'q4_0', 'f32', 'f16', 'Q8_0'].map(isQuantFormat)).toEqual([true, true, false, false, false]);
  });

  it('every 2-D weight of the blocks is stored quantised; embedding and unembedding tables, 1-D tensors and unnamed ones are not', () => {
    expect(quantisedTensor('model.layers.0.self_attn.q_proj.weight', [8, 8])).toBe(true);
    expect(quantisedTensor('transformer.h.1.mlp.c_fc.weight', [16, 8])).toBe(true);
    // a table name inside another name, or a tensor beside the table that is not the table's weight
    expect(quantisedTensor('model.layers.0.xlm_head.weight', [8, 8])).toBe(true);
    expect(quantisedTensor('model.embed_tokens.weight_scale', [8, 8])).toBe(true);
    for (const name of ['lm_head.weight', 'embed_out.weight', 'model.embed_tokens.weight', 'transformer.wte.weight', 'transformer.wpe.weight', 'gpt_neox.embed_in.weight']) {
      expect(quantisedTensor(name, [32, 8]), name).toBe(false);
    }
    expect(quantisedTensor('model.layers.0.input_layernorm.weight', [8])).toBe(false);
    expect(quantisedTensor(undefined, [8, 8])).toBe(false);
  });
});

describe('config checks (spec_checks.ts)', () => {
  const config = JSON.parse(fs.readFileSync(sharedPath('models', 'stories260K', 'config.json'), 'utf8'));
  const base = architectureFor(config.model_type).spec(config);
  const spec = (over: Partial<ModelSpec>): ModelSpec => ({ ...base, ...over });
  const src = (names: string[]) => ({ names: () => names }) as unknown as WeightSource;

  it('stories260K\'s own spec passes (8 heads over 4 KV heads, head_dim 8, ids in the vocabulary)', () => {
    expect([base.nHeads, base.nKvHeads, base.dHead, base.dVocab]).toEqual([8, 4, 8, 512]);
    expect(() => checkSpec(base)).not.toThrow();
    expect(() => checkSpec(spec({ bosTokenId: null, eosTokenIds: [0, 511], windows: [0, 3, 0, 0, 0] }))).not.toThrow();
  });

  it('num_key_value_heads must divide num_attention_heads', () => {
    expect(() => checkSpec(spec({ nKvHeads: 3 })))
      .toThrow('config.json "num_attention_heads" 8 is not a multiple of "num_key_value_heads" 3; expected each key/value head to serve a whole number of query heads');
  });

  it('head_dim must be a positive whole number: 0, −8 and 2.5 are refused', () => {
    for (const dHead of [0, -8, 2.5]) expect(() => checkSpec(spec({ dHead }))).toThrow(`config.json: head_dim is ${dHead}; expected a positive whole number`);
  });

  it('bos and eos ids must lie in [0, vocab_size): −1, 512 and 1.5 are refused, 0 and 511 accepted', () => {
    for (const id of [-1, 512, 1.5]) {
      expect(() => checkSpec(spec({ bosTokenId: id }))).toThrow(`config.json "bos_token_id" ${id} is outside the vocabulary [0, 512) (vocab_size)`);
      expect(() => checkSpec(spec({ eosTokenIds: [2, id] }))).toThrow(`config.json "eos_token_id" ${id} is outside the vocabulary [0, 512) (vocab_size)`);
    }
    expect(() => checkSpec(spec({ bosTokenId: 0, eosTokenIds: [511] }))).not.toThrow();
  });

  it('sliding_window must be a whole number ≥ 0: −1 and 2.5 are refused', () => {
    for (const w of [-1, 2.5]) expect(() => checkSpec(spec({ windows: [0, w] }))).toThrow(`config.json "sliding_window" ${w}; expected a whole number ≥ 0`);
  });

  it('the blocks a checkpoint holds: 1 + the largest index in names like model.layers.N., transformer.h.N., blocks.N. (also at the start)', () => {
    expect(checkpointLayers(src([]))).toBe(0);
    expect(checkpointLayers(src(['lm_head.weight', 'model.norm.weight']))).toBe(0);
    expect(checkpointLayers(src(['model.layers.0.mlp.up_proj.weight', 'model.layers.11.mlp.up_proj.weight', 'model.layers.3.x']))).toBe(12);
    expect(checkpointLayers(src(['transformer.h.2.attn.c_attn.weight']))).toBe(3);
    expect(checkpointLayers(src(['layers.4.attention.wq.weight']))).toBe(5);
    expect(checkpointLayers(src(['blocks.6.attn.W_Q', 'model.xlayers.9.w', 'model.layers.x.w']))).toBe(7);
  });

  it('config.json\'s layer count must match the checkpoint\'s blocks (a checkpoint without block names is not checked)', () => {
    expect(() => checkLayersAgainstCheckpoint(base, src(['model.layers.4.w']), 'm')).not.toThrow();
    expect(() => checkLayersAgainstCheckpoint(base, src(['lm_head.weight']), 'm')).not.toThrow();
    expect(() => checkLayersAgainstCheckpoint(base, src(['model.layers.5.w']), 'm'))
      .toThrow('m: config.json gives 5 layers (num_hidden_layers / n_layer) but the checkpoint holds blocks 0..5 (6 layers)');
    expect(() => checkLayersAgainstCheckpoint(base, src(['model.layers.3.w']), 'm'))
      .toThrow('m: config.json gives 5 layers (num_hidden_layers / n_layer) but the checkpoint holds blocks 0..3 (4 layers)');
  });
});
