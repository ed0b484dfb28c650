/**
 * Model files kept in the browser's Cache Storage (`caches.open('branchpoint-models-v1')`), so a
 * model downloads once and loads offline afterwards (DESIGN.md §2 "Models").
 *
 * Layout inside the cache: each whole file under its resolve URL (endpoint/repo/resolve/rev/file —
 * never a token), and one manifest per model under `<base>?branchpoint=manifest` recording which
 * files exist, their sizes, and which were looked for and are absent. With the manifest a second
 * load answers has()/size()/bytes()/range() without a single network request.
 */
import { assertSafeRelativePath } from './safe_names';
import { readBody } from './download';
import type { ModelFiles } from './model_files';

export const CACHE_NAME = 'branchpoint-models-v1';
const MANIFEST = '?branchpoint=manifest';

/** What identifies a cached model; none of it may hold a secret (it becomes a cache key). */
export interface CacheKey {
  /** Base URL the files are under, ending in '/' (the Hub: `{endpoint}/{repo}/resolve/{revision}/`). */
  base: string;
  /** Endpoint the model came from (shown in the cache manager). */
  endpoint: string;
  repo: string;
  revision: string;
}

/** One cached model, as the cache manager lists it. */
export interface CachedModel {
  endpoint: string;
  repo: string;
  revision: string;
  /** Files held in the cache, with their sizes in bytes. */
  files: { path: string; bytes: number }[];
  /** Sum of the cached files' sizes in bytes. */
  totalBytes: number;
}

interface Manifest {
  version: 1;
  endpoint: string;
  repo: string;
  revision: string;
  /** path → size in bytes (null until known), for files known to exist (cached or not). */
  present: Record<string, number | null>;
  /** Paths that were looked for and do not exist. */
  absent: string[];
  /** Paths whose whole content is in the cache. */
  cached: string[];
}

/** The global Cache Storage, or null where there is none (Node, insecure origins). */
export function defaultCacheStorage(): CacheStorage | null {
  return typeof caches === 'undefined' ? null : caches;
}

/**
 * Wraps `inner` so every whole file read is stored in the cache and every later read (of any
 * kind) is answered from it. Where `storage` is null (Node) `inner` is returned unchanged.
 * Failures to write the cache (quota) do not fail the load: the model is then just not cached.
 */
export async function withCache(inner: ModelFiles, key: CacheKey, storage: CacheStorage | null = defaultCacheStorage()): Promise<ModelFiles> {
  if (!storage) return inner;
  const cache = await storage.open(CACHE_NAME);
  const stored = await cache.match(key.base + MANIFEST);
  const manifest: Manifest = stored
    ? (await stored.json() as Manifest)
    : { version: 1, endpoint: key.endpoint, repo: key.repo, revision: key.revision, present: {}, absent: [], cached: [] };
  return new CachedFiles(inner, key, cache, manifest);
}

class CachedFiles implements ModelFiles {
  readonly label: string;
  private warned = false;
  constructor(private readonly inner: ModelFiles, private readonly key: CacheKey, private readonly cache: Cache, private readonly manifest: Manifest) {
    this.label = inner.label;
  }

  async has(path: string): Promise<boolean> {
    assertSafeRelativePath(path);
    if (path in this.manifest.present) return true;
    if (this.manifest.absent.includes(path)) return false;
    const found = await this.inner.has(path);
    if (found) this.manifest.present[path] = null;
    else this.manifest.absent.push(path);
    await this.saveManifest();
    return found;
  }

  async size(path: string): Promise<number> {
    assertSafeRelativePath(path);
    const known = this.manifest.present[path];
    if (known != null) return known;
    const n = await this.inner.size(path);
    this.manifest.present[path] = n;
    await this.saveManifest();
    return n;
  }

