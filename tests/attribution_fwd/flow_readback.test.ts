import { describe, expect, it } from 'vitest';
import { CpuBackend } from '../../workers/engine/backend/cpu';
import type { Tensor } from '../../workers/engine/backend/backend';
import { Engine } from '../../workers/engine/engine';
import { NodeFiles } from '../../workers/engine/io/node_files';
import { backendProducts, finalResidual, flowHooks, flowSweep } from '../../workers/engine/studies/flow';
import { hostWeights, marginReadout, unembedRows } from '../../workers/engine/studies/forward_weights';
import { sharedPath } from '../shared';

/**
 * The flow's hand-back sweeps (studies/flow.ts flowSweep with perHead false: the pattern sums on the
 * backend through FlowProducts.valueDirection) against the per-head sweep the main target uses (r
 * read back, pattern sums in float64 on the host): the same credit per token and constants, while
 * the bytes read back per sweep drop from Σ_l live·(H·d_head + d_model) floats (r and dn per layer)
 * to Σ_l live·d_model (+ T for a model with b_V) — counted here on the backend's read(), against
 * those sums written from the model's shape. A decision at position T − 2 (live = T − 1 rows, as a
 * hand-back of the last generated token), on stories260K (RMSNorm), gpt2-tiny (LayerNorm, b_V,
 * learned positions) and qwen2-tiny (GQA, b_V).
 */
const MODELS: [string, string[]][] = [['stories260K', ['models', 'stories260K']], ['gpt2-tiny', ['fixtures', 'gpt2-tiny']], ['qwen2-tiny', ['fixtures', 'qwen2-tiny']]];

describe('flow hand-back sweeps: pattern sums on the backend', () => {
  for (const [name, where] of MODELS) {
    it(`${name}: equal credit and constants to the per-head sweep, with fewer bytes read back`, async () => {
      const b = new CpuBackend();
      const engine = await Engine.load(new NodeFiles(sharedPath(...(where as [string, string]))), b);
      try {
        const s = engine.spec;
        const ids = engine.encodePrompt({ prompt: 'Lily and Tom went to the park. Lily gave the ball to' });
        const T = ids.length, t = T - 2, live = t + 1;
        const run = await engine.run(ids, { capture: flowHooks(s) });
        const hw = await hostWeights(engine);
        const cols = [5, 9];
        const ro = marginReadout(finalResidual(s, run.captured, t), hw.lnFinal, await unembedRows(engine, cols), cols, [5], [9]);
        const products = backendProducts(engine);
        let bytes = 0;
        const read = b.read.bind(b);
        b.read = async (x: Tensor) => { const out = await read(x); bytes += out.byteLength; return out; };
        const perHead = await flowSweep(s, hw, products, run.captured, T, t, ro.dir, ro.constant, true);
        const before = bytes;
        bytes = 0;
        const onBackend = await flowSweep(s, hw, products, run.captured, T, t, ro.dir, ro.constant, false);
        const after = bytes;
        const L = s.nLayers, HD = s.nHeads * s.dHead, D = s.dModel;
        const hasBv = hw.blocks.some((x) => x.bv);
        console.log(`${name}: T ${T}, readback per sweep ${before} → ${after} bytes (${(before / after).toFixed(2)}×)`);
        expect(before).toBe(4 * L * live * (HD + D));
        expect(after).toBe(4 * L * (live * D + (hasBv ? T : 0)));
        let scale = 0, diff = 0;
        for (let j = 0; j < T; j++) {
          scale = Math.max(scale, Math.abs(perHead.credit[j]));
          diff = Math.max(diff, Math.abs(perHead.credit[j] - onBackend.credit[j]));
        }
        expect(scale).toBeGreaterThan(1e-3); // the sweep credits something
        expect(diff).toBeLessThan(1e-6 * Math.max(1, scale));
        expect(Math.abs(perHead.bias - onBackend.bias)).toBeLessThan(1e-6 * Math.max(1, Math.abs(perHead.bias)));
        for (let j = live; j < T; j++) expect(onBackend.credit[j]).toBe(0);
      } finally {
        engine.dispose();
      }
    }, 60_000);
  }
});
