/**
 * Activations while generating (studies/generation_activations.ts through its registry row, the
 * worker's and runner's path): row s of the [steps, width] capture, read from the KV-cached decode,
 * equals the hook at position T − 1 + s of one plain full forward (Engine.run, no KV cache reuse)
 * over the prompt + the generated tokens, within 1e-5 — without and with an intervention (the
 * full forward applies the same one); the steered run really differs; the .npy written from it reads
 * back with shape [steps, width]; a hook that is not [pos, width] is refused before any work.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Engine } from '../../workers/engine/engine';
import { CpuBackend } from '../../workers/engine/backend/cpu';
import { NodeFiles } from '../../workers/engine/io/node_files';
import { STUDIES, studyContext } from '../../workers/engine/studies/registry';
import { specInterventions } from '../../workers/engine/studies/resolve_interventions';
import { readNpyArray, writeNpyArray } from '../../workers/engine/io/npy';
import type { InterventionSpec } from '../../workers/engine/steering/spec';
import { maxAbsDiff, sharedPath } from '../shared';

let e: Engine;
beforeAll(async () => { e = await Engine.load(new NodeFiles(sharedPath('models', 'stories260K')), new CpuBackend()); });
afterAll(() => e.dispose());

const HOOK = 'blocks.2.hook_resid_post';
const base = { prompt: 'Once upon a time, there was a little girl named Lily. She', good: { text: ' was' }, bad: { text: ' had' }, maxNewTokens: 10, hook: HOOK };
const spec: InterventionSpec = { hook: 'blocks.1.hook_resid_post', type: 'add', vector: Array.from({ length: 64 }, (_, i) => Math.cos(i)), alpha: 3 };

describe('activations while generating', () => {
  it('row s equals the full forward at position T − 1 + s (KV-cached decode = full forward within 1e-5), without and with the intervention; the .npy is [steps, width]', async () => {
    const r = await STUDIES.generationActivations.run(studyContext(e), { ...base, specs: [spec], specLabels: ['intervention #1'] });
    expect(r.width).toBe(64);
    const ids = e.encodePrompt(base);
    const T = ids.length;
    expect(r.nPrompt).toBe(T);
    const interventions = await specInterventions(e, base, { specs: [spec] }, { maxNewTokens: base.maxNewTokens });
    for (const [run, ivs] of [[r.unsteered, []], [r.steered!, interventions]] as const) {
      const steps = run.ids.length;
      expect(steps).toBe(base.maxNewTokens);
      expect(run.data.length).toBe(steps * 64);
      expect(run.positions).toEqual(Array.from({ length: steps }, (_, s) => T - 1 + s));
      const seq = [...ids, ...run.ids.slice(0, -1)];
      const { captured } = await e.run(seq, { capture: [HOOK], interventions: ivs });
      const full = captured.get(HOOK)!;
      for (let s = 0; s < steps; s++) {
        const p = T - 1 + s;
        expect(maxAbsDiff(run.data.subarray(s * 64, (s + 1) * 64), full.subarray(p * 64, (p + 1) * 64)), `step ${s} (position ${p})`).toBeLessThanOrEqual(1e-5);
      }
    }
    expect(maxAbsDiff(r.unsteered.data.subarray(0, 64), r.steered!.data.subarray(0, 64)), 'the intervention changes row 0').toBeGreaterThan(1e-2);
    const npy = readNpyArray(writeNpyArray(r.steered!.data, [r.steered!.ids.length, r.width]), 'steps.npy');
    expect(npy.shape).toEqual([base.maxNewTokens, 64]);
    expect(Array.from(npy.data)).toEqual(Array.from(r.steered!.data));
    const header = new TextDecoder().decode(writeNpyArray(r.steered!.data, [10, 64]).subarray(10, 80));
    expect(header).toMatch(/'descr': '<f4', 'fortran_order': False, 'shape': \(10, 64\)/);
  });

  it('without interventions only the unsteered run; an attention pattern hook is refused naming its shape', async () => {
    const r = await STUDIES.generationActivations.run(studyContext(e), { ...base, maxNewTokens: 3 });
    expect(r.steered).toBeNull();
    expect(r.unsteered.ids).toHaveLength(3);
    await expect(STUDIES.generationActivations.run(studyContext(e), { ...base, hook: 'blocks.0.attn.hook_pattern' })).rejects.toThrow(/has shape \[head, query, key\], not \[pos, width\]/);
  });
});
