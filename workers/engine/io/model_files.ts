import { assertSafeRelativePath } from './safe_names';

/**
 * A model folder in Hugging Face layout, wherever it lives (a local folder, files the user picked,
 * the Hub, a mirror, the dev server). Loaders read through this interface only.
 */
export interface ModelFiles {
  /** Where the files come from, for messages ("stories260K (local folder)", "hf.co/gpt2@main"). */
  readonly label: string;
  /** True if the file exists. */
  has(path: string): Promise<boolean>;
  /** The whole file. @throws Error saying which file is missing or unreadable. */
  bytes(path: string, onProgress?: (loaded: number, total: number) => void): Promise<Uint8Array>;
  /** Bytes [start, end) of a file (HTTP range request where remote). */
  range(path: string, start: number, end: number): Promise<Uint8Array>;
  /** File size in bytes. */
  size(path: string): Promise<number>;
  /** Why has(path) answered false, in words, where the source can tell (the Hub's X-Error-Code); else undefined. */
  absence?(path: string): string | undefined;
  /**
   * True where has() is a request the host logs, a 404 for an absent file (a URL prefix on a static
   * host, HttpFiles): checks that only look for trouble (refuseTwoCheckpoints) skip such probes.
   */
  readonly probesByRequest?: boolean;
}

/** Reads and parses a JSON file. @throws Error naming the file when it is missing or not JSON. */
export async function readJson(files: ModelFiles, path: string): Promise<Record<string, unknown>> {
  if (!(await files.has(path))) {
    const why = files.absence?.(path);
    throw new Error(`${files.label}: ${path} is missing${why ? ` (${why})` : ''}`);
  }
  const text = new TextDecoder().decode(await files.bytes(path));
  try {
    return JSON.parse(text) as Record<string, unknown>;
  } catch (e) {
    throw new Error(`${files.label}: ${path} is not valid JSON${jsonErrorPosition(e, text)}`);
  }
}

/**
 * Where JSON.parse failed, as " (line L, column C)" — never the engine's own message, which
 * quotes the input's bytes (an error about a file must not echo the file). '' when unknown.
 */
export function jsonErrorPosition(e: unknown, text: string): string {
  const m = /position (\d+)/.exec((e as Error)?.message ?? '');
  if (!m) return /end of JSON input|Unterminated/i.test((e as Error)?.message ?? '') ? ' (it ends early)' : '';
  const pos = Number(m[1]);
  const before = text.slice(0, pos);
  const line = before.split('\n').length;
  return ` (line ${line}, column ${pos - before.lastIndexOf('\n')})`;
}

/** Model files held in memory, keyed by relative path (files picked in the browser, tests). */
export class MemoryFiles implements ModelFiles {
  constructor(readonly label: string, private readonly files: Map<string, Uint8Array>) {}
  async has(path: string) { return this.files.has(path); }
  async bytes(path: string) {
    const f = this.files.get(path);
    if (!f) throw new Error(`${this.label}: ${path} is missing`);
    return f;
  }
  async range(path: string, start: number, end: number) { return (await this.bytes(path)).subarray(start, end); }
  async size(path: string) { return (await this.bytes(path)).length; }
}

/** Model files under an HTTP base URL (the dev server's /models/, a mirror). */
export class HttpFiles implements ModelFiles {
  /** has() is a HEAD request unless the folder's listing is known. */
  get probesByRequest(): boolean { return !this.listing; }
  /**
   * @param listing the folder's files with their sizes when known (a bundled model's build-time
   *   manifest, tools/bundled_models.ts): has() and size() answer from it, so no request is made for
   *   a file the folder lacks (a 404 for model.safetensors.index.json) and no HEAD for a size.
   */
  constructor(readonly label: string, private readonly base: string, private readonly init: RequestInit = {}, private readonly listing?: ReadonlyMap<string, number>) {}
  private url(path: string) { return this.base.replace(/\/?$/, '/') + assertSafeRelativePath(path); }
  async has(path: string) {
    if (this.listing) return this.listing.has(assertSafeRelativePath(path));
    const r = await fetch(this.url(path), { ...this.init, method: 'HEAD', cache: 'no-store' });
    return r.ok;
  }
  async bytes(path: string, onProgress?: (loaded: number, total: number) => void) {
    const r = await fetch(this.url(path), this.init);
    if (!r.ok) throw new Error(`${this.label}: ${path} — HTTP ${r.status} ${r.statusText}`);
    const total = Number(r.headers.get('content-length') ?? 0);
    if (!r.body || !onProgress) return new Uint8Array(await r.arrayBuffer());
    const chunks: Uint8Array[] = [];
    let loaded = 0;
    const reader = r.body.getReader();
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      chunks.push(value);
      loaded += value.length;
      onProgress(loaded, total);
    }
    const out = new Uint8Array(loaded);
    let o = 0;
    for (const c of chunks) { out.set(c, o); o += c.length; }
    return out;
  }
  async range(path: string, start: number, end: number) {
    const r = await fetch(this.url(path), { ...this.init, cache: 'no-store', headers: { ...(this.init.headers ?? {}), Range: `bytes=${start}-${end - 1}` } });
    if (!r.ok) throw new Error(`${this.label}: ${path} — HTTP ${r.status}`);
    const buf = new Uint8Array(await r.arrayBuffer());
    return r.status === 206 ? buf : buf.subarray(start, end);
  }
  /**
   * File size in bytes. The HEAD bypasses the HTTP cache: a revalidated HEAD (304 from a static
   * server on a second load) can come back without Content-Length, which read as a 0-byte file.
   * Without a usable Content-Length, a one-byte range request's Content-Range gives the size.
   * @throws Error for an HTTP error or a server that reports no size at all.
   */
  async size(path: string) {
    const listed = this.listing?.get(assertSafeRelativePath(path));
    if (listed !== undefined) return listed;
    const r = await fetch(this.url(path), { ...this.init, method: 'HEAD', cache: 'no-store' });
    if (!r.ok) throw new Error(`${this.label}: ${path} — HTTP ${r.status}`);
    const len = r.headers.get('content-length');
    if (len !== null && !r.headers.get('content-encoding') && Number(len) > 0) return Number(len);
    const probe = await fetch(this.url(path), { ...this.init, cache: 'no-store', headers: { ...(this.init.headers ?? {}), Range: 'bytes=0-0' } });
    const total = /\/(\d+)\s*$/.exec(probe.headers.get('content-range') ?? '');
    if (probe.status === 206 && total) { await probe.body?.cancel(); return Number(total[1]); }
    if (probe.ok) return (await probe.arrayBuffer()).byteLength;
    throw new Error(`${this.label}: ${path} — the server did not report its size (HTTP ${probe.status})`);
  }
}
