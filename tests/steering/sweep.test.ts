import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CpuBackend } from '../../workers/engine/backend/cpu';
import { Engine } from '../../workers/engine/engine';
import { NodeFiles } from '../../workers/engine/io/node_files';
import { logSoftmaxCpu } from '../../workers/engine/ops/logits.cpu';
import { toIntervention } from '../../workers/engine/steering/spec';
import { doseResponse, klDivergence, type SweepRequest } from '../../workers/engine/studies/sweep';
import { sharedPath } from '../shared';
import type { Progress } from '../../workers/engine/progress';

/** The dose–response job (DESIGN.md §3): cells, progress, cancel and bad templates. */
let e: Engine;
const v = Array.from({ length: 64 }, (_, i) => Math.cos(3 * i) / 4);
const base = (): SweepRequest => ({
  prompt: 'Once upon a time, there was a little girl named Lily. She loved', good: { text: ' to' }, bad: { text: ' her| the' },
  template: { hook: 'blocks.{l}.hook_resid_post', type: 'add', vector: v }, layers: [0, 1, 2, 3, 4], doses: [-8, -6, -4, -2, -1, 0, 1, 2, 4, 8],
});
beforeAll(async () => {
  e = await Engine.load(new NodeFiles(sharedPath('models', 'stories260K')), new CpuBackend());
});
afterAll(() => e.dispose());

describe('KL divergence', () => {
  it('matches the closed form for two-point distributions and is 0 for equal ones', () => {
    const lp = (p: number[]) => Float32Array.from(p.map(Math.log));
    const expected = 0.5 * Math.log(0.5 / 0.9) + 0.5 * Math.log(0.5 / 0.1);
    expect(klDivergence(lp([0.5, 0.5]), lp([0.9, 0.1]))).toBeCloseTo(expected, 6);
    expect(klDivergence(lp([0.2, 0.8]), lp([0.2, 0.8]))).toBe(0);
    expect(klDivergence(lp([0, 1]), lp([0.5, 0.5]))).toBeCloseTo(Math.log(2), 6);
  });
});

describe('doseResponse', () => {
  it('every cell equals a separate steered forward: margin of the first-token sets and KL(unsteered ‖ steered)', async () => {
    const progress: Progress[] = [];
    const req = base();
    const r = await doseResponse(e, req, (p) => progress.push(p));
    expect(r.margin).toHaveLength(5);
    expect(r.kl.every((row) => row.length === 10)).toBe(true);
    expect(progress.map((p) => p.done)).toEqual(Array.from({ length: 50 }, (_, i) => i + 1));
    expect(progress.every((p) => p.total === 50)).toBe(true);
    const ids = e.encodePrompt(req);
    const T = ids.length;
    const plainAnalysis = await e.analyse(req);
    expect(r.unsteeredMargin).toBeCloseTo(plainAnalysis.finalMargin[T - 1], 5);
    const p = logSoftmaxCpu((await e.run(ids)).logits.subarray((T - 1) * 512), 512);
    for (const [li, di] of [[1, 0], [3, 8], [4, 5]]) {
      const iv = toIntervention({ hook: r.hooks[li], type: 'add', vector: v, alpha: r.doses[di] }, e.spec, { nPrompt: T });
      const a = await e.analyse({ ...req, interventions: [iv] });
      expect(r.margin[li][di]).toBeCloseTo(a.finalMargin[T - 1], 5);
      const q = logSoftmaxCpu((await e.run(ids, { interventions: [iv] })).logits.subarray((T - 1) * 512), 512);
      expect(r.kl[li][di]).toBeCloseTo(klDivergence(p, q), 6);
    }
    // Dose 0 is the unsteered run; other doses cost something.
    for (let l = 0; l < 5; l++) {
      expect(r.kl[l][5]).toBe(0);
      expect(r.margin[l][5]).toBe(r.unsteeredMargin);
      expect(r.kl[l][0]).toBeGreaterThan(0);
    }
  });

  it('rotate sweeps theta (radians); θ = 0 is the unsteered run', async () => {
    const r = await doseResponse(e, { ...base(), template: { hook: 'blocks.{l}.hook_resid_post', type: 'rotate', vector: v }, layers: [2], doses: [0, 0.25, 0.5] });
    expect(r.doseKey).toBe('theta');
    expect(r.kl[0][0]).toBe(0);
    expect(r.kl[0][1]).toBeGreaterThan(0);
    expect(r.kl[0][2]).toBeGreaterThan(r.kl[0][1]);
  });

  it('an aborted sweep stops between forwards and rejects with the AbortError', async () => {
    const ctl = new AbortController();
    let seen = 0;
    const job = doseResponse(e, base(), (p) => { seen = p.done; if (p.done === 3) ctl.abort(); }, ctl.signal);
    await expect(job).rejects.toMatchObject({ name: 'AbortError' });
    expect(seen).toBe(3);
  });

  it('bad templates and layers fail before any forward pass', async () => {
    await expect(doseResponse(e, { ...base(), template: { hook: 'blocks.1.hook_resid_post', type: 'add', vector: v } })).rejects.toThrow('needs {l} for the layer');
    await expect(doseResponse(e, { ...base(), template: { hook: 'blocks.{l}.hook_resid_post', type: 'ablate', mode: 'zero' } })).rejects.toThrow('"ablate" has no dose');
    await expect(doseResponse(e, { ...base(), layers: [0, 7] })).rejects.toThrow('layer 7 does not exist (the model has layers 0..4)');
    await expect(doseResponse(e, { ...base(), template: { hook: 'blocks.{l}.hook_resid_post', type: 'add', vector: v.slice(1) } })).rejects.toThrow('sweep layer 0: vector has 63 values');
  });
});
