import * as Comlink from 'comlink';
import type { InferenceApi } from '../../workers/protocol';

let api: Comlink.Remote<InferenceApi> | null = null;
let queue: Promise<unknown> = Promise.resolve();

/** The inference worker behind Comlink, started on first use. */
export function worker(): Comlink.Remote<InferenceApi> {
  if (!api) {
    const w = new Worker(new URL('../../workers/inference.worker.ts', import.meta.url), { type: 'module', name: 'inference' });
    api = Comlink.wrap<InferenceApi>(w);
  }
  return api;
}

/**
 * Runs worker calls one after another: the engine holds one KV cache, so a tokenize or pattern
 * call must not interleave with a generation. A failure does not block the calls queued after it.
 */
export function inOrder<T>(call: (w: Comlink.Remote<InferenceApi>) => Promise<T>): Promise<T> {
  const run = queue.then(() => call(worker()));
  queue = run.catch(() => undefined);
  return run;
}

/** The message of whatever a worker call threw (Comlink rethrows Errors with their message). */
export function messageOf(e: unknown): string {
  if (e instanceof Error) return e.message;
  if (typeof e === 'string') return e;
  return JSON.stringify(e);
}
