import { CancelledError, isAbort, RateMeter, readBody, type DownloadProgress } from './download';
import type { ModelFiles } from './model_files';
import { assertSafeRelativePath, assertSafeRepoId, assertSafeRevision } from './safe_names';

/** The public Hugging Face Hub; a mirror is any other endpoint with the same URL layout (HF_ENDPOINT). */
export const DEFAULT_ENDPOINT = 'https://huggingface.co';

/** A Hub repo id: `name` (legacy) or `org/name`, letters, digits, `-`, `_`, `.`. */
const REPO_ID = /^[\w.-]+(\/[\w.-]+)?$/;

export interface HubOptions {
  /** Branch, tag or commit (default "main"); `refs/pr/1` style revisions are URL-encoded. */
  revision?: string;
  /** Base URL of the Hub or a mirror (default https://huggingface.co); no credentials inside. */
  endpoint?: string;
  /** Access token for gated or private repos: sent only as `Authorization: Bearer` to the endpoint. */
  token?: string;
  /** Aborts every request and download in flight; they reject with CancelledError. */
  signal?: AbortSignal;
  /** Progress of each whole-file download (bytes, rate in bytes/s, ETA in s). */
  onDownload?: (file: string, p: DownloadProgress) => void;
}

/**
 * Parses `org/name[@revision]` (the command line and the UI's Hub field).
 * @returns null when the text is not a Hub repo id.
 */
export function parseRepoRef(text: string): { repo: string; revision?: string } | null {
  const at = text.indexOf('@');
  const repo = at < 0 ? text : text.slice(0, at);
  const revision = at < 0 ? undefined : text.slice(at + 1);
  if (!REPO_ID.test(repo) || repo.includes('..') || revision === '') return null;
  try {
    assertSafeRepoId(repo);
    if (revision !== undefined) assertSafeRevision(revision);
  } catch {
    return null;
  }
  return { repo, revision };
}

/**
 * A model repository on the Hugging Face Hub or a mirror, read through the
 * `{endpoint}/{repo}/resolve/{revision}/{file}` layout (the layout `huggingface_hub` uses;
 * redirects to the CDN are followed). Whole files stream with progress and can be cancelled;
 * `range` uses HTTP Range and copes with servers that ignore it.
 *
 * The token never appears in a URL, a label, an error message or `JSON.stringify(this)`: it lives
 * in a private field and goes out only in the Authorization header of requests to the endpoint.
 */
export class HubFiles implements ModelFiles {
  readonly repo: string;
  readonly revision: string;
  readonly endpoint: string;
  readonly label: string;
  readonly #token: string | undefined;
  private readonly signal?: AbortSignal;
  private readonly onDownload?: (file: string, p: DownloadProgress) => void;
  /** File sizes learned from any response (Content-Range, Content-Length), so size() costs nothing after range(). */
  private readonly sizes = new Map<string, number>();
  /** Files has() found absent → why (from the 404's X-Error-Code, or its absence). */
  private readonly absent = new Map<string, string>();

  /** @throws Error for a malformed repo id or an endpoint that is not an http(s) URL without credentials. */
  constructor(repo: string, opts: HubOptions = {}) {
    if (!parseRepoRef(repo) || repo.includes('@')) throw new Error(`"${repo}" is not a Hub repo id (expected org/name, e.g. openai-community/gpt2)`);
    assertSafeRepoId(repo);
    assertSafeRevision(opts.revision ?? 'main');
    let url: URL;
    try {
      url = new URL(opts.endpoint ?? DEFAULT_ENDPOINT);
    } catch {
      throw new Error(`endpoint "${opts.endpoint}" is not a URL (expected e.g. https://huggingface.co or a mirror's base URL)`);
    }
    if (url.protocol !== 'https:' && url.protocol !== 'http:') throw new Error(`endpoint ${url.href} must be an http(s) URL`);
    if (url.username || url.password) throw new Error('the endpoint URL must not hold credentials: give the access token separately');
    this.repo = repo;
    this.revision = opts.revision ?? 'main';
    this.endpoint = url.href.replace(/\/+$/, '');
    this.#token = opts.token || undefined;
    this.signal = opts.signal;
    this.onDownload = opts.onDownload;
    const host = this.endpoint === DEFAULT_ENDPOINT ? 'hf.co' : url.host + url.pathname.replace(/\/+$/, '');
    this.label = `${host}/${repo}@${this.revision}`;
  }

  /** The resolve URL of a file (no token, ever); url('') is the folder's base URL. @throws UnsafeNameError for a path that would leave the folder. */
  url(path: string): string {
    if (path !== '') assertSafeRelativePath(path);
    const file = path.split('/').map(encodeURIComponent).join('/');
    return `${this.endpoint}/${this.repo}/resolve/${encodeURIComponent(this.revision)}/${file}`;
  }

  /** True when the file exists. @throws Error when the repo is gated, private or missing, or the revision is unknown. */
  async has(path: string): Promise<boolean> {
    const r = await this.request(path, { method: 'HEAD' });
    if (r.status === 404 && !isRepoLevel404(r)) {
      this.absent.set(path, r.headers.get('x-error-code') === 'EntryNotFound'
        ? `file missing: ${this.repo} exists at revision "${this.revision}" but has no ${path}`
        : `HTTP 404 without the Hub's X-Error-Code, so the repository, the revision or the file may be missing; is ${this.endpoint} a Hugging Face Hub?`);
      return false;
    }
    this.check(r, path);
    this.learnSize(path, r);
    return true;
  }

  /** Why has(path) answered false: the Hub's EntryNotFound, or a bare 404 that says nothing more. */
  absence(path: string): string | undefined {
    return this.absent.get(path);
  }

