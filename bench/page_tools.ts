/**
 * Helpers shared by the benchmark pages (bench/browser.ts, bench/model.ts): timing, greedy loops
 * of our engine and of transformers.js, the lens grid as Engine.analyse computes it, and a
 * recorder of WebGPU dispatches.
 */
import { DynamicCache, Tensor as HfTensor, type PreTrainedModel } from '@huggingface/transformers';
import type { WebGpuBackend } from '../workers/engine/backend/webgpu';
import type { Engine } from '../workers/engine/engine';
import { RunContext } from '../workers/engine/model/run_context';
import { lensColumnLogits } from '../workers/engine/model/lens';

export const now = () => performance.now();

export function median(xs: readonly number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  const m = s.length >> 1;
  return s.length % 2 ? s[m] : (s[m - 1] + s[m]) / 2;
}

/** Index of the first maximum of row `row` of a [rows, V] array. */
export function argmax(x: ArrayLike<number>, V: number, row = 0): number {
  let best = row * V;
  for (let i = row * V + 1; i < (row + 1) * V; i++) if (x[i] > x[best]) best = i;
  return best - row * V;
}

/** Runs fn warmup + reps times and returns the measured results. */
export async function repeat<T>(o: { reps: number; warmup: number }, fn: () => Promise<T>): Promise<T[]> {
  for (let i = 0; i < o.warmup; i++) await fn();
  const out: T[] = [];
  for (let i = 0; i < o.reps; i++) out.push(await fn());
  return out;
}

/** Times one call in ms. */
export async function timed(fn: () => Promise<unknown>): Promise<number> {
  const t0 = now();
  await fn();
  return now() - t0;
}

/**
 * Times `a` and `b` alternately (a b a b …, after `warmup` calls of each) so that a swing of the
 * machine's load hits both; returns the median ms of each [a, b].
 */
export async function interleaved(o: { reps: number; warmup: number }, a: () => Promise<unknown>, b: () => Promise<unknown>): Promise<[number, number]> {
  for (let i = 0; i < o.warmup; i++) { await a(); await b(); }
  const ta: number[] = [], tb: number[] = [];
  for (let i = 0; i < o.reps; i++) { ta.push(await timed(a)); tb.push(await timed(b)); }
  return [median(ta), median(tb)];
}

/** One greedy run: prefill time, each decode step's time, and the ids (prompt + new). */
export interface GreedyRun {
  prefillMs: number;
  stepMs: number[];
  ids: number[];
}

/** Prefill + nDecode greedy steps on our engine, as Engine.generate drives the model. */
export async function engineGreedy(e: Engine, prompt: number[], nDecode: number): Promise<GreedyRun> {
  const V = e.spec.dVocab, T = prompt.length;
  let t0 = now();
  const { logits } = await e.run(prompt, { logits: 'last' });
  const ids = [...prompt, argmax(logits, V)];
  const prefillMs = now() - t0;
  const stepMs: number[] = [];
  for (let k = 1; k <= nDecode; k++) {
    t0 = now();
    const ctx = new RunContext(e.backend, { pos0: T + k - 1, n: 1, nPrompt: T, step: k });
    const out = e.model.forward(Int32Array.of(ids[ids.length - 1]), ctx, 'last')!;
    const host = await e.backend.read(out);
    e.backend.release(out);
    ctx.release();
    ids.push(argmax(host, V));
    stepMs.push(now() - t0);
  }
  return { prefillMs, stepMs, ids };
}

export const int64 = (ids: readonly number[]) => new HfTensor('int64', BigInt64Array.from(ids, (i) => BigInt(i)), [1, ids.length]);
export const ones = (n: number) => new HfTensor('int64', new BigInt64Array(n).fill(1n), [1, n]);

/** present.* outputs of one ONNX call → the past_key_values.* inputs of the next. */
export function pastOf(out: Record<string, HfTensor>): DynamicCache {
  const entries: Record<string, HfTensor> = {};
  for (const [name, t] of Object.entries(out)) if (name.startsWith('present')) entries[name.replace('present', 'past_key_values')] = t;
  return new DynamicCache(entries);
}

