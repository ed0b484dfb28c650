import { afterAll, describe, expect, it } from 'vitest';
import { greedyWithCache, runCaptured } from '../model_run';
import { F32_TOL, maxDiff } from '../reference_math';
import { decidableSteps, fixture, loadOn, maxAbs, stories260K, unavailable, type GoldenModel } from './lavapipe_suite';

/**
 * Subgroup reductions (WebGpuOptions.subgroups, the default where the adapter has 'subgroups'):
 * subgroupAdd in the GEMV / fused GEMV / fused QKV kernels ('gpu' tuning) and in RMSNorm and
 * LayerNorm (both tunings), on a Node WebGPU adapter that has them (Mesa 25 lavapipe), against the
 * float32 GOLDEN references at the usual float32 tolerance: logits of every sequence, and greedy
 * decoding through the KV cache (ids and each step's logits). Fused and unfused decode must still
 * agree (numerics harness bound FUSED_TOL, relative to max |logit|) — the fused kernels reduce with
 * the same hook as the ops they replace. Chromium's SwiftShader has 'subgroups' too (subgroup size
 * 4), so the browser harnesses run the subgroup kernels by default; the workgroup-memory tree is
 * checked here with subgroups: false.
 */
const FUSED_TOL = 1e-5;
/** Hooks a fused decode kernel skips over (model/transformer.ts): capturing them runs the unfused ops. */
const FUSION_SPLITTING_HOOKS = /\.(ln1\.hook_normalized|attn\.hook_[qkv]|ln2\.hook_normalized|hook_attn_out|mlp\.hook_pre|hook_mlp_out)$/;

const why = await unavailable(['subgroups']);
const MODELS: [string, () => GoldenModel][] = [...['llama', 'gemma2', 'gpt2', 'qwen2', 'gpt_neox'].map((a): [string, () => GoldenModel] => [`${a}-tiny`, () => fixture(a)]), ['stories260K', stories260K]];
const measured: Record<string, string> = {};
afterAll(() => { if (Object.keys(measured).length) console.table(measured); });

describe.skipIf(!!why)(`subgroup reductions on the Node adapter${why ? ` (skipped: ${why})` : ''}`, () => {
  const cases = MODELS.flatMap(([name, make]) => [
    ...(['gpu', 'cpu'] as const).map((tuning) => ({ name, make, tuning, subgroups: true })),
    ...(name === 'llama-tiny' || name === 'stories260K' ? [{ name, make, tuning: 'gpu' as const, subgroups: false }] : []),
  ]);
  for (const { name, make, tuning, subgroups } of cases) {
    it(`${name} ('${tuning}' kernels, ${subgroups ? 'subgroup' : 'tree'} reductions): logits and greedy decoding within 1e-4 of the golden reference, fused = unfused decode within 1e-5, and the ${subgroups ? 'subgroup' : 'tree'} kernels ran`, async () => {
      const m = make();
      const { b, model } = await loadOn(m, { tuning, subgroups });
      const keys = new Set<string>();
      const compile = b.pipeline.bind(b);
      b.pipeline = (key, code) => { keys.add(key); return compile(key, code); };
      try {
        expect(b.subgroups, 'subgroups granted as asked').toBe(subgroups);
        let worst = 0, fusedWorst = 0, compared = 0;
        for (const s of m.sequences) {
          const { logits } = await runCaptured(b, model, s.ids, []);
          const d = maxDiff(logits, s.logits);
          expect(d, `${name} ${s.name}: max |Δlogit|`).toBeLessThanOrEqual(F32_TOL);
          worst = Math.max(worst, d);
          const steps = decidableSteps(s.stepLogits, m.vocab, F32_TOL);
          const fused = await greedyWithCache(b, model, s.prompt, steps);
          expect(fused.ids, `${name} ${s.name}: greedy ids`).toEqual(s.greedy.slice(0, steps));
          fused.stepLogits.forEach((row, k) => {
            const d2 = maxDiff(row, s.stepLogits.subarray(k * m.vocab, (k + 1) * m.vocab));
            expect(d2, `${name} ${s.name}: step ${k} logits`).toBeLessThanOrEqual(F32_TOL);
            worst = Math.max(worst, d2);
          });
          const split = await greedyWithCache(b, model, s.prompt, Math.min(steps, 4), (name) => FUSION_SPLITTING_HOOKS.test(name));
          split.stepLogits.forEach((row, k) => { fusedWorst = Math.max(fusedWorst, maxDiff(row, fused.stepLogits[k]) / maxAbs(row)); });
          compared += steps;
        }
        expect(fusedWorst, 'fused vs unfused decode, relative to max |logit|').toBeLessThanOrEqual(FUSED_TOL);
        const sub = [...keys].filter((k) => /subgroup/.test(k));
        if (subgroups) {
          expect(sub.some((k) => /norm/.test(k)), `a norm kernel reduced with subgroups (${[...keys].join(', ')})`).toBe(true);
          if (tuning === 'gpu') expect(sub.some((k) => /^linear_gemv/.test(k)), 'the GEMV reduced with subgroups').toBe(true);
        } else {
          expect(sub, 'no subgroup kernel when subgroups: false').toEqual([]);
          expect([...keys].some((k) => /^linear_gemv.*"reduce":"tree"/.test(k)), 'the GEMV reduced with the tree').toBe(true);
        }
        measured[`${name} ${tuning} ${subgroups ? 'subgroups' : 'tree'}`] = `max |Δ| vs golden ${worst.toExponential(2)}, fused vs unfused ${fusedWorst.toExponential(2)}, greedy ids ${compared}, subgroup pipelines ${sub.length}`;
      } finally {
        b.dispose();
      }
    });
  }
});
