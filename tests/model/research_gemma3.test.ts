import * as path from 'node:path';
import { describe, expect, it } from 'vitest';
import { researchCheckpoint } from '../../tools/research_checkpoints';
import { RESEARCH_CONFIGS } from '../../tools/research_configs';
import { compareWithReference } from './research_compare';
import { safetensorsWeights } from './research_weights';

/**
 * The Gemma-3-1B-shaped random checkpoint (real text config: 26 layers, d_model 1152, 4 / 1 heads of
 * 256, d_mlp 6912, 262,144-token vocabulary, query_pre_attn_scalar 256, five sliding layers per
 * global one with their own RoPE base; BF16 safetensors, 2.0 GB; the real Gemma 3 tokenizer) loads
 * from its folder on the CPU backend (float32: 4 GB), and the logits of the last of three tokens
 * equal a float64 forward over the file's own bytes (tests/model/research_forward.ts: √d_model
 * embedding scale in bfloat16, (1 + w) norms, sandwich norms, gelu_tanh) over the whole vocabulary.
 * The norms' w are drawn around 0, so a forward that used w instead of 1 + w would be far off.
 * The Gemma 3 tokenizer carries <image_soft_token> at id 262144, one past the text model's
 * embedding (as google/gemma-3-1b-it's does): the load warns, and a prompt holding it is refused.
 * Measured at load 12–15 (other work on the 2 cores): load 281 s, the first run 242 s (the CPU
 * backend packs every weight on first use), the reference 117 s: max |Δ| 5.98e-6 of max |logit| 2.76.
 */
const C = RESEARCH_CONFIGS['gemma-3-1b'];

describe('Gemma-3-1B research-size checkpoint', () => {
  it('loads from the folder (one warning: <image_soft_token>); last-token logits over 3 positions equal a float64 forward', async () => {
    const dir = researchCheckpoint('gemma-3-1b');
    const r = await compareWithReference(dir, C, safetensorsWeights(path.join(dir, 'model.safetensors')), [2, 105, 262143], async (engine) => {
      await expect(engine.run([2, 262144], { logits: 'last' })).rejects.toThrow(/token id 262144 is outside the vocabulary \[0, 262144\)/);
    });
    console.log(`gemma-3-1b: max |Δ| ${r.worst.toExponential(2)} of max |logit| ${r.scale.toFixed(2)}; load ${r.seconds.load.toFixed(1)} s, run ${r.seconds.run.toFixed(1)} s, reference ${r.seconds.reference.toFixed(1)} s`);
    expect(r.warnings).toHaveLength(1);
    expect(r.warnings[0]).toMatch(/<image_soft_token> \(id 262144\) lies beyond the embedding matrix's 262144 rows/);
    expect(r.scale).toBeGreaterThan(0.1);
    expect(r.worst).toBeLessThan(1e-4);
    expect(r.argmax).toBe(r.refArgmax);
  }, 1_200_000);
});
