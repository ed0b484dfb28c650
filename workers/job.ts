/**
 * The one wrapper every method of the inference worker runs through (inference.worker.ts): job
 * registration (what cancel() stops), an abort mapped to a CancelledError, UI callbacks made quiet,
 * and the result's typed arrays handed over as transferables.
 */
import * as Comlink from 'comlink';
import { CancelledError } from './engine/io/download';

/**
 * The buffers to transfer with `value`: the ArrayBuffer behind every typed array (and DataView)
 * reachable through its plain objects, arrays, Maps and Sets, each once. A SharedArrayBuffer is
 * shared, not transferred; an empty or already detached buffer is left out (transferring it again
 * would throw DataCloneError).
 * A result must not hold a view of a buffer the worker keeps: the transfer detaches it there.
 */
export function transferables(value: unknown): ArrayBuffer[] {
  const found = new Set<ArrayBuffer>();
  const seen = new Set<object>();
  const walk = (v: unknown): void => {
    if (typeof v !== 'object' || v === null || seen.has(v)) return;
    seen.add(v);
    if (ArrayBuffer.isView(v)) {
      if (v.buffer instanceof ArrayBuffer && v.buffer.byteLength > 0) found.add(v.buffer);
      return;
    }
    if (v instanceof ArrayBuffer) {
      if (v.byteLength > 0) found.add(v);
      return;
    }
    if (v instanceof Map) {
      for (const [k, x] of v) { walk(k); walk(x); }
      return;
    }
    if (v instanceof Set || Array.isArray(v)) {
      for (const x of v) walk(x);
      return;
    }
    for (const x of Object.values(v)) walk(x);
  };
  walk(value);
  return [...found];
}

/** A UI callback whose failure (a page that went away, a released proxy) must not stop the job. */
export function quiet<A extends unknown[]>(f: (...a: A) => unknown): (...a: A) => void {
  return (...a) => {
    try {
      void Promise.resolve(f(...a)).catch(() => undefined);
    } catch { /* nothing is left to tell */ }
  };
}

/** How one worker method takes part in cancel(). */
export interface JobOptions {
  /**
   * 'job': the method is the job cancel() stops; starting it cancels the job running. It settles by
   * itself on an abort (a generation resolves with stop = 'cancelled', a batch with the rows done)
   * unless `what` is given.
   * 'download': a model load: it cancels the job running and cancel() stops it (its download
   * rejects with a CancelledError), but a job started meanwhile does not.
   * Default: cancel() leaves it alone.
   */
  cancel?: 'job' | 'download';
  /** With cancel 'job': the job's name; an abort rejects with CancelledError(what) whatever the body threw. */
  what?: string;
}

/** What a method's body gets: the signal cancel() aborts (never aborted for a method cancel() leaves alone). */
export interface JobRun {
  signal: AbortSignal;
}

/** The cancellable jobs of one worker: the job running and the model download in flight. */
export class Jobs {
  private running: AbortController | null = null;
  private download: AbortController | null = null;

  /** Aborts the job running and the download in flight. */
  cancel(): void {
    this.running?.abort();
    this.download?.abort();
  }

  /**
   * The worker method `body` as the API exposes it: every function argument (a Comlink proxy of a
   * UI callback) made quiet, the call registered as `opts` says, and the result's typed arrays
   * (transferables()) transferred to the page.
   */
  method<A extends unknown[], R>(opts: JobOptions, body: (run: JobRun, ...args: A) => Promise<R>): (...args: A) => Promise<R> {
    return async (...args: A) => {
      const ctrl = this.start(opts.cancel);
      const quietArgs = args.map((a) => (typeof a === 'function' ? quiet(a as (...x: unknown[]) => unknown) : a)) as A;
      let result: R;
      try {
        result = await body({ signal: ctrl.signal }, ...quietArgs);
      } catch (err) {
        if (opts.what !== undefined && ctrl.signal.aborted) throw new CancelledError(opts.what);
        throw err;
      } finally {
        if (this.download === ctrl) this.download = null;
      }
      const transfer = transferables(result);
      return transfer.length ? Comlink.transfer(result, transfer) : result;
    };
  }

  /** The controller of a call starting now, registered as `cancel` says. */
  private start(cancel: JobOptions['cancel']): AbortController {
    const ctrl = new AbortController();
    if (cancel === 'job') {
      this.running?.abort();
      this.running = ctrl;
    } else if (cancel === 'download') {
      this.cancel();
      this.download = ctrl;
    }
    return ctrl;
  }
}