/** Prefill + nDecode greedy steps with transformers.js, calling the model's forward directly. */
export async function hfGreedy(model: PreTrainedModel, prompt: number[], nDecode: number): Promise<GreedyRun> {
  const T = prompt.length;
  let t0 = now();
  let out = (await model.forward({ input_ids: int64(prompt), attention_mask: ones(T) })) as Record<string, HfTensor>;
  const V = out.logits.dims[2];
  const ids = [...prompt, argmax(out.logits.data as Float32Array, V, T - 1)];
  const prefillMs = now() - t0;
  const stepMs: number[] = [];
  for (let k = 1; k <= nDecode; k++) {
    t0 = now();
    out = (await model.forward({ input_ids: int64([ids[ids.length - 1]]), attention_mask: ones(T + k), past_key_values: pastOf(out) })) as Record<string, HfTensor>;
    ids.push(argmax(out.logits.data as Float32Array, V));
    stepMs.push(now() - t0);
  }
  return { prefillMs, stepMs, ids };
}


/**
 * The logit-lens margin grid alone, as Engine.analyse computes it: forward over the prompt capturing
 * hook_resid_pre of block 0 and every hook_resid_post, then LN_f and the futures' rows of W_U on the
 * stacked [(L+1)·T, d] residuals (model/lens.ts lensColumnLogits), read back ([(L+1)·T, |cols|]).
 * No sinks or sequence margin.
 */
export async function lensGrid(e: Engine, ids: number[], cols: Int32Array): Promise<Float32Array> {
  const b = e.backend, L = e.spec.nLayers, T = ids.length;
  const names = ['blocks.0.hook_resid_pre', ...Array.from({ length: L }, (_, l) => `blocks.${l}.hook_resid_post`)];
  const want = new Set(names);
  const ctx = new RunContext(b, { pos0: 0, n: T, nPrompt: T, step: 0 }, (n) => want.has(n));
  try {
    b.release(e.model.forward(Int32Array.from(ids), ctx, 'last')!);
    const stack = b.concatRows(names.map((n) => ctx.captured.get(n)!));
    const logits = lensColumnLogits(e.model, stack, Array.from(cols));
    const out = await b.read(logits);
    for (const t of [stack, logits]) b.release(t);
    return out;
  } finally {
    ctx.release();
  }
}


/** What one piece of work recorded on a WebGPU backend: counts, and every dispatch for replay. */
export interface GpuWork {
  dispatches: Parameters<WebGpuBackend['dispatch']>[];
  submits: number;
  reads: number;
}

/** Records the dispatches, queue submits and read-backs of a WebGPU backend while fn runs. */
export async function recordGpuWork(b: WebGpuBackend, fn: () => Promise<unknown>): Promise<GpuWork> {
  const c: GpuWork = { dispatches: [], submits: 0, reads: 0 };
  // Instance-level wrappers, deleted afterwards: the bench only observes, the backend is unchanged.
  const { dispatch, read } = b;
  const queue = b.device.queue, submit = queue.submit;
  b.dispatch = (...a) => { c.dispatches.push(a); dispatch.apply(b, a); };
  b.read = (...a) => { c.reads++; return read.apply(b, a); };
  queue.submit = (...a) => { c.submits++; submit.apply(queue, a); };
  try {
    await fn();
  } finally {
    delete (b as Partial<WebGpuBackend>).dispatch;
    delete (b as Partial<WebGpuBackend>).read;
    delete (queue as Partial<GPUQueue>).submit;
  }
  return c;
}


/** FLOPs of one decode token at position `pos` (2 per multiply-add). */
export function decodeFlops(e: Engine, pos: number): number {
  const s = e.spec, q = s.nHeads * s.dHead, kv = s.nKvHeads * s.dHead;
  const proj = s.dModel * (q + 2 * kv) + q * s.dModel + (s.gatedMlp ? 3 : 2) * s.dModel * s.dMlp;
  const attn = 2 * s.nHeads * s.dHead * (pos + 1);
  return 2 * (s.nLayers * (proj + attn) + s.dModel * s.dVocab);
}

