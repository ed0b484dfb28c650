import { describe, expect, it } from 'vitest';
import { routeStudy } from '../../workers/engine/studies/route';
import { runCaptured } from '../model_run';
import { runCli } from '../cli_run';
import { moeFixture } from './moe_fixture';
import { routerJs } from './moe_reference';

/**
 * Routing divergence between two prompts (studies/route.ts promptB, analysis/route_divergence.ts)
 * on mixtral-tiny against an independent computation from hook_router_logits / hook_expert_indices
 * captures of plain forwards: float64 softmax, JS(p, q) = ½KL(p‖m) + ½KL(q‖m) in nats and the
 * Jaccard overlap written here; a prompt against itself gives 0 and 1 exactly; `branchpoint route
 * --prompt-b` prints the same and refuses prompts of different lengths before any forward.
 */
const A = 'Once upon a time there', B = 'Twice upon a dog there'; // 13 tokens each (checked in the test)

describe('routing divergence on mixtral-tiny', () => {
  const f = moeFixture('mixtral');

  it('equals float64 JS and Jaccard from the router hooks of two plain forwards', async () => {
    const idsA = f.engine.encodePrompt({ prompt: A }), idsB = f.engine.encodePrompt({ prompt: B });
    expect(idsB.length).toBe(idsA.length);
    const r = await routeStudy(f.engine, { prompt: A, promptB: B });
    const { nExperts: E, topK: k, sparse } = f.engine.spec.moe!;
    const layers = sparse.flatMap((s, l) => (s ? [l] : []));
    const hooks = layers.flatMap((l) => [`blocks.${l}.mlp.hook_router_logits`, `blocks.${l}.mlp.hook_expert_indices`]);
    const ra = await runCaptured(f.b, f.engine.model, idsA, hooks), rb = await runCaptured(f.b, f.engine.model, idsB, hooks);
    expect(r.divergence!.map((x) => x.layer)).toEqual(layers);
    let someDiffer = false;
    layers.forEach((l, i) => {
      const la = ra.captured.get(`blocks.${l}.mlp.hook_router_logits`)!, lb = rb.captured.get(`blocks.${l}.mlp.hook_router_logits`)!;
      const ia = ra.captured.get(`blocks.${l}.mlp.hook_expert_indices`)!, ib = rb.captured.get(`blocks.${l}.mlp.hook_expert_indices`)!;
      for (let t = 0; t < idsA.length; t++) {
        expect(r.divergence![i].js[t]).toBeCloseTo(routerJs(la.subarray(t * E, (t + 1) * E), lb.subarray(t * E, (t + 1) * E)), 9);
        const sa = Array.from(ia.subarray(t * k, (t + 1) * k)), sb = Array.from(ib.subarray(t * k, (t + 1) * k));
        const inter = sa.filter((x) => sb.includes(x)).length;
        expect(r.divergence![i].jaccard[t]).toBe(inter / (2 * k - inter));
        if (inter < k) someDiffer = true;
      }
    });
    expect(someDiffer).toBe(true); // the two prompts route differently somewhere
  });

  it('is 0 (JS) and 1 (Jaccard) exactly for a prompt against itself', async () => {
    const r = await routeStudy(f.engine, { prompt: A, promptB: A });
    for (const x of r.divergence!) {
      expect(Array.from(x.js).every((v) => v === 0)).toBe(true);
      expect(Array.from(x.jaccard).every((v) => v === 1)).toBe(true);
    }
  });

  it('route --prompt-b prints route_divergence and refuses prompts of different lengths', async () => {
    const r = await routeStudy(f.engine, { prompt: A, promptB: B });
    const out = await runCli(['route', '--model', f.dir, '--prompt', A, '--prompt-b', B]);
    expect(out.code).toBe(0);
    const j = JSON.parse(out.out) as { route_divergence: { layer: number; jaccard: number[]; js: number[] }[] };
    expect(j.route_divergence.map((x) => x.js)).toEqual(r.divergence!.map((x) => Array.from(x.js)));
    const bad = await runCli(['route', '--model', f.dir, '--prompt', A, '--prompt-b', 'Hi']);
    expect(bad.code).not.toBe(0);
    expect(bad.err).toMatch(/prompt B has \d+ tokens, the prompt \d+/);
  });
});
