import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CpuBackend } from '../../workers/engine/backend/cpu';
import { Engine } from '../../workers/engine/engine';
import { NodeFiles } from '../../workers/engine/io/node_files';
import { doseKeyOf, doseResponse, type SweepRequest } from '../../workers/engine/studies/sweep';
import { sharedPath } from '../shared';

/**
 * The dose–response request (studies/sweep.ts) beyond sweep.test.ts: what the result echoes
 * (layers, doses, hooks, dose key), the dose key of each type, and every refused request with its
 * message, at the bounds (the last layer, layer n_layers) on stories260K (5 layers).
 */
let e: Engine;
const v = Array.from({ length: 64 }, (_, i) => Math.sin(2 * i) / 4);
const req = (over: Partial<SweepRequest> = {}): SweepRequest => ({
  prompt: 'Once upon a time', good: { text: ' there' }, bad: { text: ' the' },
  template: { hook: 'blocks.{l}.hook_resid_post', type: 'add', vector: v }, layers: [4], doses: [0, 2], ...over,
});
beforeAll(async () => {
  e = await Engine.load(new NodeFiles(sharedPath('models', 'stories260K')), new CpuBackend());
});
afterAll(() => e.dispose());

describe('doseResponse request and result', () => {
  it('echoes copies of the layers and doses, the hook of each layer ({l} replaced everywhere) and the dose key', async () => {
    const layers = [4, 0], doses = [0, 1.5];
    const r = await doseResponse(e, req({ layers, doses, template: { hook: 'blocks.{l}.hook_resid_post', type: 'add_norm_preserving', vector: v } }));
    expect(r.layers).toEqual([4, 0]);
    expect(r.layers).not.toBe(layers);
    expect(r.doses).toEqual([0, 1.5]);
    expect(r.doses).not.toBe(doses);
    expect(r.hooks).toEqual(['blocks.4.hook_resid_post', 'blocks.0.hook_resid_post']);
    expect(r.doseKey).toBe('alpha');
    expect(r.margin.map((row) => row.length)).toEqual([2, 2]);
    expect(r.kl[0][0]).toBe(0);
    expect(r.kl[1][1]).toBeGreaterThan(0);
  });

  it('the dose key: alpha for add and add_norm_preserving, theta for rotate, none for the others', () => {
    expect(doseKeyOf('add')).toBe('alpha');
    expect(doseKeyOf('add_norm_preserving')).toBe('alpha');
    expect(doseKeyOf('rotate')).toBe('theta');
    for (const t of ['ablate', 'patch', 'sae_clamp'] as const) {
      expect(() => doseKeyOf(t)).toThrow(`a dose sweep varies alpha (add, add_norm_preserving) or theta (rotate); "${t}" has no dose`);
    }
  });

  it('refuses no layers or no doses, a layer that is negative, fractional or n_layers, a dose that is not finite, and positions past the prompt', async () => {
    await expect(doseResponse(e, req({ layers: [] }))).rejects.toThrow('a sweep needs at least one layer and one dose');
    await expect(doseResponse(e, req({ doses: [] }))).rejects.toThrow('a sweep needs at least one layer and one dose');
    for (const l of [-1, 1.5, 5]) await expect(doseResponse(e, req({ layers: [0, l] }))).rejects.toThrow(new RegExp(`^layer ${l} does not exist \\(the model has layers 0\\.\\.4\\)$`));
    await expect(doseResponse(e, req({ doses: [1, NaN] }))).rejects.toThrow(/^dose NaN is not a finite number$/);
    await expect(doseResponse(e, req({ doses: [Infinity] }))).rejects.toThrow(/^dose Infinity is not a finite number$/);
    // positions are checked against the prompt's length ("Once upon a time" is 5 tokens with BOS)
    await expect(doseResponse(e, req({ template: { hook: 'blocks.{l}.hook_resid_post', type: 'add', vector: v, positions: [5] } })))
      .rejects.toThrow(/^sweep layer 4: position 5 is outside the run: the prompt has 5 tokens \(positions 0\.\.4\)$/);
    await expect(doseResponse(e, req({ template: { hook: 'blocks.{l}.hook_resid_post', type: 'add', vector: v, positions: { start: 5, end: 7 } } })))
      .rejects.toThrow(/^sweep layer 4: positions \[5, 7\) start outside the run: the prompt has 5 tokens \(positions 0\.\.4\)$/);
    await expect(doseResponse(e, req({ template: { hook: 'blocks.l.hook_resid_post', type: 'add', vector: v } })))
      .rejects.toThrow('sweep hook template "blocks.l.hook_resid_post" needs {l} for the layer, e.g. blocks.{l}.hook_resid_post');
  });
});
