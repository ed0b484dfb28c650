/**
 * An in-memory stand-in for the browser's Cache Storage (Node has none), with just the calls the
 * model cache uses: open, match, put, keys, delete. Bodies are copied in and out, as the real one
 * stores them.
 */
export class MemoryCacheStorage {
  readonly caches = new Map<string, MemoryCache>();
  /** When true every put() rejects like a full quota. */
  full = false;

  async open(name: string): Promise<MemoryCache> {
    let c = this.caches.get(name);
    if (!c) this.caches.set(name, (c = new MemoryCache(this)));
    return c;
  }

  /** Typed as the DOM interface for the code under test. */
  asCacheStorage(): CacheStorage {
    return this as unknown as CacheStorage;
  }
}

export class MemoryCache {
  readonly entries = new Map<string, { body: Uint8Array; headers: [string, string][] }>();
  constructor(private readonly storage: MemoryCacheStorage) {}

  async match(req: RequestInfo | URL): Promise<Response | undefined> {
    const e = this.entries.get(urlOf(req));
    return e && new Response(e.body.slice(), { headers: e.headers });
  }

  async put(req: RequestInfo | URL, res: Response): Promise<void> {
    if (this.storage.full) throw new DOMException('Quota exceeded', 'QuotaExceededError');
    this.entries.set(urlOf(req), { body: new Uint8Array(await res.arrayBuffer()), headers: [...res.headers] });
  }

  async keys(): Promise<Request[]> {
    return [...this.entries.keys()].map((u) => new Request(u));
  }

  async delete(req: RequestInfo | URL): Promise<boolean> {
    return this.entries.delete(urlOf(req));
  }
}

function urlOf(req: RequestInfo | URL): string {
  return new Request(req).url;
}
