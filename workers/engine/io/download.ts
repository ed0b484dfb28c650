/**
 * Streaming download helpers shared by the Hub reader and the model cache: reading a response body
 * chunk by chunk with progress (bytes, rate, ETA), stopping early for servers that ignore Range,
 * and turning an abort into one clear "cancelled" error.
 */

/** Progress of one download. */
export interface DownloadProgress {
  /** Bytes received so far. */
  loaded: number;
  /** Expected bytes (0 when the server does not say). */
  total: number;
  /** Recent throughput in bytes per second (0 until it can be measured). */
  bytesPerSecond: number;
  /** Seconds left at the recent rate; undefined while the total or the rate is unknown. */
  etaSeconds?: number;
}

/** Thrown when a download is stopped through its AbortSignal. */
export class CancelledError extends Error {
  constructor(what: string) {
    super(`cancelled: ${what} was stopped before it finished`);
    this.name = 'CancelledError';
  }
}

/** True for the errors fetch and stream readers raise when their signal aborts. */
export function isAbort(e: unknown, signal?: AbortSignal): boolean {
  return Boolean(signal?.aborted) || (e instanceof Error && e.name === 'AbortError');
}

/**
 * Turns (loaded, total) samples into rates and ETAs, averaging over a sliding window so the ETA
 * does not jump with every chunk.
 */
export class RateMeter {
  private readonly samples: { t: number; loaded: number }[] = [];
  /** @param windowMs averaging window in milliseconds. @param now clock in milliseconds. */
  constructor(private readonly windowMs = 3000, private readonly now: () => number = () => performance.now()) {}

  /** Records a sample and returns the progress with rate (bytes/s) and ETA (s). */
  sample(loaded: number, total: number): DownloadProgress {
    const t = this.now();
    this.samples.push({ t, loaded });
    while (this.samples.length > 2 && t - this.samples[1].t > this.windowMs) this.samples.shift();
    const first = this.samples[0];
    const dt = (t - first.t) / 1000;
    const bytesPerSecond = dt > 0 ? (loaded - first.loaded) / dt : 0;
    const etaSeconds = total > 0 && bytesPerSecond > 0 ? Math.max(0, total - loaded) / bytesPerSecond : undefined;
    return { loaded, total, bytesPerSecond, etaSeconds };
  }
}

/**
 * Reads a response body into one array.
 * @param limit stop after this many bytes and cancel the rest of the stream (a server that ignored
 *   a Range request must not make us download a whole multi-gigabyte shard).
 * @param onChunk called after every chunk with the bytes received so far.
 * @param what names the download in the CancelledError ("model.safetensors from gpt2@main").
 * @throws CancelledError when `signal` aborts mid-stream; the stream's own error otherwise.
 */
export async function readBody(
  res: Response,
  opts: { limit?: number; onChunk?: (loaded: number) => void; signal?: AbortSignal; what: string },
): Promise<Uint8Array> {
  const limit = opts.limit ?? Infinity;
  if (!res.body) return new Uint8Array(await res.arrayBuffer()).subarray(0, Math.min(limit, Number.MAX_SAFE_INTEGER));
  const reader = res.body.getReader();
  const chunks: Uint8Array[] = [];
  let loaded = 0;
  const onAbort = () => { void reader.cancel().catch(() => {}); };
  opts.signal?.addEventListener('abort', onAbort);
  try {
    while (loaded < limit) {
      if (opts.signal?.aborted) throw new CancelledError(opts.what);
      const { done, value } = await reader.read();
      if (done) break;
      chunks.push(value);
      loaded += value.length;
      opts.onChunk?.(Math.min(loaded, limit));
    }
    if (opts.signal?.aborted) throw new CancelledError(opts.what);
  } catch (e) {
    if (isAbort(e, opts.signal)) throw new CancelledError(opts.what);
    throw e;
  } finally {
    opts.signal?.removeEventListener('abort', onAbort);
    if (loaded >= limit) await reader.cancel().catch(() => {});
    reader.releaseLock();
  }
  const n = Math.min(loaded, limit);
  if (chunks.length === 1) return chunks[0].subarray(0, n);
  const out = new Uint8Array(n);
  let o = 0;
  for (const c of chunks) {
    if (o >= n) break;
    const part = c.subarray(0, n - o);
    out.set(part, o);
    o += part.length;
  }
  return out;
}
