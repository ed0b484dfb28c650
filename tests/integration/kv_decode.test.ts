import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CpuBackend } from '../../workers/engine/backend/cpu';
import { Engine } from '../../workers/engine/engine';
import { NodeFiles } from '../../workers/engine/io/node_files';
import type { TokenEvent } from '../../workers/engine/api';
import { greedyWithCache } from '../model_run';
import { F32_TOL, logSoftmax, maxDiff, realModel } from '../reference_math';

/**
 * KV-cache decoding on both real models, step by step: the logits of decode step k (one token at
 * position n_prompt + k − 1 reading the cache) must equal the reference's full-sequence logits row
 * n_prompt − 1 + k (reference/README.md: row t predicts token t + 1; the greedy ids are the
 * reference's, so the sequences coincide). Comparing logits, not only argmax ids, catches a RoPE
 * offset or a stale cache row that leaves the greedy ids unchanged.
 */
describe.each(['stories260K', 'aidreams260K'] as const)('%s', (name) => {
  const m = realModel(name);
  let e: Engine;
  beforeAll(async () => { e = await Engine.load(new NodeFiles(m.dir), new CpuBackend()); });
  afterAll(() => e.dispose());

  describe.each(m.ref.prompts.map((p) => [p.name, p] as const))('%s', (_, p) => {
    const logits = m.arrays(p).get('logits')!.data;
    const row = (k: number) => logits.subarray((p.n_prompt - 1 + k) * m.V, (p.n_prompt + k) * m.V);

    it(`every one of the ${m.ref.n_gen} decode steps' logits matches the reference row within 1e-4`, async () => {
      const { ids, stepLogits } = await greedyWithCache(e.backend, e.model, p.input_ids, m.ref.n_gen);
      expect(ids).toEqual(p.greedy_ids);
      const worst = Math.max(...stepLogits.map((l, k) => maxDiff(l, row(k))));
      expect(worst).toBeLessThanOrEqual(F32_TOL);
    });

    it('Engine.generate: greedy ids, each step\'s margin Δ = log p(good) − log p(bad) and the chosen token\'s log p', async () => {
      const good = [p.greedy_ids[1]], bad = [p.greedy_ids[2]];
      const events: TokenEvent[] = [];
      const g = await e.generate({ prompt: p.prompt, good: { ids: [good] }, bad: { ids: [bad] }, maxNewTokens: m.ref.n_gen, stopAtEos: false }, (ev) => events.push(ev));
      expect(g.ids).toEqual(p.greedy_ids);
      const lps = g.ids.map((_, k) => logSoftmax(row(k)));
      expect(maxDiff(g.margins, lps.map((lp) => lp[good[0]] - lp[bad[0]]))).toBeLessThanOrEqual(F32_TOL);
      expect(events.map((ev) => ev.step)).toEqual(g.ids.map((_, k) => k));
      expect(maxDiff(events.map((ev) => ev.logProb), lps.map((lp, k) => lp[g.ids[k]]))).toBeLessThanOrEqual(F32_TOL);
    });
  });
});
