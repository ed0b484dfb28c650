/**
 * GPU memory across repeated runs on WebGPU (issue #8): stories260K is loaded once onto
 * WebGpuBackend; each call of `window.runLeakRounds(n)` runs n rounds of analyse (with an
 * add_norm_preserving intervention), generate (8 tokens), a 2-dose sweep, an activation-patched
 * run, an activation-patching grid (9 tokens × 5 layers, prefix KV reuse) and a branch tree with one
 * fork (KV snapshots), and returns the backend's own counters (WebGpuBackend.memoryStats) after the rounds. The
 * spec compares the counts across calls and reads the JS heap between them through CDP.
 */
import { WebGpuBackend, type GpuMemoryStats } from '../../workers/engine/backend/webgpu';
import { Engine } from '../../workers/engine/engine';
import { HttpFiles } from '../../workers/engine/io/model_files';
import { toIntervention } from '../../workers/engine/steering/spec';
import { doseResponse } from '../../workers/engine/studies/sweep';
import { patchingGrid } from '../../workers/engine/studies/patching';
import { BranchExplorer } from '../../workers/engine/studies/branching/explorer';

let engine: Engine | null = null;

async function loaded(): Promise<{ e: Engine; b: WebGpuBackend }> {
  engine ??= await Engine.load(new HttpFiles('stories260K', '/models/stories260K/'), await WebGpuBackend.create());
  return { e: engine, b: engine.backend as WebGpuBackend };
}

/** Runs `rounds` rounds of analyse + generate + sweep + patch + patching grid + branch tree; returns the memory counters afterwards. */
async function runLeakRounds(rounds: number): Promise<GpuMemoryStats & { runs: number }> {
  const { e, b } = await loaded();
  const req = { prompt: 'Once upon a time, there was a little girl named Lily. She', good: { text: ' was' }, bad: { text: ' had| liked' } };
  const ids = e.encodePrompt(req);
  const v = Array.from({ length: e.spec.dModel }, (_, i) => Math.cos(3 * i) / 4);
  const hook = 'blocks.3.hook_resid_post';
  let runs = 0;
  for (let r = 0; r < rounds; r++) {
    await e.analyse({ ...req, interventions: [toIntervention({ hook, type: 'add_norm_preserving', vector: v, alpha: 4 }, e.spec, { nPrompt: ids.length })] });
    await e.generate({ ...req, maxNewTokens: 8 });
    await doseResponse(e, { ...req, template: { hook: 'blocks.{l}.hook_resid_post', type: 'add', vector: v }, layers: [1], doses: [-2, 2] });
    const clean = await e.run(ids, { capture: [hook] });
    await e.run(ids, { interventions: [{ hook, positions: 'all', op: { kind: 'patch', replacement: clean.captured.get(hook)! } }] });
    await patchingGrid(e, { clean: 'Tom had a ball. He', corrupt: 'Tom had a ball. She', good: { text: ' was' }, bad: { text: ' had' }, hook: 'resid_pre' });
    const draw = { temperature: 0, topK: 0, seed: 1, steered: false };
    const x = await BranchExplorer.start(e, { ...req, maxNewTokens: 4 }, draw);
    const trunk = x.tree.nodes[0];
    await x.fork(trunk.id, trunk.start + 1, trunk.top[1].ids.find((id) => id !== trunk.ids[1])!, draw);
    runs += 7;
  }
  await b.sync();
  return { ...b.memoryStats(), runs };
}

declare global {
  interface Window { runLeakRounds: typeof runLeakRounds }
}
window.runLeakRounds = runLeakRounds;
