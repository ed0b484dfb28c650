import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CpuBackend } from '../../workers/engine/backend/cpu';
import { Engine } from '../../workers/engine/engine';
import { NodeFiles } from '../../workers/engine/io/node_files';
import { logSoftmax, realModel } from '../reference_math';
import { mulberry32, referenceSample } from '../sampling_reference';

/**
 * Engine.generate's sampling on stories260K: the first token drawn for a seed is the documented
 * sampler (analysis/sampling.test.ts: an independent implementation) applied to the reference's
 * last-prompt-position logits with the seed's first uniform.
 */
describe('Engine.generate samples its first token from the reference distribution', () => {
  const m = realModel('stories260K');
  const p = m.ref.prompts[2]; // "The cat was very": a flat top 5
  let e: Engine;
  beforeAll(async () => { e = await Engine.load(new NodeFiles(m.dir), new CpuBackend()); });
  afterAll(() => e.dispose());

  it('for 40 seeds at temperature 0.8, top-k 5, the first id equals the definition applied to the reference logits', async () => {
    const lp = logSoftmax((p as unknown as { last_prompt_position_logits: number[] }).last_prompt_position_logits);
    const got: number[] = [], want: number[] = [];
    for (let seed = 0; seed < 40; seed++) {
      const g = await e.generate({ prompt: p.prompt, good: { ids: [[3]] }, bad: { ids: [[4]] }, maxNewTokens: 1, temperature: 0.8, topK: 5, seed });
      got.push(g.ids[0]);
      want.push(referenceSample(lp, 0.8, 5, mulberry32(seed)()));
    }
    expect(got).toEqual(want);
    expect(new Set(got).size).toBeGreaterThan(2); // the draws really vary with the seed
  });
});
