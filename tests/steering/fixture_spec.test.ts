import * as fs from 'node:fs';
import { describe, expect, it } from 'vitest';
import { SUPPORTED_MODEL_TYPES } from '../../workers/engine/arch/registry';
import { CpuBackend } from '../../workers/engine/backend/cpu';
import { Engine } from '../../workers/engine/engine';
import { NodeFiles } from '../../workers/engine/io/node_files';
import { parseSpec, toIntervention } from '../../workers/engine/steering/spec';
import { maxAbsDiff, readReference } from '../shared';
import { fixtureMeta, fixtures } from '../fixture_walk';

/**
 * steer_seq0 (../shared/fixtures/README.md) through the JSON spec path that the runner and the UI
 * use: {"hook":"blocks.1.hook_resid_post","type":"add","vector":[…],"alpha":1} → parseSpec →
 * toIntervention → Engine.run, against Hugging Face's forward with a hook adding v to the output of
 * block 1, for every fixture directory.
 */
const TOL = 1e-4; // fixtures/README.md: suggested fp32 tolerance for logits and hidden states
/** The dense fixtures and the mixture-of-experts ones (../shared/fixtures-moe, same layout), as the reference tests walk them. */
const walked = fixtures();
const paths = walked.map((f) => f.dir);
const dirs = walked.map((f) => f.name);

describe('steer_seq0 through the intervention JSON spec', () => {
  it('finds all nine dense fixtures and the three mixture-of-experts ones', () => {
    expect(dirs.filter((d) => d.startsWith('fixtures/'))).toHaveLength(9);
    expect(dirs.filter((d) => d.startsWith('fixtures-moe/'))).toEqual(['fixtures-moe/mixtral-tiny', 'fixtures-moe/olmoe-tiny', 'fixtures-moe/qwen2_moe-tiny']);
  });

  describe.each(dirs)('%s', (dir) => {
    it('add at blocks.1.hook_resid_post reproduces HF logits and hidden_states within 1e-4', async () => {
      const path = paths[dirs.indexOf(dir)];
      const modelType = JSON.parse(fs.readFileSync(`${path}/config.json`, 'utf8')).model_type;
      if (!SUPPORTED_MODEL_TYPES.includes(modelType)) {
        throw new Error(`${dir}: model_type "${modelType}" is not registered in workers/engine/arch/registry.ts (supported: ${SUPPORTED_MODEL_TYPES.join(', ')})`);
      }
      const b = new CpuBackend();
      const engine = await Engine.load(new NodeFiles(path), b);
      try {
        const meta = fixtureMeta(path);
        const ref = readReference(`${path}/reference/steer_seq0.safetensors`);
        const json = JSON.stringify({ hook: 'blocks.1.hook_resid_post', type: 'add', vector: Array.from(ref.get('steering_vector')!.data), alpha: 1 });
        const ids = meta.sequences[0].input_ids;
        const iv = toIntervention(parseSpec(JSON.parse(json)), engine.spec, { nPrompt: ids.length });
        const L = meta.n_layers;
        // HF hidden_states[i]: embedding output, resid_post of blocks 0..L-2, final-norm output.
        const hooks = ['blocks.0.hook_resid_pre', ...Array.from({ length: L - 1 }, (_, l) => `blocks.${l}.hook_resid_post`), 'ln_final.hook_normalized'];
        const { logits, captured } = await engine.run(ids, { capture: hooks, interventions: [iv] });
        expect(maxAbsDiff(logits, ref.get('logits')!.data)).toBeLessThanOrEqual(TOL);
        const hs = ref.get('hidden_states')!.data;
        const per = hs.length / (L + 1);
        hooks.forEach((h, i) => expect(maxAbsDiff(captured.get(h)!, hs.subarray(i * per, (i + 1) * per)), h).toBeLessThanOrEqual(TOL));
        // Not vacuous: the unsteered forward is far from the steered reference.
        const plain = await engine.run(ids);
        expect(maxAbsDiff(plain.logits, ref.get('logits')!.data)).toBeGreaterThan(100 * TOL);
      } finally {
        engine.dispose();
      }
    });
  });
});
