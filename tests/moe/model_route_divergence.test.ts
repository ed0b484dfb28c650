import { beforeAll, describe, expect, it } from 'vitest';
import { Engine } from '../../workers/engine/engine';
import { NodeFiles } from '../../workers/engine/io/node_files';
import { modelRouteDivergence } from '../../workers/engine/studies/model_route_divergence';
import { sharedPath } from '../shared';
import { moeFixture } from './moe_fixture';
import { routerJs } from './moe_reference';
import { runCaptured } from '../model_run';

/**
 * Routing divergence between two models on one prompt (studies/model_route_divergence.ts, the
 * Compare view's A and B) on mixtral-tiny: a model against a copy of itself gives JS 0 and Jaccard
 * 1 exactly; against a copy whose layer-0 router is perturbed it equals float64 JS computed here from
 * hook_router_logits of plain forwards (and the later layers move too); a dense B is refused.
 */
const PROMPT = 'Once upon a time there';

describe('model routing divergence on mixtral-tiny', () => {
  const f = moeFixture('mixtral');
  let B: Engine;
  beforeAll(async () => { B = await Engine.load(new NodeFiles(f.dir), f.b); });

  it('is exactly 0 (JS) and 1 (Jaccard) against an identical model', async () => {
    const d = (await modelRouteDivergence(f.engine, B, { prompt: PROMPT }))!;
    expect(d.map((x) => x.layer)).toEqual([0, 1, 2]);
    for (const x of d) {
      expect(Array.from(x.js).every((v) => v === 0)).toBe(true);
      expect(Array.from(x.jaccard).every((v) => v === 1)).toBe(true);
    }
  });

  it('equals float64 JS of the router hooks against a model with a perturbed router', async () => {
    const mw = B.model.weights.blocks[0].moe!;
    const w = await f.b.read(mw.router);
    const old = mw.router;
    (mw as { router: typeof old }).router = f.b.upload(w.map((v, i) => v * (1 + 0.5 * Math.sin(i))), [...old.shape]);
    try {
      const d = (await modelRouteDivergence(f.engine, B, { prompt: PROMPT }))!;
      const ids = f.engine.encodePrompt({ prompt: PROMPT }), E = 4;
      const hooks = [0, 1, 2].map((l) => `blocks.${l}.mlp.hook_router_logits`);
      const ra = await runCaptured(f.b, f.engine.model, ids, hooks), rb = await runCaptured(f.b, B.model, ids, hooks);
      let moved = 0;
      hooks.forEach((_, i) => {
        for (let t = 0; t < ids.length; t++) {
          const js = routerJs(ra.captured.get(hooks[i])!.subarray(t * E, (t + 1) * E), rb.captured.get(hooks[i])!.subarray(t * E, (t + 1) * E));
          expect(d[i].js[t]).toBeCloseTo(js, 9);
          if (js > 1e-6) moved++;
        }
      });
      expect(moved).toBeGreaterThan(ids.length); // layer 0 and, through the residual, later layers
    } finally {
      f.b.release(mw.router);
      (mw as { router: typeof old }).router = old;
    }
  });

  it('refuses a dense model B', async () => {
    const dense = await Engine.load(new NodeFiles(sharedPath('fixtures', 'llama-tiny')), f.b);
    await expect(modelRouteDivergence(f.engine, dense, { prompt: PROMPT })).rejects.toThrow(/same routers/);
  });
});
