import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CpuBackend } from '../../workers/engine/backend/cpu';
import { Engine } from '../../workers/engine/engine';
import { NodeFiles } from '../../workers/engine/io/node_files';
import { readSae } from '../../workers/engine/sae/files';
import { type SaeWeights } from '../../workers/engine/sae/sae';
import { Sae } from '../../workers/engine/sae/sae';
import { resolveInterventions } from '../../workers/engine/studies/resolve_interventions';
import { parseSpec } from '../../workers/engine/steering/spec';
import { maxAbsDiff, sharedPath } from '../shared';
import { SAE_DIRS } from './sae_files';

/**
 * Feature steering and clamping equal the hand computation at the hook (stories260K, CPU):
 * add {"sae", "feature"}: x' = x + α·W_dec[f]/‖W_dec[f]‖; sae_clamp: x' = x + (c − f_f(x))·W_dec[f],
 * with f_f(x) computed here in float64 from the weights by the README's formulas (not by the engine).
 */
const HOOK = 'blocks.2.hook_resid_post';
const PROMPT = 'Lily and Tom went to the park. Lily gave the ball to';
let e: Engine;
let ids: number[];
const w = {} as Record<'relu' | 'jumprelu', SaeWeights>;
const saes = {} as Record<'relu' | 'jumprelu', Sae>;
beforeAll(async () => {
  e = await Engine.load(new NodeFiles(sharedPath('models', 'stories260K')), new CpuBackend());
  ids = e.encodePrompt({ prompt: PROMPT });
  for (const k of ['relu', 'jumprelu'] as const) {
    w[k] = await readSae(new NodeFiles(SAE_DIRS[k]));
    saes[k] = new Sae(e.backend, w[k], e.spec);
  }
});
afterAll(() => e.dispose());

/** f_f(x) by the README: hidden_pre = (x − b_dec·apply) W_enc[:, f] + b_enc[f]; ReLU, or JumpReLU (strict >). */
function featureByHand(sw: SaeWeights, x: ArrayLike<number>, f: number): number {
  const { dIn, dSae, applyBDecToInput } = sw.cfg;
  let pre = sw.b_enc[f];
  for (let d = 0; d < dIn; d++) pre += (x[d] - (applyBDecToInput ? sw.b_dec[d] : 0)) * sw.W_enc[d * dSae + f];
  if (sw.threshold) return pre > sw.threshold[f] ? pre : 0;
  return Math.max(pre, 0);
}

/** The hook's value [T·64] under specs resolved the runner's way (loadSae by reference). */
async function hookValue(specs: object[]): Promise<Float32Array> {
  const parsed = specs.map((s) => parseSpec(JSON.parse(JSON.stringify(s))));
  const ivs = await resolveInterventions(e, parsed, { nPrompt: ids.length }, { loadSae: (ref) => saes[ref as 'relu'] });
  return (await e.run(ids, { capture: [HOOK], interventions: ivs })).captured.get(HOOK)!;
}

describe.each(['relu', 'jumprelu'] as const)('%s SAE', (kind) => {
  it('sae_clamp at positions [3, 7, 20] gives x + (c − f_f(x))·W_dec[f] there and leaves the other positions alone', async () => {
    const x = await hookValue([]);
    // the feature most active at the last position, so f_f(x) ≠ 0 there
    const last = x.subarray(20 * 64, 21 * 64);
    let f = 0;
    for (let i = 1; i < 256; i++) if (featureByHand(w[kind], last, i) > featureByHand(w[kind], last, f)) f = i;
    expect(featureByHand(w[kind], last, f)).toBeGreaterThan(0.5);
    const c = 3.5;
    const y = await hookValue([{ hook: HOOK, type: 'sae_clamp', sae: kind, feature: f, value: c, positions: [3, 7, 20] }]);
    for (let t = 0; t < ids.length; t++) {
      const xt = x.subarray(t * 64, (t + 1) * 64);
      const want = [3, 7, 20].includes(t)
        ? Array.from(xt, (v, d) => v + (c - featureByHand(w[kind], xt, f)) * w[kind].W_dec[f * 64 + d])
        : Array.from(xt);
      expect(maxAbsDiff(y.subarray(t * 64, (t + 1) * 64), want), `position ${t}`).toBeLessThanOrEqual(1e-5);
    }
  });

  it('add with vector {"sae", "feature"} adds α times the unit-norm decoder row', async () => {
    const x = await hookValue([]);
    const f = 17, alpha = -6;
    const row = w[kind].W_dec.subarray(f * 64, (f + 1) * 64);
    const n = Math.hypot(...row);
    const y = await hookValue([{ hook: HOOK, type: 'add', vector: { sae: kind, feature: f }, alpha, positions: 'all' }]);
    expect(maxAbsDiff(y, Array.from(x, (v, i) => v + alpha * row[i % 64] / n))).toBeLessThanOrEqual(1e-5);
  });
});

