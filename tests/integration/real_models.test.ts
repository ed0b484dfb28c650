import * as fs from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CpuBackend } from '../../workers/engine/backend/cpu';
import { NodeFiles } from '../../workers/engine/io/node_files';
import { loadTransformer } from '../../workers/engine/model/load';
import type { Transformer } from '../../workers/engine/model/transformer';
import { maxAbsDiff, readReference, sharedPath } from '../shared';
import { runCaptured } from '../model_run';

/**
 * The two real pretrained llama2.c models against their golden references
 * (../shared/models/<model>/reference/README.md: a float64 numpy forward, cross-checked with
 * llama2.c run.c and HF transformers), on the CPU reference backend. KV-cache decoding, step by
 * step: kv_decode.test.ts.
 */

/** reference/README.md: a correct float32 implementation lands within about 1e-4 of `logits`. */
const TOL = 1e-4;

interface Prompt { name: string; input_ids: number[]; greedy_ids: number[]; sequence_ids: number[]; n_positions: number }

const measured = new Map<string, Record<string, number>>();
function record(model: string, quantity: string, diff: number): number {
  const row = measured.get(model) ?? {};
  row[quantity] = Math.max(row[quantity] ?? 0, diff);
  measured.set(model, row);
  return diff;
}
afterAll(() => console.table(Object.fromEntries([...measured].map(([k, v]) => [k, Object.fromEntries(Object.entries(v).map(([q, d]) => [q, d.toExponential(2)]))]))));

describe.each(['stories260K', 'aidreams260K'])('%s', (name) => {
  const dir = sharedPath('models', name);
  const ref = JSON.parse(fs.readFileSync(`${dir}/reference/reference.json`, 'utf8')) as { n_gen: number; prompts: Prompt[] };
  const b = new CpuBackend();
  let model: Transformer;
  beforeAll(async () => {
    model = (await loadTransformer(new NodeFiles(dir), b)).model;
  });
  afterAll(() => b.dispose());

  for (const p of ref.prompts) {
    it(`${p.name}: logits, embeddings, resid_post of every layer, final_norm and attn_probs of every layer/head match within 1e-4`, async () => {
      const arrays = readReference(`${dir}/reference/${p.name}.safetensors`);
      const L = model.spec.nLayers;
      const residHooks = Array.from({ length: L }, (_, l) => `blocks.${l}.hook_resid_post`);
      const patternHooks = Array.from({ length: L }, (_, l) => `blocks.${l}.attn.hook_pattern`);
      const ids = p.sequence_ids.slice(0, p.n_positions);
      const { logits, captured } = await runCaptured(b, model, ids, ['hook_embed', ...residHooks, 'ln_final.hook_normalized', ...patternHooks]);
      /** Max abs diff of per-layer hooks against the reference's [L, ...] array. */
      const perLayer = (hooks: string[], key: string) => {
        const all = arrays.get(key)!.data, per = all.length / L;
        return Math.max(...hooks.map((h, l) => maxAbsDiff(captured.get(h)!, all.subarray(l * per, (l + 1) * per))));
      };
      expect(record(name, 'logits', maxAbsDiff(logits, arrays.get('logits')!.data))).toBeLessThanOrEqual(TOL);
      expect(record(name, 'embeddings', maxAbsDiff(captured.get('hook_embed')!, arrays.get('embeddings')!.data))).toBeLessThanOrEqual(TOL);
      expect(record(name, 'resid_post', perLayer(residHooks, 'resid_post'))).toBeLessThanOrEqual(TOL);
      expect(record(name, 'final_norm', maxAbsDiff(captured.get('ln_final.hook_normalized')!, arrays.get('final_norm')!.data))).toBeLessThanOrEqual(TOL);
      expect(record(name, 'attn_probs', perLayer(patternHooks, 'attn_probs'))).toBeLessThanOrEqual(TOL);
    });
  }
});
