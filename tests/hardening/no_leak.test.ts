import { afterAll, describe, expect, it } from 'vitest';
import { CpuBackend } from '../../workers/engine/backend/cpu';
import { Engine } from '../../workers/engine/engine';
import { NodeFiles } from '../../workers/engine/io/node_files';
import { toIntervention } from '../../workers/engine/steering/spec';
import { doseResponse } from '../../workers/engine/studies/sweep';
import { patchingGrid } from '../../workers/engine/studies/patching';
import { interventionWindow } from '../../workers/engine/studies/window';
import { BranchExplorer } from '../../workers/engine/studies/branching/explorer';
import { sharedPath } from '../shared';

/**
 * Every tensor a run creates is released by the end of the run: the backend's live-tensor count
 * (CpuBackend.liveTensors: tensors on the JS heap and in the WASM matmul's memory alike) after
 * analyse / generate / sweep / a patched run / an activation-patching grid / an intervention window /
 * a branch tree with a fork equals the count before (weights and KV cache only).
 * A tensor forgotten once per block (the WebGPU leak of issue #8: ln1's output) shows up here as
 * n_layers extra live tensors per run. The WebGPU counterpart is e2e/harness/leak.spec.ts.
 */
const engines: Engine[] = [];
afterAll(() => { for (const e of engines) e.dispose(); });

async function load(dir: string[]): Promise<{ e: Engine; b: CpuBackend }> {
  const b = new CpuBackend();
  const e = await Engine.load(new NodeFiles(sharedPath(...dir)), b);
  engines.push(e);
  return { e, b };
}

// llama (sequential residual), gpt_neox (parallel residual, fused QKV), gemma2 (sandwich norms, soft-capping)
for (const dir of [['models', 'stories260K'], ['fixtures', 'gpt_neox-tiny'], ['fixtures', 'gemma2-tiny']]) {
  describe(`${dir[1]}: live tensors`, () => {
    it('are the same before and after analyse, generate, a sweep, patching, a window and a branch tree, each repeated', async () => {
      const { e, b } = await load(dir);
      const req = { prompt: 'Once upon a time there was', good: { text: ' a| the' }, bad: { text: ' big dog' } };
      const v = Array.from({ length: e.spec.dModel }, (_, i) => Math.sin(i + 1));
      const ids = e.encodePrompt(req);
      const hook = `blocks.${e.spec.nLayers - 1}.hook_resid_post`;
      // a corrupted prompt of the clean one's token length (patching needs the same positions)
      const n = e.encodePrompt({ prompt: `${req.prompt} a` }).length;
      const corrupt = [' the', ' one', ' I', ' we', ' he'].map((w) => `${req.prompt}${w}`).find((p) => e.encodePrompt({ prompt: p }).length === n)!;
      expect(corrupt, 'a corrupted prompt of equal length').toBeDefined();
      const runAll = async () => {
        await e.analyse({ ...req, interventions: [toIntervention({ hook, type: 'add_norm_preserving', vector: v, alpha: 2 }, e.spec, { nPrompt: ids.length })] });
        await e.generate({ ...req, maxNewTokens: 4 });
        await doseResponse(e, { ...req, template: { hook: 'blocks.{l}.hook_resid_post', type: 'add', vector: v }, layers: [0], doses: [-1, 1] });
        const clean = await e.run(ids, { capture: [hook] });
        await e.run(ids, { interventions: [{ hook, positions: 'all', op: { kind: 'patch', replacement: clean.captured.get(hook)! } }] });
        await patchingGrid(e, { clean: `${req.prompt} a`, corrupt: corrupt, good: req.good, bad: req.bad, hook: 'resid_pre' });
        const steer = toIntervention({ hook, type: 'add', vector: v, alpha: 4 }, e.spec, { nPrompt: ids.length });
        await interventionWindow(e, { ...req, interventions: [steer], maxNewTokens: 2 });
        const draw = { temperature: 0, topK: 0, seed: 1, steered: false };
        const x = await BranchExplorer.start(e, { ...req, maxNewTokens: 3 }, draw);
        const trunk = x.tree.nodes[0];
        await x.fork(trunk.id, trunk.start + 1, trunk.top[1].ids.find((id) => id !== trunk.ids[1])!, draw);
      };
      const before = b.liveTensors();
      await runAll();
      const after1 = b.liveTensors();
      for (let i = 0; i < 3; i++) await runAll();
      expect(after1, 'live tensors after one round of runs').toBe(before);
      expect(b.liveTensors(), 'live tensors after four rounds').toBe(before);
    }, 120_000);
  });
}
