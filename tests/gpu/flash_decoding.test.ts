import { describe, expect, it } from 'vitest';
import { greedyWithCache, runCaptured } from '../model_run';
import { F32_TOL, maxDiff } from '../reference_math';
import { decidableSteps, fixture, loadOn, stories260K, unavailable, type GoldenModel } from './lavapipe_suite';

/**
 * Flash-decoding (split-K attention, workers/engine/ops/attention_split.wgsl.ts) forced on with
 * chunks of 5 keys (WebGpuOptions.flashDecoding), on the Node WebGPU adapter, both kernel tunings,
 * against the float32 GOLDEN references at 1e-4: logits of every sequence (the prompt's attention
 * split too) and greedy decoding through the KV cache (ids, and each step's logits). 5 keys is
 * below the sliding window (6) and every prompt and divides neither, so chunks straddle the window's
 * edge, some are empty for a query and the last is partial; stories260K's contexts (≤ 53 keys) take
 * up to 11 chunks, each partial rescaled by the log-sum-exp combine. Models: stories260K (GQA 8/4),
 * llama-tiny (GQA 4/2), mistral-tiny (sliding window 6), gemma2-tiny (soft-capping 5, local and
 * global layers). The same checks run on Chromium's SwiftShader in e2e/harness/flash_numerics.spec.ts.
 */
const CHUNK = 5;
const why = await unavailable([]);
const MODELS: [string, () => GoldenModel][] = [['stories260K', stories260K], ...['llama', 'mistral', 'gemma2'].map((a): [string, () => GoldenModel] => [`${a}-tiny`, () => fixture(a)])];

describe.skipIf(!!why)(`flash-decoding forced on (chunks of ${CHUNK} keys) on the Node adapter${why ? ` (skipped: ${why})` : ''}`, () => {
  for (const [name, make] of MODELS) {
    for (const tuning of ['gpu', 'cpu'] as const) {
      it(`${name} ('${tuning}' kernels): logits and greedy decoding within 1e-4 of the golden reference, every attention call over more than ${CHUNK} keys split`, async () => {
        const m = make();
        const { b, model } = await loadOn(m, { tuning, flashDecoding: { chunk: CHUNK } });
        const labels: string[] = [];
        const dispatch = b.dispatch.bind(b);
        b.dispatch = (p, ...rest) => { labels.push(p.label); dispatch(p, ...rest); };
        try {
          let worst = 0;
          for (const s of m.sequences) {
            const run = await runCaptured(b, model, s.ids, []);
            worst = Math.max(worst, maxDiff(run.logits, s.logits));
            const g = await greedyWithCache(b, model, s.prompt, s.greedy.length);
            const steps = decidableSteps(s.stepLogits, m.vocab, F32_TOL);
            expect(steps, `${s.name}: greedy steps decidable at 1e-4`).toBeGreaterThan(0);
            expect(g.ids.slice(0, steps), `${s.name}: greedy ids`).toEqual(s.greedy.slice(0, steps));
            for (let k = 0; k < steps; k++) worst = Math.max(worst, maxDiff(g.stepLogits[k], s.stepLogits.subarray(k * m.vocab, (k + 1) * m.vocab)));
          }
          expect(worst, 'max |Δ logits| against the reference').toBeLessThanOrEqual(F32_TOL);
          const split = labels.filter((l) => l.startsWith('attention_split')).length;
          const combine = labels.filter((l) => l === 'attention_combine').length;
          const onePass = labels.filter((l) => /^attention(_serial)?:/.test(l)).length;
          expect(split, 'split attention calls').toBeGreaterThan(0);
          expect(combine, 'one combine per split call').toBe(split);
          // only calls whose visible keys fit one chunk (a prompt of ≤ 5 tokens) keep the one-pass kernel
          expect(onePass, 'one-pass attention calls').toBeLessThan(split / 10);
        } finally {
          b.dispose();
        }
      });
    }
  }
});
