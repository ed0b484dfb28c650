import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CpuBackend } from '../../workers/engine/backend/cpu';
import { NodeFiles } from '../../workers/engine/io/node_files';
import { loadTransformer } from '../../workers/engine/model/load';
import type { Transformer } from '../../workers/engine/model/transformer';
import { maxAbsDiff, readReference } from '../shared';
import { differenceTable, fixtureMeta, fixtures, hiddenStateHooks } from '../fixture_walk';
import { greedyWithCache, runCaptured } from '../model_run';

/**
 * Every architecture against Hugging Face transformers' own outputs on a tiny seeded model
 * (../shared/fixtures/README.md): logits, hidden states, attention patterns, greedy generation
 * through the KV cache, and a steering hook, on the CPU reference backend.
 */

/** fixtures/README.md: suggested fp32 tolerance for logits and hidden states (values O(1)–O(10)). */
const TOL = 1e-4;

/** Largest difference measured per fixture and quantity, printed at the end for the report. */
const record = differenceTable();

describe.each(fixtures(['fixtures']).map((f) => [f.arch, f.dir]))('%s-tiny', (arch, dir) => {
  const meta = fixtureMeta(dir);
  const L = meta.n_layers;
  const b = new CpuBackend();
  let model: Transformer;
  beforeAll(async () => {
    model = (await loadTransformer(new NodeFiles(dir), b)).model;
  });
  afterAll(() => b.dispose());

  const hsHooks = hiddenStateHooks(L);
  const patternHooks = Array.from({ length: L }, (_, l) => `blocks.${l}.attn.hook_pattern`);
  const lastBlock = `blocks.${L - 1}.hook_resid_post`;

  /** Max abs diff of each hidden_states[i] slice [S, H] against the hook standing for it. */
  function hiddenDiff(ref: Float32Array, captured: Map<string, Float32Array>): number {
    const per = ref.length / (L + 1);
    return Math.max(...hsHooks.map((h, i) => maxAbsDiff(captured.get(h)!, ref.subarray(i * per, (i + 1) * per))));
  }

  for (const seq of meta.sequences) {
    it(`${seq.name}: logits, hidden_states, resid_post_last_block and every attention pattern match HF within 1e-4`, async () => {
      const ref = readReference(`${dir}/reference/${seq.name}.safetensors`);
      const { logits, captured } = await runCaptured(b, model, seq.input_ids, [...hsHooks, lastBlock, ...patternHooks]);
      expect(record(arch, 'logits', maxAbsDiff(logits, ref.get('logits')!.data))).toBeLessThanOrEqual(TOL);
      expect(record(arch, 'hidden_states', hiddenDiff(ref.get('hidden_states')!.data, captured))).toBeLessThanOrEqual(TOL);
      expect(record(arch, 'resid_post_last', maxAbsDiff(captured.get(lastBlock)!, ref.get('resid_post_last_block')!.data))).toBeLessThanOrEqual(TOL);
      const att = ref.get('attentions')!.data;
      const per = att.length / L;
      const attDiff = Math.max(...patternHooks.map((h, l) => maxAbsDiff(captured.get(h)!, att.subarray(l * per, (l + 1) * per))));
      expect(record(arch, 'attentions', attDiff)).toBeLessThanOrEqual(TOL);
    });

    it(`${seq.name}: greedy decoding through the KV cache reproduces HF generate's ids and step logits`, async () => {
      const ref = readReference(`${dir}/reference/${seq.name}.safetensors`).get('generate_step_logits')!;
      const nNew = ref.shape[0];
      const { ids, stepLogits } = await greedyWithCache(b, model, seq.input_ids, nNew);
      expect(ids).toEqual(seq.generated_ids);
      const V = ref.shape[1];
      const diff = Math.max(...stepLogits.map((row, t) => maxAbsDiff(row, ref.data.subarray(t * V, (t + 1) * V))));
      expect(record(arch, 'step_logits', diff)).toBeLessThanOrEqual(TOL);
    });
  }

  it('steer_seq0: add(α=1, steering_vector) at blocks.1.hook_resid_post on all positions matches the hooked HF forward', async () => {
    const ref = readReference(`${dir}/reference/steer_seq0.safetensors`);
    const v = ref.get('steering_vector')!.data;
    const { logits, captured } = await runCaptured(b, model, meta.sequences[0].input_ids, hsHooks, [
      { hook: 'blocks.1.hook_resid_post', op: { kind: 'add', v, alpha: 1 }, positions: 'all' },
    ]);
    expect(record(arch, 'steer_logits', maxAbsDiff(logits, ref.get('logits')!.data))).toBeLessThanOrEqual(TOL);
    expect(record(arch, 'steer_hidden', hiddenDiff(ref.get('hidden_states')!.data, captured))).toBeLessThanOrEqual(TOL);
  });
});
