import * as path from 'node:path';
import { describe, expect, it } from 'vitest';
import { smolLM2Gguf } from '../../tools/research_checkpoints';
import { RESEARCH_CONFIGS } from '../../tools/research_configs';
import { compareWithReference } from './research_compare';
import { ggufWeights } from './research_weights';

/**
 * The SmolLM2-135M-shaped random checkpoint as llama.cpp GGUF (tools/gguf_write.ts: linear weights
 * Q8_0 or Q4_0, embedding and norms F32; attn_q / attn_k rows permuted as llama.cpp does) loads as a
 * user's model.gguf folder on the CPU backend, and the logits of the last of four tokens equal a
 * float64 forward over the file's own blocks, dequantised and un-permuted here
 * (tests/model/research_weights.ts ggufWeights), over the whole 49,152-token vocabulary: four
 * positions, so a wrong q/k row order would change the attention. 86 s for both at load 16–18
 * (max |Δ| 2.6e-6 / 2.5e-6; most of it the reference's row-by-row reads).
 */
const C = RESEARCH_CONFIGS['smollm2-135m'];

describe.each(['q8_0', 'q4_0'] as const)('SmolLM2-135M research-size checkpoint as GGUF %s', (type) => {
  it('loads from the folder; last-token logits over 4 positions equal a float64 forward over the dequantised blocks', async () => {
    const dir = smolLM2Gguf(type);
    const r = await compareWithReference(dir, C, ggufWeights(path.join(dir, 'model.gguf'), C.num_attention_heads, C.num_key_value_heads, C.head_dim), [1, 4000, 30000, 49151]);
    console.log(`smollm2-135m ${type}: max |Δ| ${r.worst.toExponential(2)} of max |logit| ${r.scale.toFixed(2)}; load ${r.seconds.load.toFixed(1)} s, run ${r.seconds.run.toFixed(1)} s, reference ${r.seconds.reference.toFixed(1)} s`);
    expect(r.scale).toBeGreaterThan(0.1);
    expect(r.worst).toBeLessThan(1e-4);
    expect(r.argmax).toBe(r.refArgmax);
  }, 300_000);
});
