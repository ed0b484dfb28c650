import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CpuBackend } from '../../workers/engine/backend/cpu';
import { Engine } from '../../workers/engine/engine';
import { NodeFiles } from '../../workers/engine/io/node_files';
import { modelRouteDivergence } from '../../workers/engine/studies/model_route_divergence';
import { sharedPath } from '../shared';
import { runCaptured } from '../model_run';

/**
 * Routing divergence between two models on one prompt (studies/model_route_divergence.ts, the
 * Compare view's A and B) on mixtral-tiny: a model against a copy of itself gives JS 0 and Jaccard
 * 1 exactly; against a copy whose layer-0 router is perturbed it equals float64 JS computed here from
 * hook_router_logits of plain forwards (and the later layers move too); a dense B is refused.
 */
const dir = sharedPath('fixtures-moe', 'mixtral-tiny');
const PROMPT = 'Once upon a time there';

describe('model routing divergence on mixtral-tiny', () => {
  const b = new CpuBackend();
  let A: Engine, B: Engine;
  beforeAll(async () => { A = await Engine.load(new NodeFiles(dir), b); B = await Engine.load(new NodeFiles(dir), b); });
  afterAll(() => b.dispose());

  const probs = (row: Float32Array) => {
    const m = Math.max(...row);
    const e = Array.from(row, (v) => Math.exp(v - m));
    const z = e.reduce((s, v) => s + v, 0);
    return e.map((v) => v / z);
  };
  const kl = (p: number[], q: number[]) => p.reduce((s, v, i) => s + (v > 0 ? v * Math.log(v / q[i]) : 0), 0);

  it('is exactly 0 (JS) and 1 (Jaccard) against an identical model', async () => {
    const d = (await modelRouteDivergence(A, B, { prompt: PROMPT }))!;
    expect(d.map((x) => x.layer)).toEqual([0, 1, 2]);
    for (const x of d) {
      expect(Array.from(x.js).every((v) => v === 0)).toBe(true);
      expect(Array.from(x.jaccard).every((v) => v === 1)).toBe(true);
    }
  });

  it('equals float64 JS of the router hooks against a model with a perturbed router', async () => {
    const mw = B.model.weights.blocks[0].moe!;
    const w = await b.read(mw.router);
    const old = mw.router;
    (mw as { router: typeof old }).router = b.upload(w.map((v, i) => v * (1 + 0.5 * Math.sin(i))), [...old.shape]);
    try {
      const d = (await modelRouteDivergence(A, B, { prompt: PROMPT }))!;
      const ids = A.encodePrompt({ prompt: PROMPT }), E = 4;
      const hooks = [0, 1, 2].map((l) => `blocks.${l}.mlp.hook_router_logits`);
      const ra = await runCaptured(b, A.model, ids, hooks), rb = await runCaptured(b, B.model, ids, hooks);
      let moved = 0;
      hooks.forEach((_, i) => {
        for (let t = 0; t < ids.length; t++) {
          const p = probs(ra.captured.get(hooks[i])!.subarray(t * E, (t + 1) * E)), q = probs(rb.captured.get(hooks[i])!.subarray(t * E, (t + 1) * E));
          const m = p.map((v, j) => (v + q[j]) / 2);
          const js = kl(p, m) / 2 + kl(q, m) / 2;
          expect(d[i].js[t]).toBeCloseTo(js, 9);
          if (js > 1e-6) moved++;
        }
      });
      expect(moved).toBeGreaterThan(ids.length); // layer 0 and, through the residual, later layers
    } finally {
      b.release(mw.router);
      (mw as { router: typeof old }).router = old;
    }
  });

  it('refuses a dense model B', async () => {
    const dense = await Engine.load(new NodeFiles(sharedPath('fixtures', 'llama-tiny')), b);
    await expect(modelRouteDivergence(A, dense, { prompt: PROMPT })).rejects.toThrow(/same routers/);
  });
});
