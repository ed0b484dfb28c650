import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CpuBackend } from '../../workers/engine/backend/cpu';
import { Engine } from '../../workers/engine/engine';
import { NonFiniteError } from '../../workers/engine/model/non_finite';
import { patchingGrid } from '../../workers/engine/studies/patching';
import { interventionWindow } from '../../workers/engine/studies/window';
import { BranchExplorer } from '../../workers/engine/studies/branching/explorer';
import { runBatch } from '../../workers/engine/studies/batch/batch';
import { doseResponse } from '../../workers/engine/studies/sweep';
import { toIntervention } from '../../workers/engine/steering/spec';
import type { Intervention } from '../../workers/engine/model/intervention';
import { memory, withTensors } from './model_variants';

/**
 * Issue #8 fault 2 as a kind: every analysis that turns logits into numbers refuses NaN/Inf with a
 * NonFiniteError naming the hook, layer and position of the first non-finite activation — the
 * prompt analysis, generation (next token chosen on the device), dose sweeps, activation patching,
 * intervention windows, branch trees and batches — on the WASM SIMD matmul and the scalar one.
 * The fault: an `add` of α = 1e39 at blocks.2.hook_resid_post, position 4 (|α·v| > 3.4e38 = Inf).
 */
const req = { prompt: 'Once upon a time there was a girl', good: { text: ' who' }, bad: { text: ' and' } };
const SITE = /appears at blocks\.2\.hook_resid_post \(layer 2\), position 4/;
const v = Array.from({ length: 64 }, (_, i) => (i === 3 ? 1 : 0));

for (const [label, backend] of [['WASM SIMD matmul', () => new CpuBackend()], ['scalar matmul', () => new CpuBackend(undefined, { simd: false })]] as const) {
  describe(`non-finite results are refused on every path (${label})`, () => {
    let e: Engine;
    let overflow: Intervention;
    let T: number;
    beforeAll(async () => {
      e = await Engine.load(memory(withTensors(() => {})), backend());
      T = e.encodePrompt(req).length;
      overflow = toIntervention({ hook: 'blocks.2.hook_resid_post', type: 'add', vector: v, alpha: 1e39, positions: [4] }, e.spec, { nPrompt: T });
    });
    afterAll(() => e.dispose());

    it('analyse and generate (device next-token path)', async () => {
      expect(e.backend.description).toMatch(label.startsWith('WASM') ? /WASM SIMD/ : /CPU backend \(TypeScript\)/);
      const err = await e.analyse({ ...req, interventions: [overflow] }).catch((x) => x);
      expect(err).toBeInstanceOf(NonFiniteError);
      expect(err.message).toMatch(SITE);
      await expect(e.generate({ ...req, maxNewTokens: 3, interventions: [overflow] })).rejects.toThrow(SITE);
      // greedy and top-k sampling both decide on the device: neither may turn NaN into a token
      await expect(e.generate({ ...req, maxNewTokens: 3, temperature: 0.8, topK: 5, interventions: [overflow] })).rejects.toThrow(NonFiniteError);
    });

    it('a dose sweep whose largest dose overflows', async () => {
      const sweep = doseResponse(e, { ...req, template: { hook: 'blocks.{l}.hook_resid_post', type: 'add', vector: v, positions: [4] }, layers: [2], doses: [1, 1e39] });
      await expect(sweep).rejects.toThrow(SITE);
    });

    it('an intervention window (regenerations through the prefix KV cache)', async () => {
      const w = interventionWindow(e, { ...req, interventions: [overflow], maxNewTokens: 3 });
      await expect(w).rejects.toThrow(NonFiniteError);
      await expect(interventionWindow(e, { ...req, interventions: [overflow], maxNewTokens: 3 })).rejects.toThrow(SITE);
    });

    it('a steered branch tree', async () => {
      const tree = BranchExplorer.start(e, { ...req, maxNewTokens: 3 }, { temperature: 0, topK: 0, seed: 1, steered: true }, [overflow]);
      await expect(tree).rejects.toThrow(SITE);
    });

    it('a batch row says why it has no numbers; the other rows are computed', async () => {
      const r = await runBatch(e, {
        template: { prompt: 'Once upon a time there was a {who}', good: ' who', bad: ' and' },
        values: { columns: ['who'], rows: [{ who: 'girl' }, { who: 'dog' }] },
        interventions: (p) => (p.prompt.endsWith('girl') ? [overflow] : []),
      });
      expect(r.rows[0].error).toMatch(SITE);
      expect(Object.values(r.rows[0].metrics).every((x) => x === null)).toBe(true);
      expect(r.rows[1].error).toBeUndefined();
      expect(Number.isFinite(r.rows[1].metrics.final_margin)).toBe(true);
    });
  });
}

describe('non-finite activations from the weights, through patching', () => {
  it('activation patching refuses a model whose layer 1 overflows, naming blocks.1.hook_mlp_out', async () => {
    const files = withTensors((ts) => { ts.find((t) => t.name === 'model.layers.1.mlp.down_proj.weight')!.data.fill(3e38); });
    const e = await Engine.load(memory(files), new CpuBackend());
    try {
      const g = patchingGrid(e, { clean: 'Lily and Tom went to the park', corrupt: 'Tom and Lily went to the park', good: { text: ' Tom' }, bad: { text: ' Lily' }, hook: 'resid_pre' });
      await expect(g).rejects.toThrow(/blocks\.1\.hook_mlp_out \(layer 1\), position 0/);
    } finally {
      e.dispose();
    }
  });
});
