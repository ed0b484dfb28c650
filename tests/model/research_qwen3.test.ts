import * as path from 'node:path';
import { describe, expect, it } from 'vitest';
import { researchCheckpoint } from '../../tools/research_checkpoints';
import { RESEARCH_CONFIGS } from '../../tools/research_configs';
import { compareWithReference } from './research_compare';
import { safetensorsWeights } from './research_weights';

/**
 * The Qwen3-0.6B-shaped random checkpoint (real config: 28 layers, d_model 1024, 16 / 8 heads of
 * 128, q_norm / k_norm, vocabulary padded to 151,936; BF16 safetensors; the real Qwen3 tokenizer)
 * loads from its folder on the CPU backend, and the logits of the last of four tokens equal a float64
 * forward over the file's own bytes (tests/model/research_forward.ts) — four positions, so RoPE, the
 * q/k norms, GQA and the causal softmax all count. Ids include one past the tokenizer (a padded row).
 * 162 s at load 10 (57 s of CPU) (build of the checkpoint, once per machine: ~8 s, 1.2 GB).
 */
const C = RESEARCH_CONFIGS['qwen3-0.6b'];

describe('Qwen3-0.6B research-size checkpoint', () => {
  it('loads from the folder (real tokenizer, no warning); last-token logits over 4 positions equal a float64 forward', async () => {
    const dir = researchCheckpoint('qwen3-0.6b');
    const r = await compareWithReference(dir, C, safetensorsWeights(path.join(dir, 'model.safetensors')), [151644, 872, 198, 151900]);
    console.log(`qwen3-0.6b: max |Δ| ${r.worst.toExponential(2)} of max |logit| ${r.scale.toFixed(2)}; load ${r.seconds.load.toFixed(1)} s, run ${r.seconds.run.toFixed(1)} s, reference ${r.seconds.reference.toFixed(1)} s`);
    expect(r.warnings).toEqual([]);
    expect(r.scale).toBeGreaterThan(0.1);
    expect(r.worst).toBeLessThan(1e-4);
    expect(r.argmax).toBe(r.refArgmax);
  }, 300_000);
});