  /** File size in bytes (from an earlier response when there was one, else a HEAD request). @throws as has(). */
  async size(path: string): Promise<number> {
    const known = this.sizes.get(path);
    if (known !== undefined) return known;
    const r = await this.request(path, { method: 'HEAD' });
    this.check(r, path);
    this.learnSize(path, r);
    const n = this.sizes.get(path);
    if (n === undefined) throw new Error(`${this.label}: ${path} — the server did not report its size`);
    return n;
  }

  /**
   * The whole file, streamed; progress goes to `onProgress` (loaded, total bytes) and to the
   * constructor's `onDownload` (with rate and ETA).
   * @throws Error (gated, not found, HTTP status), CancelledError when the signal aborts.
   */
  async bytes(path: string, onProgress?: (loaded: number, total: number) => void): Promise<Uint8Array> {
    const r = await this.request(path, {});
    this.check(r, path);
    this.learnSize(path, r);
    const total = this.sizes.get(path) ?? 0;
    const meter = new RateMeter();
    const out = await readBody(r, {
      signal: this.signal,
      what: `the download of ${path} from ${this.label}`,
      onChunk: (loaded) => {
        onProgress?.(loaded, total);
        this.onDownload?.(path, meter.sample(loaded, total));
      },
    });
    if (total && out.length !== total) throw new Error(`${this.label}: ${path} — received ${out.length} of ${total} bytes (connection dropped?)`);
    return out;
  }

  /**
   * Bytes [start, end) of a file via `Range: bytes=start-(end−1)`. A 206 answer is used as is; a
   * server that ignores Range (200) is read only up to `end` and then cut off.
   * @throws Error for a status other than 200/206, a short answer, or as bytes().
   */
  async range(path: string, start: number, end: number): Promise<Uint8Array> {
    if (end <= start) return new Uint8Array(0);
    const r = await this.request(path, { headers: { Range: `bytes=${start}-${end - 1}` } });
    this.check(r, path);
    this.learnSize(path, r);
    const what = `the read of ${path} from ${this.label}`;
    let out: Uint8Array;
    if (r.status === 206) {
      const first = Number(/bytes (\d+)-/.exec(r.headers.get('content-range') ?? '')?.[1] ?? start);
      if (first !== start) throw new Error(`${this.label}: ${path} — asked for bytes from ${start}, the server sent from ${first}`);
      out = await readBody(r, { limit: end - start, signal: this.signal, what });
    } else {
      out = (await readBody(r, { limit: end, signal: this.signal, what })).subarray(start);
    }
    if (out.length !== end - start) throw new Error(`${this.label}: ${path} — asked for bytes [${start}, ${end}), got ${out.length} bytes (file shorter than expected?)`);
    return out;
  }

  /** One request to the endpoint: token in the Authorization header only; network failures and aborts made readable. */
  private async request(path: string, init: { method?: string; headers?: Record<string, string> }): Promise<Response> {
    const headers: Record<string, string> = { ...init.headers };
    if (this.#token) headers.Authorization = `Bearer ${this.#token}`;
    try {
      return await fetch(this.url(path), { method: init.method ?? 'GET', headers, signal: this.signal, redirect: 'follow' });
    } catch (e) {
      if (isAbort(e, this.signal)) throw new CancelledError(`the request for ${path} from ${this.label}`);
      throw new Error(`${this.label}: could not reach ${this.endpoint} for ${path} (${(e as Error).message}); check the connection or the endpoint`);
    }
  }

  /** @throws Error with a user-readable message for any non-success status. */
  private check(r: Response, path: string): void {
    if (r.ok) return;
    const code = r.headers.get('x-error-code');
    const rev = `${this.repo}@${this.revision}`;
    // The Hub's X-Error-Code says which of repository, licence, revision or file is the matter.
    if (code === 'RepoNotFound') {
      throw new Error(`repository not found: ${this.repo} at ${this.endpoint}${this.#token ? '' : ' (if it is private, paste an access token)'}`);
    }
    // Without a code, a 401 to an anonymous request may be a gated, private or missing repo: the server will not say which.
    if (r.status === 401 && !this.#token && code !== 'GatedRepo') {
      throw new Error(`${this.repo} is gated, private or does not exist: check the id, or accept its licence on huggingface.co and paste an access token`);
    }
    if (code === 'GatedRepo' || r.status === 401 || r.status === 403) {
      throw new Error(`${this.repo} is gated: accept its licence on huggingface.co and paste an access token${this.#token ? ' (the token given was refused, or its account has not been granted access yet)' : ''}`);
    }
    if (code === 'RevisionNotFound') throw new Error(`revision not found: "${this.revision}" in ${this.repo}`);
    if (code === 'EntryNotFound') throw new Error(`file missing: ${path} not found in ${rev}`);
    if (r.status === 404) throw new Error(`${path} not found in ${rev} (HTTP 404 without the Hub's X-Error-Code: the repository, the revision or the file may be missing)`);
    throw new Error(`${this.label}: ${path} — HTTP ${r.status} ${r.statusText}`.trim());
  }

  private learnSize(path: string, r: Response): void {
    const range = /\/(\d+)\s*$/.exec(r.headers.get('content-range') ?? '');
    if (range) { this.sizes.set(path, Number(range[1])); return; }
    const len = r.headers.get('content-length');
    // A compressed body's Content-Length is not the file size; only trust it for identity bodies.
    if (r.status === 200 && len !== null && !r.headers.get('content-encoding')) this.sizes.set(path, Number(len));
  }
}

/** A 404 that is about the repo or the revision rather than one file (Hub X-Error-Code header). */
function isRepoLevel404(r: Response): boolean {
  const code = r.headers.get('x-error-code');
  return code === 'RepoNotFound' || code === 'RevisionNotFound';
}
