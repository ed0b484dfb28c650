import { describe, expect, it } from 'vitest';
import { Engine } from '../../workers/engine/engine';
import { NodeFiles } from '../../workers/engine/io/node_files';
import { warmUpGeneration } from '../../workers/engine/model/warm_up';
import type { WebGpuBackend } from '../../workers/engine/backend/webgpu';
import { runCaptured } from '../model_run';
import { F32_TOL, maxDiff } from '../reference_math';
import { nodeBackend } from './node_webgpu';
import { decidableSteps, stories260K, unavailable } from './lavapipe_suite';

/**
 * The pipeline warm-up at load (workers/engine/model/warm_up.ts, Engine.load's warmUp): after it,
 * generation compiles no pipeline — not for a prompt of ≥ 5 tokens, not for one of 2–4, and not once
 * the context is long enough for split (flash-decoding) attention — and it changes no number:
 * greedy ids and full-sequence logits still match stories260K's golden references. Without the
 * warm-up the same generation does compile pipelines (the check can tell). Node WebGPU adapter,
 * both kernel tunings. The calls it makes, and its no-op on the CPU backend: tests/model/warm_up_calls.test.ts.
 */
const why = await unavailable([]);
const FUTURES = { good: { ids: [[432]] }, bad: { ids: [[383]] } };

/** Runs body and returns the labels of the pipelines it compiled and dispatched. */
async function watch(b: WebGpuBackend, body: () => Promise<unknown>): Promise<{ compiled: string[]; dispatched: string[] }> {
  const before = new Set(b.pipelineKeys);
  const dispatched: string[] = [];
  const dispatch = b.dispatch.bind(b);
  b.dispatch = (p, ...rest) => { dispatched.push(p.label); dispatch(p, ...rest); };
  try {
    await body();
  } finally {
    b.dispatch = dispatch;
  }
  return { compiled: b.pipelineKeys.filter((k) => !before.has(k)), dispatched };
}

describe.skipIf(!!why)(`generation after the load's warm-up on the Node adapter${why ? ` (skipped: ${why})` : ''}`, () => {
  const m = stories260K();
  const once = m.sequences.find((s) => s.name === 'once_upon_a_time')!;
  const lily = m.sequences.find((s) => s.name === 'lily_tom_ball')!;
  for (const tuning of ['gpu', 'cpu'] as const) {
    it(`('${tuning}' kernels) compiles nothing while generating (prompts of 3, 5 and > 256 tokens), and matches the golden ids and logits`, async () => {
      const b = await nodeBackend({ tuning });
      const stages: string[] = [];
      const e = await Engine.load(new NodeFiles(m.dir), b, (p) => stages.push(p.stage), { warmUp: true });
      try {
        expect(stages.slice(-2)).toEqual(['kernels', 'ready']);
        expect(b.pipelineKeys.length, 'pipelines compiled by the warm-up').toBeGreaterThan(10);
        // 'Once upon a time' is 5 prompt tokens: the ≥ 5-row kernels, then one-row decode steps
        let ids: number[] = [];
        const golden = await watch(b, async () => { ids = (await e.generate({ prompt: 'Once upon a time', ...FUTURES, maxNewTokens: once.greedy.length, stopAtEos: false })).ids; });
        expect(golden.compiled, 'pipelines compiled during the first generation').toEqual([]);
        const steps = decidableSteps(once.stepLogits, m.vocab, F32_TOL);
        expect(steps).toBeGreaterThan(0);
        expect(ids.slice(0, steps), 'greedy ids against the golden reference').toEqual(once.greedy.slice(0, steps));
        // a prompt of > 256 tokens: its decode steps pass both tunings' split length (128 / 256 keys on 2–4 threads)
        const longPrompt = 'Once upon a time there was a cat. '.repeat(30);
        expect(e.encodePrompt({ prompt: longPrompt }).length).toBeGreaterThan(256);
        const long = await watch(b, () => e.generate({ prompt: longPrompt, ...FUTURES, maxNewTokens: 3, stopAtEos: false }));
        expect(long.dispatched.some((l) => l.startsWith('attention_split')), 'the generation reached split attention').toBe(true);
        expect(long.compiled, 'pipelines compiled for a long context').toEqual([]);
        // 'Once upon' is 3 tokens: the 2–4-row kernels
        const short = await watch(b, () => e.generate({ prompt: 'Once upon', ...FUTURES, maxNewTokens: 4 }));
        expect(e.encodePrompt({ prompt: 'Once upon' }).length).toBe(3);
        expect(short.compiled, 'pipelines compiled for a 3-token prompt').toEqual([]);
        const run = await runCaptured(b, e.model, lily.ids, []);
        expect(maxDiff(run.logits, lily.logits), 'max |Δ logits| of a full sequence after the warm-up').toBeLessThanOrEqual(F32_TOL);
        // the warm-up's own count: rows 5 + 2 + 1 and the last of the 512 cache positions
        expect(e.model.contextLength).toBe(512);
        expect(await warmUpGeneration(e.model, b)).toBe(9);
      } finally {
        e.dispose();
      }
    });
  }

  it('without the warm-up, the first generation compiles pipelines (what the warm-up moves into the load)', async () => {
    const b = await nodeBackend({ tuning: 'cpu' });
    const stages: string[] = [];
    const e = await Engine.load(new NodeFiles(m.dir), b, (p) => stages.push(p.stage));
    try {
      expect(stages).not.toContain('kernels');
      const first = await watch(b, () => e.generate({ prompt: 'Once upon a time', ...FUTURES, maxNewTokens: 4 }));
      expect(first.compiled.length).toBeGreaterThan(10);
    } finally {
      e.dispose();
    }
  });
});
