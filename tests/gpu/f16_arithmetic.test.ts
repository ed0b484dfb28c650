import { afterAll, describe, expect, it } from 'vitest';
import { greedyWithCache, runCaptured } from '../model_run';
import { F32_TOL, maxDiff } from '../reference_math';
import { decidableSteps, fixture, loadOn, maxAbs, stories260K, unavailable, type GoldenModel } from './lavapipe_suite';

/**
 * f16 arithmetic (WebGpuOptions.computeDtype 'f16' with weightDtype 'f16': linear_gemv.wgsl.ts's
 * compute-type hook) on a Node WebGPU adapter with 'shader-f16' (Mesa 25 lavapipe), against the
 * float32 GOLDEN logits and greedy continuations of four fixtures and stories260K, with both kernel
 * tunings (dot kernels; GEMV + tiled matmul).
 *
 * Tolerance, from binary16's unit roundoff u = 2⁻¹¹. One product x_k·w_ok of a linear layer takes
 * at most R = 6 roundings: w stored as binary16, x_k rounded to binary16, the product, and the three
 * additions of a vec4 dot; the running sum over k is float32 (its error ~1e-7 relative is inside
 * F32_TOL). So each output moves by at most R·u·Σ_k |x_k·w_ok|, i.e. the layer behaves as its
 * weights perturbed by R·u relative — with no factor of the dot length in: that factor (√d_in for
 * random-sign errors, d_in in the worst case) is what a binary16 running sum would add, and why the
 * sum stays float32. Following the f16-storage test (tests/integration/f16_weights.test.ts: a
 * relative perturbation u of one of the N matrices moves a logit by about u·max|z| to first order,
 * no cancellation assumed):
 *   tol = F32_TOL + R · N · u · max|z_ref|,  N = the checkpoint's 2-D tensors.
 */
const U_F16 = 2 ** -11;
const R = 6;

const why = await unavailable(['shader-f16']);
const MODELS: [string, () => GoldenModel][] = [...['llama', 'gemma2', 'gpt2', 'qwen2'].map((a): [string, () => GoldenModel] => [`${a}-tiny`, () => fixture(a)]), ['stories260K', stories260K]];
const measured: Record<string, string> = {};
afterAll(() => { if (Object.keys(measured).length) console.table(measured); });

describe.skipIf(!!why)(`f16 arithmetic on the Node adapter${why ? ` (skipped: ${why})` : ''}`, () => {
  for (const [name, make] of MODELS) {
    for (const tuning of ['cpu', 'gpu'] as const) {
      it(`${name} ('${tuning}' kernels): logits within F32_TOL + R·N·u·max|z| of the golden reference, the arithmetic really was binary16, and greedy ids match wherever the reference margin exceeds twice the error`, async () => {
        const m = make();
        const { b, model } = await loadOn(m, { computeDtype: 'f16', tuning }, 'f16');
        const f32 = await loadOn(m, { computeDtype: 'f32', tuning }, 'f16');
        try {
          expect(b.compute, 'the device granted shader-f16').toBe('f16');
          let worst = 0, tolUsed = 0, changed = 0;
          for (const s of m.sequences) {
            const { logits } = await runCaptured(b, model, s.ids, []);
            const tol = F32_TOL + R * m.matrices * U_F16 * maxAbs(s.logits);
            const d = maxDiff(logits, s.logits);
            expect(d, `${m.name} ${s.name}: max |Δlogit| vs the golden reference`).toBeLessThan(tol);
            worst = Math.max(worst, d);
            tolUsed = Math.max(tolUsed, tol);
            // the same binary16 weights with float32 arithmetic: the products must have been rounded differently
            changed = Math.max(changed, maxDiff(logits, (await runCaptured(f32.b, f32.model, s.ids, [])).logits));
          }
          expect(changed, 'f16 arithmetic changes the logits of f16-stored weights').toBeGreaterThan(F32_TOL);
          let compared = 0;
          for (const s of m.sequences) {
            const steps = decidableSteps(s.stepLogits, m.vocab, worst);
            const { ids } = await greedyWithCache(b, model, s.prompt, steps);
            expect(ids, `${m.name} ${s.name}: the first ${steps} greedy ids`).toEqual(s.greedy.slice(0, steps));
            compared += steps;
          }
          expect(compared, 'some greedy steps were decidable').toBeGreaterThan(0);
          measured[`${m.name} ${tuning}`] = `max |Δlogit| ${worst.toExponential(2)} (tol ${tolUsed.toExponential(2)}), vs f32 arithmetic ${changed.toExponential(2)}, greedy ids compared ${compared}`;
        } finally {
          b.dispose();
          f32.b.dispose();
        }
      });
    }
  }
});
