import { describe, expect, it } from 'vitest';
import { CpuBackend } from '../../workers/engine/backend/cpu';
import { NodeFiles } from '../../workers/engine/io/node_files';
import { loadTransformer } from '../../workers/engine/model/load';
import { runCaptured } from '../model_run';
import { F32_TOL, maxDiff, realModel } from '../reference_math';

/**
 * Weights stored as binary16 (load option weightDtype 'f16', model/load.ts: every 2-D weight is
 * rounded to binary16, norms stay float32; the CPU backend computes with the rounded values, as the
 * WebGPU backend does with its f16 storage) against the float32 REFERENCE logits of both real
 * models, never against the engine's own f32 run. Tolerance from binary16's unit roundoff
 * u = 2^-11: each of the N rounded matrices on the path moves a logit by at most about
 * u · max|z| to first order, and with no cancellation assumed these add:
 *   tol = F32_TOL + N · u · max|z_ref|,  N = the checkpoint's 2-D tensors (embedding and lm_head included).
 */
const U_F16 = 2 ** -11;

describe.each(['stories260K', 'aidreams260K'] as const)('%s with weightDtype f16', (name) => {
  const m = realModel(name);
  it('logits of every prompt and position within F32_TOL + N·u·max|z| of the reference; the weights really were rounded', async () => {
    const b = new CpuBackend();
    const { model } = await loadTransformer(new NodeFiles(m.dir), b, undefined, { weightDtype: 'f16' });
    const N = [...m.weights.values()].filter((t) => t.shape.length === 2).length;
    for (const p of m.ref.prompts) {
      const ref = m.arrays(p).get('logits')!.data;
      const maxLogit = ref.reduce((mx, x) => Math.max(mx, Math.abs(x)), 0);
      const { logits } = await runCaptured(b, model, p.sequence_ids.slice(0, p.n_positions), []);
      const diff = maxDiff(logits, ref);
      console.log(`${name} ${p.name}: f16 weights, max |Δlogit| vs reference ${diff.toExponential(2)}, tol ${(F32_TOL + N * U_F16 * maxLogit).toExponential(2)}`);
      expect(diff).toBeLessThan(F32_TOL + N * U_F16 * maxLogit);
      expect(diff).toBeGreaterThan(10 * F32_TOL); // f32 weights land within F32_TOL: these were rounded
    }
    b.dispose();
  });
});
