/**
 * Flash-decoding benchmark page (bench/flash.html): long-context decode on a SmolLM-135M-shaped
 * random Llama (9 query heads, 3 KV heads, d_head 64) with attention split across workgroups
 * (WebGpuOptions.flashDecoding 'auto', ops/attention_split.wgsl.ts) against the one-pass kernel
 * ('off'), one backend per mode, in one run. The KV cache is filled with random rows (restoreKv)
 * instead of a T-token prefill, so a long context costs nothing to set up. Measured (median of
 * `reps` after one unmeasured run):
 * - attention alone: one decode query against T cached keys per layer shape, result read back;
 * - a decode step: forward of one token at position T through every layer, last logits read back.
 * Also returns, per T, max |z_split − z_one-pass| of the attention outputs (a sanity print, not a test:
 * the tests compare the split path with the golden references, e2e/harness/flash_numerics.spec.ts).
 * Exposes `window.runFlashBench(options)` for bench/run-flash.ts.
 */
import type { Tensor } from '../workers/engine/backend/backend';
import { WebGpuBackend } from '../workers/engine/backend/webgpu';
import type { KernelTuning } from '../workers/engine/backend/webgpu_host';
import { splitPlan } from '../workers/engine/ops/attention_split.wgsl';
import { HttpFiles } from '../workers/engine/io/model_files';
import { loadTransformer } from '../workers/engine/model/load';
import { RunContext } from '../workers/engine/model/run_context';
import { median, now } from './page_tools';

export interface FlashBenchOptions {
  modelUrl: string;
  /** Context lengths T (keys in the cache when the measured token is decoded). */
  ts: number[];
  reps: number;
  tuning?: KernelTuning;
}

export interface FlashRow {
  T: number;
  /** Chunks of the 'auto' split at this T ('—' when it does not split) and the keys per chunk. */
  plan: string;
  attnOffMs: number;
  attnSplitMs: number;
  stepOffMs: number;
  stepSplitMs: number;
  /** max |z_split − z_one-pass| of the attention-alone outputs. */
  maxAbsDiff: number;
}

export interface FlashBenchResult {
  adapter: string;
  tuning: KernelTuning;
  threads: number;
  layers: number;
  rows: FlashRow[];
}

declare global {
  interface Window { runFlashBench: (o: FlashBenchOptions) => Promise<FlashBenchResult> }
}

/** Deterministic uniform values in [−1, 1) (xorshift32), so both modes see the same caches. */
function random(n: number, seed: number): Float32Array {
  const out = new Float32Array(n);
  let s = seed >>> 0 || 1;
  for (let i = 0; i < n; i++) {
    s ^= s << 13; s >>>= 0; s ^= s >>> 17; s ^= s << 5; s >>>= 0;
    out[i] = s / 2 ** 31 - 1;
  }
  return out;
}

async function timeMedian(reps: number, f: () => Promise<unknown>): Promise<number> {
  await f();
  const xs: number[] = [];
  for (let r = 0; r < reps; r++) {
    const t0 = now();
    await f();
    xs.push(now() - t0);
  }
  return median(xs);
}

window.runFlashBench = async (o: FlashBenchOptions): Promise<FlashBenchResult> => {
  const per = new Map<string, { attn: number; step: number; z: Float32Array }>();
  let adapter = '', tuning: KernelTuning = 'gpu', layers = 0, threads = 0;
  let shape = { H: 0, KV: 0, d: 0, scale: 0 };
  for (const mode of ['off', 'auto'] as const) {
    const b = await WebGpuBackend.create({ tuning: o.tuning, flashDecoding: mode });
    adapter = b.description; tuning = b.tuning; threads = b.threads;
    try {
      const { model } = await loadTransformer(new HttpFiles('bench model', o.modelUrl), b);
      const s = model.spec;
      layers = s.nLayers;
      shape = { H: s.nHeads, KV: s.nKvHeads, d: s.dHead, scale: s.attnScale };
      const kvW = s.nKvHeads * s.dHead;
      for (const T of o.ts) {
        if (T + 1 > model.contextLength) throw new Error(`T = ${T} needs ${T + 1} cache rows, the model holds ${model.contextLength}`);
        const up = (seed: number): Tensor => b.upload(random(T * kvW, seed), [T, kvW]);
        const snap = { rows: T, k: Array.from({ length: s.nLayers }, (_, l) => up(2 * l + 1)), v: Array.from({ length: s.nLayers }, (_, l) => up(2 * l + 2)) };
        model.restoreKv(snap);
        model.releaseKv(snap);
        // attention alone: the decode query at position T against the T + 1 keys of a cache like layer 0's
        const q = b.upload(random(s.nHeads * s.dHead, 99), [1, s.nHeads * s.dHead]);
        const kc = b.upload(random((T + 1) * kvW, 101), [T + 1, kvW]);
        const vc = b.upload(random((T + 1) * kvW, 102), [T + 1, kvW]);
        const p = { n: 1, past: T, nHeads: s.nHeads, nKvHeads: s.nKvHeads, headDim: s.dHead, scale: s.attnScale, softcap: 0, window: 0, wantPattern: false, wantScores: false };
        let z: Float32Array = new Float32Array(0);
        const attn = await timeMedian(o.reps, async () => {
          const r = b.attention(q, kc, vc, p);
          z = await b.read(r.z);
          b.release(r.z);
        });
        for (const t of [q, kc, vc]) b.release(t);
        const step = await timeMedian(o.reps, async () => {
          const ctx = new RunContext(b, { pos0: T, n: 1, nPrompt: T, step: 1 });
          const t = model.forward(Int32Array.of(1), ctx, 'last')!;
          await b.read(t);
          b.release(t);
          ctx.release();
        });
        per.set(`${mode}:${T}`, { attn, step, z });
      }
      model.dispose();
    } finally {
      b.dispose();
    }
  }
  const rows = o.ts.map((T): FlashRow => {
    const off = per.get(`off:${T}`)!, split = per.get(`auto:${T}`)!;
    const plan = splitPlan({ n: 1, past: T, nHeads: shape.H, window: 0 }, tuning, 'auto', threads);
    let maxAbsDiff = 0;
    for (let i = 0; i < off.z.length; i++) maxAbsDiff = Math.max(maxAbsDiff, Math.abs(off.z[i] - split.z[i]));
    return { T, plan: plan ? `${plan.chunks} × ${plan.chunk}` : '—', attnOffMs: off.attn, attnSplitMs: split.attn, stepOffMs: off.step, stepSplitMs: split.step, maxAbsDiff };
  });
  return { adapter, tuning, threads, layers, rows };
};
