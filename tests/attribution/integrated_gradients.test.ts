import * as fs from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CpuBackend } from '../../workers/engine/backend/cpu';
import { Engine } from '../../workers/engine/engine';
import { NodeFiles } from '../../workers/engine/io/node_files';
import { hookGradient, tokenAttribution } from '../../workers/engine/studies/integrated_gradients';
import { maxAbsDiff, readReference, sharedPath } from '../shared';

/**
 * Integrated gradients over the input embeddings (studies/integrated_gradients.ts) against the
 * golden float64 IG of the stories260K pair (256-step right Riemann sum, corrupted baseline):
 * Σ_t within 1e-4 of the reference, completeness gap < 1e-3; gradient × input and hookGradient
 * from the same backward as the reference gradients.
 */
const DIR = sharedPath('models', 'stories260K', 'reference', 'gradients');
const ref = readReference(`${DIR}/lily_tom_dad.safetensors`);
const c = (JSON.parse(fs.readFileSync(`${DIR}/cases.json`, 'utf8')) as { ig_sum: number; margin: number }[])[0];
const CLEAN = 'Lily and Tom went to the park. Lily gave the ball to';
const CORRUPT = 'Lily and dad went to the park. Lily gave the ball to';
const req = { prompt: CLEAN, good: { text: ' Tom' }, bad: { text: ' Lily' } };
let e: Engine;
beforeAll(async () => { e = await Engine.load(new NodeFiles(sharedPath('models', 'stories260K')), new CpuBackend()); }, 120_000);
afterAll(() => e.dispose());

describe('integrated gradients and gradient × input', () => {
  it('IG, 256 steps, corrupted baseline: Σ_t equals the reference within 1e-4, completeness gap < 1e-3', async () => {
    let steps = 0;
    const r = await tokenAttribution(e, { ...req, method: 'ig', corrupt: CORRUPT, steps: 256 }, (p) => { steps = p.done; });
    expect(steps).toBe(256);
    const sum = r.attribution.reduce((a, b) => a + b, 0);
    const perToken = maxAbsDiff(r.attribution, ref.get('ig_embed')!.data);
    console.log(`IG: Σ ${sum.toFixed(6)} (reference ${c.ig_sum.toFixed(6)}, |Δ| ${Math.abs(sum - c.ig_sum).toExponential(2)}), per-token max |Δ| ${perToken.toExponential(2)}, completeness gap ${r.completenessGap!.toExponential(2)}`);
    expect(Math.abs(sum - c.ig_sum)).toBeLessThan(1e-4);
    expect(perToken).toBeLessThan(1e-4);
    expect(Math.abs(r.completenessGap!)).toBeLessThan(1e-3);
    expect(r.baseline).toBe('corrupt');
  }, 300_000);

  it('gradient × input is Σ_d x·∂Δ/∂x with the reference gradient', async () => {
    const r = await tokenAttribution(e, { ...req, method: 'grad_x_input' });
    const g = ref.get('grad_embed')!.data, D = e.spec.dModel;
    const x = (await e.run(r.ids, { capture: ['hook_embed'] })).captured.get('hook_embed')!;
    const want = Array.from({ length: r.ids.length }, (_, t) => { let a = 0; for (let d = 0; d < D; d++) a += x[t * D + d] * g[t * D + d]; return a; });
    expect(maxAbsDiff(r.attribution, want)).toBeLessThan(1e-5);
    expect(r.margin).toBeCloseTo(c.margin, 4);
  });

  it('hookGradient at resid_pre equals the reference; refuses a non-[pos, width] hook', async () => {
    const r = await hookGradient(e, { ...req, hook: 'blocks.2.hook_resid_pre' });
    const T = r.ids.length, D = e.spec.dModel;
    expect(r.width).toBe(D);
    expect(maxAbsDiff(r.grad, ref.get('grad_resid_pre')!.data.subarray(2 * T * D, 3 * T * D))).toBeLessThan(1e-5);
    await expect(hookGradient(e, { ...req, hook: 'blocks.0.attn.hook_pattern' })).rejects.toThrow(/\[pos, width\] hooks/);
  });

  it('IG: the gap shrinks with steps; zero and baseline-token baselines are labelled', async () => {
    const g4 = await tokenAttribution(e, { ...req, method: 'ig', corrupt: CORRUPT, steps: 4 });
    const g32 = await tokenAttribution(e, { ...req, method: 'ig', corrupt: CORRUPT, steps: 32 });
    expect(Math.abs(g32.completenessGap!)).toBeLessThan(Math.abs(g4.completenessGap!));
    // zero: RMSNorm is singular at x = 0, so the path's first steps carry large gradients (a known IG caveat)
    const z = await tokenAttribution(e, { ...req, method: 'ig', steps: 4 });
    expect(z.baseline).toBe('zero');
    expect(z.attribution.every(Number.isFinite)).toBe(true);
    const t = await tokenAttribution(e, { ...req, method: 'ig', baselineToken: 0, steps: 4 });
    expect(t.baseline).toBe('token');
    expect(t.attribution[0]).toBe(0); // BOS kept: x − x' = 0 there
  }, 120_000);
});
