import * as path from 'node:path';
import { describe, expect, it } from 'vitest';
import { researchCheckpoint } from '../../tools/research_checkpoints';
import { RESEARCH_CONFIGS } from '../../tools/research_configs';
import { compareWithReference } from './research_compare';
import { safetensorsWeights } from './research_weights';

/**
 * The Llama-3.2-1B-shaped random checkpoint (real config: 16 layers, d_model 2048, 32 / 8 heads,
 * d_mlp 8192, 128,256-token vocabulary, llama3 RoPE scaling; BF16 safetensors, 2.47 GB; the real
 * Llama 3.1 tokenizer) loads from its folder on the CPU backend (float32: 4.9 GB, the only 1B model
 * this file holds), and the logits of the last of three tokens equal a float64 forward over the
 * file's own bytes (tests/model/research_forward.ts) over the whole vocabulary. Measured at load
 * 16–20: load 379 s, first run 251 s, reference 390 s (1021 s in all): max |Δ| 4.02e-6 of max |logit| 2.69.
 */
const C = RESEARCH_CONFIGS['llama-3.2-1b'];

describe('Llama-3.2-1B research-size checkpoint', () => {
  it('loads from the folder (real tokenizer, no warning); last-token logits over 3 positions equal a float64 forward', async () => {
    const dir = researchCheckpoint('llama-3.2-1b');
    const r = await compareWithReference(dir, C, safetensorsWeights(path.join(dir, 'model.safetensors')), [128000, 9906, 128255]);
    console.log(`llama-3.2-1b: max |Δ| ${r.worst.toExponential(2)} of max |logit| ${r.scale.toFixed(2)}; load ${r.seconds.load.toFixed(1)} s, run ${r.seconds.run.toFixed(1)} s, reference ${r.seconds.reference.toFixed(1)} s`);
    expect(r.warnings).toEqual([]);
    expect(r.scale).toBeGreaterThan(0.1);
    expect(r.worst).toBeLessThan(1e-4);
    expect(r.argmax).toBe(r.refArgmax);
  }, 1_800_000);
});