  async bytes(path: string, onProgress?: (loaded: number, total: number) => void): Promise<Uint8Array> {
    const hit = await this.match(path);
    if (hit) {
      const out = new Uint8Array(await hit.arrayBuffer());
      onProgress?.(out.length, out.length);
      return out;
    }
    const out = await this.inner.bytes(path, onProgress);
    try {
      await this.cache.put(this.key.base + path, new Response(out as Uint8Array<ArrayBuffer>, { headers: { 'content-type': 'application/octet-stream', 'content-length': String(out.length) } }));
    } catch (e) {
      this.warn(`${path} could not be cached (${(e as Error).message}); it will be downloaded again next time`);
      return out;
    }
    this.manifest.present[path] = out.length;
    if (!this.manifest.cached.includes(path)) this.manifest.cached.push(path);
    await this.saveManifest();
    return out;
  }

  async range(path: string, start: number, end: number): Promise<Uint8Array> {
    const hit = await this.match(path);
    if (!hit) return this.inner.range(path, start, end);
    return (await readBody(hit, { limit: end, what: `the cached ${path}` })).subarray(start, end);
  }

  /** The cached response of `path` (a safe relative name: it becomes part of the cache key URL). */
  private async match(path: string): Promise<Response | undefined> {
    assertSafeRelativePath(path);
    if (!this.manifest.cached.includes(path)) return undefined;
    return this.cache.match(this.key.base + path);
  }

  /** Stores the manifest; a failure (quota) only costs the offline answers it would have given. */
  private async saveManifest(): Promise<void> {
    try {
      await this.cache.put(this.key.base + MANIFEST, new Response(JSON.stringify(this.manifest), { headers: { 'content-type': 'application/json' } }));
    } catch (e) {
      this.warn(`the cache manifest could not be stored (${(e as Error).message})`);
    }
  }

  /** Warns once per load: the model still loads, it is just not (fully) cached. */
  private warn(message: string): void {
    if (this.warned) return;
    this.warned = true;
    console.warn(`${this.label}: ${message}`);
  }
}

/** Every model in the cache that holds at least one file, with its files and total size (the cache manager's list). Empty where there is no Cache Storage. */
export async function listCachedModels(storage: CacheStorage | null = defaultCacheStorage()): Promise<CachedModel[]> {
  if (!storage) return [];
  const cache = await storage.open(CACHE_NAME);
  const out: CachedModel[] = [];
  for (const req of await cache.keys()) {
    if (!req.url.endsWith(MANIFEST)) continue;
    const m = (await (await cache.match(req))!.json()) as Manifest;
    if (!m.cached.length) continue; // a load that failed before storing a file: nothing would load offline
    const files = m.cached.map((p) => ({ path: p, bytes: m.present[p] ?? 0 }));
    out.push({ endpoint: m.endpoint, repo: m.repo, revision: m.revision, files, totalBytes: files.reduce((a, f) => a + f.bytes, 0) });
  }
  return out.sort((a, b) => a.repo.localeCompare(b.repo) || a.revision.localeCompare(b.revision));
}

/**
 * Deletes one model's files and manifest (all endpoints when `endpoint` is omitted).
 * @returns the number of cache entries removed (0 when the model was not cached).
 */
export async function deleteCachedModel(repo: string, revision: string, endpoint?: string, storage: CacheStorage | null = defaultCacheStorage()): Promise<number> {
  if (!storage) return 0;
  const cache = await storage.open(CACHE_NAME);
  const keys = await cache.keys();
  let removed = 0;
  for (const req of keys) {
    if (!req.url.endsWith(MANIFEST)) continue;
    const m = (await (await cache.match(req))!.json()) as Manifest;
    if (m.repo !== repo || m.revision !== revision || (endpoint !== undefined && m.endpoint !== endpoint)) continue;
    const base = req.url.slice(0, -MANIFEST.length);
    for (const k of keys) {
      if (k.url.startsWith(base) && (await cache.delete(k))) removed++;
    }
  }
  return removed;
}
