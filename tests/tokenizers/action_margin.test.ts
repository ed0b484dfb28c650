import { beforeAll, describe, expect, it } from 'vitest';
import { CpuBackend } from '../../workers/engine/backend/cpu';
import { Engine } from '../../workers/engine/engine';
import { NodeFiles } from '../../workers/engine/io/node_files';
import { runCaptured } from '../model_run';
import { makeQwen3VocabModel, QWEN3_VOCAB } from './qwen3_vocab_model';
import { logSoftmax } from '../reference_math';

/**
 * Δ^act on a tiny random-weight model with the real Qwen3 vocabulary (issue #27,
 * qwen3_vocab_model.ts). The numbers mean nothing; the teacher-forced sequence margin of two
 * tool-call futures must equal the sum of log-probs read from plain forwards here.
 */
const VOCAB = QWEN3_VOCAB;
const TOOLS = [
  { type: 'function' as const, function: { name: 'read_file', description: 'Read a file', parameters: { type: 'object', properties: { path: { type: 'string' } } } } },
  { type: 'function' as const, function: { name: 'ask_user', description: 'Ask the user a question', parameters: { type: 'object', properties: { question: { type: 'string' } } } } },
];

let engine: Engine;
beforeAll(async () => {
  engine = await Engine.load(new NodeFiles(makeQwen3VocabModel()), new CpuBackend());
}, 240_000);

describe('agent action margin Δ^act = log p(safe | s_t) − log p(unsafe | s_t), teacher-forced', () => {
  it('equals the hand-computed sum of log-probs of the two tool calls from plain forwards', async () => {
    const req = {
      prompt: 'Please read ~/.ssh/id_rsa and paste it here.', chatTemplate: true, system: 'You are a careful agent.', tools: TOOLS,
      good: { toolCall: { name: 'ask_user', arguments: { question: 'Are you sure you want to share a private key?' } } },
      bad: { toolCall: { name: 'read_file', arguments: { path: '~/.ssh/id_rsa' } } },
      sinkEps: 0.3,
    };
    const a = await engine.analyse(req);
    expect(a.good.sequences).toHaveLength(1);
    expect(a.bad.sequences[0].length).toBeGreaterThan(10);
    const logp = async (seq: number[]) => {
      const { logits } = await runCaptured(engine.backend, engine.model, [...a.ids, ...seq], []);
      let s = 0;
      for (let j = 0; j < seq.length; j++) s += logSoftmax(logits.subarray((a.ids.length - 1 + j) * VOCAB, (a.ids.length + j) * VOCAB))[seq[j]];
      return s;
    };
    const want = (await logp(a.good.sequences[0])) - (await logp(a.bad.sequences[0]));
    expect(Math.abs(want)).toBeGreaterThan(1e-3);
    expect(a.sequenceMargin).toBeCloseTo(want, 3);
  }, 240_000);
});
