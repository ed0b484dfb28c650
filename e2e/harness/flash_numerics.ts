/**
 * Flash-decoding (split-K attention, workers/engine/ops/attention_split.wgsl.ts) forced on with a
 * small chunk, so every attention call of a prefill and of each KV-cache decode step is split into
 * several chunks whose partials are combined with the log-sum-exp rescale: logits, greedy ids and
 * per-step logits against the golden references (../shared/models/stories260K/reference/README.md,
 * ../shared/fixtures/README.md) on stories260K (GQA 8/4), llama-tiny (GQA 4/2), mistral-tiny
 * (sliding window 6) and gemma2-tiny (soft-capping 5, sliding window 6 on local layers).
 * (The fused-vs-unfused decode comparison of numerics.ts is left to it: the split changes no fusion.)
 * Exposes `window.runFlashNumerics(tuning, models)` for flash_numerics.spec.ts.
 */
import { WebGpuBackend } from '../../workers/engine/backend/webgpu';
import type { KernelTuning } from '../../workers/engine/backend/webgpu_host';
import { F32_TOL, fixture, realModel, type NumericsReport, type Variant } from './numerics';

/**
 * Keys per chunk: smaller than the sliding window (6) and than every prompt, and not a divisor of
 * either, so chunks straddle the window's edge, some chunks are empty for a query (skipped keys)
 * and the last chunk is partial; stories260K's contexts (up to 53 keys) take up to 11 chunks.
 */
export const FLASH_CHUNK = 5;

/** The models that can be run: stories260K and fixtures with GQA, sliding window, soft-capping (see the file comment). */
export const FLASH_MODELS = ['stories260K', 'llama-tiny', 'mistral-tiny', 'gemma2-tiny'];

/** Per model: partial-kernel and combine dispatches recorded (proof that the split path ran). */
export type SplitCounts = Record<string, { partial: number; combine: number; onePass: number }>;

declare global {
  interface Window { runFlashNumerics: (tuning: KernelTuning, models: string[]) => Promise<NumericsReport & { splits: SplitCounts }> }
}

const FLASH: Variant = { tag: `flash-decoding (chunks of ${FLASH_CHUNK} keys): `, weights: {}, hooks: false, tol: F32_TOL, exactIds: true, fusedCheck: false };

window.runFlashNumerics = async (tuning: KernelTuning, models: string[]) => {
  const b = await WebGpuBackend.create({ tuning, flashDecoding: { chunk: FLASH_CHUNK } });
  const report: NumericsReport & { splits: SplitCounts } = { adapter: b.description, tuning: b.tuning, rows: [], generations: [], skipped: [], splits: {} };
  const labels: string[] = [];
  const dispatch = b.dispatch;
  b.dispatch = (...a) => { labels.push(a[0].label); dispatch.apply(b, a); };
  const count = (name: string): void => {
    report.splits[name] = {
      partial: labels.filter((l) => l.startsWith('attention_split')).length,
      combine: labels.filter((l) => l === 'attention_combine').length,
      onePass: labels.filter((l) => /^attention(_serial)?:/.test(l)).length,
    };
    labels.length = 0;
  };
  try {
    for (const name of models) {
      if (!FLASH_MODELS.includes(name)) throw new Error(`runFlashNumerics: ${name} is not one of ${FLASH_MODELS.join(', ')}`);
      if (name === 'stories260K') (await realModel(b, name, report, FLASH)).dispose();
      else await fixture(b, name, report, FLASH);
      count(name);
    }
  } finally {
    b.dispatch = dispatch;
    b.dispose();
  }
  return report;
};