describe('SAE hooks, splice and spec errors', () => {
  it('hook_sae_error + hook_sae_recons = the activation, and splicing makes the model continue from x̂', async () => {
    const sae = saes.relu;
    const names = [HOOK, `${HOOK}.hook_sae_recons`, `${HOOK}.hook_sae_error`, `${HOOK}.hook_sae_input`];
    const plain = (await e.run(ids, { capture: names, saes: [{ sae }] })).captured;
    const sum = Float32Array.from(plain.get(`${HOOK}.hook_sae_recons`)!, (v, i) => v + plain.get(`${HOOK}.hook_sae_error`)![i]);
    expect(maxAbsDiff(sum, plain.get(HOOK)!)).toBeLessThanOrEqual(1e-5);
    expect(maxAbsDiff(plain.get(`${HOOK}.hook_sae_input`)!, plain.get(HOOK)!)).toBe(0);
    const next = 'blocks.3.hook_resid_pre';
    const spliced = (await e.run(ids, { capture: [next, `${HOOK}.hook_sae_recons`], saes: [{ sae, splice: true }] })).captured;
    expect(maxAbsDiff(spliced.get(next)!, spliced.get(`${HOOK}.hook_sae_recons`)!)).toBe(0);
  });

  it('SAE hooks without an attached SAE, clamps at another hook, missing features and malformed keys are refused with the reason', async () => {
    await expect(e.run(ids, { capture: [`${HOOK}.hook_sae_acts_post`] })).rejects.toThrow(`hook "${HOOK}.hook_sae_acts_post" exists only while an SAE is attached at ${HOOK}`);
    await expect(hookValue([{ hook: 'blocks.3.hook_resid_post', type: 'sae_clamp', sae: 'relu', feature: 1, value: 0 }])).rejects.toThrow(`reads ${HOOK}; clamp at its hook`);
    await expect(hookValue([{ hook: HOOK, type: 'sae_clamp', sae: 'relu', feature: 256, value: 0 }])).rejects.toThrow('feature 256 does not exist');
    await expect(hookValue([{ hook: HOOK, type: 'add', vector: { sae: 'relu', feature: 999 }, alpha: 1 }])).rejects.toThrow('has features 0..255');
    expect(() => parseSpec({ hook: HOOK, type: 'sae_clamp', sae: 'relu', feature: 1 })).toThrow('sae_clamp needs "value"');
    expect(() => parseSpec({ hook: HOOK, type: 'sae_clamp', sae: 'relu', feature: -1, value: 0 })).toThrow('"feature": a non-negative integer');
    expect(() => parseSpec({ hook: HOOK, type: 'sae_clamp', sae: 'relu', feature: 1, value: 0, alpha: 2 })).toThrow('"alpha" does not apply');
    expect(() => parseSpec({ hook: HOOK, type: 'add', vector: { sae: 'relu' }, alpha: 2 })).toThrow('{"sae": PATH, "feature": F}');
    expect(() => parseSpec({ hook: HOOK, type: 'add', vector: [1], alpha: 2, feature: 3 })).toThrow('only sae_clamp takes sae, feature and value');
  });
});
