import { describe, expect, it } from 'vitest';
import { routeStudy } from '../../workers/engine/studies/route';
import { expertPaths } from '../../workers/engine/analysis/expert_paths';
import { runCaptured } from '../model_run';
import { moeFixture } from './moe_fixture';

/**
 * Expert paths (analysis/expert_paths.ts, through studies/route.ts): every token's top-1 expert per
 * sparse layer over the prompt and a prompt set, grouped. Against counts made here from plain
 * forwards' hook_expert_indices on olmoe-tiny (every layer sparse), and on a hand-written input.
 */
describe('expert paths', () => {
  const f = moeFixture('olmoe');

  it('counts each token\'s top-1 expert path over the prompt and the set, as plain forwards give them', async () => {
    const prompts = ['The quick brown fox', 'A dog ran to the car', 'Once upon a time there was'];
    const r = await routeStudy(f.engine, { prompt: prompts[0], set: prompts.slice(1) });
    expect(r.pathPrompts).toBe(3);
    const k = f.engine.spec.moe!.topK, L = f.engine.spec.nLayers;
    const want = new Map<string, number>();
    let tokens = 0;
    for (const p of prompts) {
      const ids = f.engine.encodePrompt({ prompt: p });
      const run = await runCaptured(f.b, f.engine.model, ids, Array.from({ length: L }, (_, l) => `blocks.${l}.mlp.hook_expert_indices`));
      for (let t = 0; t < ids.length; t++) {
        const key = Array.from({ length: L }, (_, l) => run.captured.get(`blocks.${l}.mlp.hook_expert_indices`)![t * k]).join(',');
        want.set(key, (want.get(key) ?? 0) + 1);
        tokens++;
      }
    }
    expect(r.paths.reduce((s, p) => s + p.count, 0)).toBe(tokens);
    expect(new Map(r.paths.map((p) => [p.path.join(','), p.count]))).toEqual(want);
    for (let i = 1; i < r.paths.length; i++) expect(r.paths[i].count).toBeLessThanOrEqual(r.paths[i - 1].count);
  });

  it('groups a hand-written routing: top-1 per layer, examples in order, most frequent first; refuses a ragged layer', () => {
    // 3 tokens, 2 layers, k = 2: paths (1,0), (2,3), (1,0)
    const paths = expertPaths([{ tokens: ['a', 'b', 'c'], expertIndices: [[1, 0, 2, 1, 1, 3], [0, 2, 3, 0, 0, 1]] }], 2);
    expect(paths).toEqual([{ path: [1, 0], count: 2, examples: ['a', 'c'] }, { path: [2, 3], count: 1, examples: ['b'] }]);
    expect(() => expertPaths([{ tokens: ['a'], expertIndices: [[1]] }], 2)).toThrow(/holds 1 expert ids, not 1 tokens × k = 2/);
  });
});
