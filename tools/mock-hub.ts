/**
 * A tiny stand-in for the Hugging Face Hub, for tests: serves local model folders under the Hub's
 * `/{org}/{name}/resolve/{revision}/{file}` layout with what our loader depends on —
 * HEAD, single Range requests (206 + Content-Range), a 302 hop to a "CDN" path for *.safetensors,
 * 401/403 for gated repos without the right Bearer token, 401 for a repo that does not exist when
 * no token is sent (as the Hub does: it will not tell a missing repo from a private one), 404 with
 * the Hub's X-Error-Code (RepoNotFound, RevisionNotFound, EntryNotFound), optional CORS, and a log
 * of every request.
 *
 * Run alone: `npx tsx tools/mock-hub.ts [--port 8080]` serves ../shared/fixtures/<arch>-tiny as
 * `fixtures/<arch>-tiny` and ../shared/models/<name> as `models/<name>`.
 */
import * as fs from 'node:fs';
import * as http from 'node:http';
import type { AddressInfo } from 'node:net';
import * as path from 'node:path';
import { fileURLToPath } from 'node:url';
import type { SafetensorsDtype } from '../workers/engine/io/safetensors';
import { encodeHeader } from './safetensors_write';

export interface MockRepo {
  /** Revision name → folder served for it. */
  revisions: Record<string, string>;
  /** When set the repo is gated: resolve requests need `Authorization: Bearer <token>`. */
  token?: string;
}

export interface MockHubOptions {
  /** Repo id → repo (default: defaultRepos()). */
  repos?: Record<string, MockRepo>;
  /** Send CORS headers and answer preflights (for browser tests). */
  cors?: boolean;
  /** Answer Range requests with the whole file (200), as some servers do. */
  ignoreRanges?: boolean;
  /** Pause between 64 KiB chunks of a body, in ms (to test progress and cancel). */
  chunkDelayMs?: number;
  /** Port to listen on (0 = any free port). */
  port?: number;
}

/** One request as the server saw it. */
export interface LoggedRequest {
  method: string;
  /** Path and query, exactly as requested. */
  url: string;
  range?: string;
  authorization?: string;
  status: number;
  /** Body bytes sent. */
  bytes: number;
}

export interface MockHub {
  /** Base URL to use as the endpoint (no trailing slash). */
  url: string;
  log: LoggedRequest[];
  /** Adds or replaces a repo while running. */
  setRepo(id: string, repo: MockRepo): void;
  close(): Promise<void>;
}

const SHARED = path.resolve(process.env.BRANCHPOINT_SHARED ?? path.join(path.dirname(fileURLToPath(import.meta.url)), '..', '..', 'shared'));
const CHUNK = 64 * 1024;
const CDN = '/_cdn/';

/** Every fixture as `fixtures/<arch>-tiny` and every real model as `models/<name>`, revision main. */
export function defaultRepos(shared = SHARED): Record<string, MockRepo> {
  const repos: Record<string, MockRepo> = {};
  for (const group of ['fixtures', 'models']) {
    const root = path.join(shared, group);
    if (!fs.existsSync(root)) continue;
    for (const name of fs.readdirSync(root)) {
      const dir = path.join(root, name);
      if (fs.existsSync(path.join(dir, 'config.json'))) repos[`${group}/${name}`] = { revisions: { main: dir } };
    }
  }
  return repos;
}

/** A tensor as a safetensors header lists it. */
export interface TensorHeader {
  name: string;
  shape: number[];
  dtype: SafetensorsDtype;
}

/**
 * Writes a model folder to serve whose checkpoint claims any size yet takes no disk: config.json,
 * then each shard as its safetensors header followed by a hole up to the size the header
 * describes (a sparse file; reads return zeros). Enough for the pre-download estimate, which reads
 * headers only. With `shards` > 1 the tensors are split in order into
 * model-0000k-of-0000n.safetensors with a model.safetensors.index.json.
 * @returns `dir`.
 */
export function writeSparseModel(dir: string, config: Record<string, unknown>, tensors: readonly TensorHeader[], shards = 1): string {
  fs.mkdirSync(dir, { recursive: true });
  fs.writeFileSync(path.join(dir, 'config.json'), JSON.stringify(config));
  const per = Math.ceil(tensors.length / shards);
  const names = shards === 1 ? ['model.safetensors'] : Array.from({ length: shards }, (_, k) => `model-${pad5(k + 1)}-of-${pad5(shards)}.safetensors`);
  names.forEach((name, k) => {
    const { head, fileSize } = encodeHeader(tensors.slice(k * per, (k + 1) * per));
    fs.writeFileSync(path.join(dir, name), head);
    fs.truncateSync(path.join(dir, name), fileSize);
  });
  if (shards > 1) {
    const weightMap = Object.fromEntries(tensors.map((t, i) => [t.name, names[Math.floor(i / per)]]));
    fs.writeFileSync(path.join(dir, 'model.safetensors.index.json'), JSON.stringify({ metadata: {}, weight_map: weightMap }));
  }
  return dir;
}

function pad5(n: number): string {
  return String(n).padStart(5, '0');
}

/**
 * Every tensor of a Hugging Face Llama checkpoint for config `c` (hidden_size, intermediate_size,
 * num_attention_heads, num_key_value_heads, head_dim, num_hidden_layers, vocab_size,
 * tie_word_embeddings), all in `dtype`: embed_tokens, per layer the two norms, q/k/v/o and
 * gate/up/down, the final norm, and lm_head unless the embeddings are tied.
 */
export function llamaTensors(c: Record<string, unknown>, dtype: SafetensorsDtype): TensorHeader[] {
  const D = Number(c.hidden_size), F = Number(c.intermediate_size), V = Number(c.vocab_size);
  const dHead = Number(c.head_dim ?? D / Number(c.num_attention_heads));
  const q = Number(c.num_attention_heads) * dHead, kv = Number(c.num_key_value_heads ?? c.num_attention_heads) * dHead;
  const t: TensorHeader[] = [{ name: 'model.embed_tokens.weight', shape: [V, D], dtype }];
  for (let l = 0; l < Number(c.num_hidden_layers); l++) {
    const p = `model.layers.${l}`;
    t.push(
      { name: `${p}.input_layernorm.weight`, shape: [D], dtype },
      { name: `${p}.post_attention_layernorm.weight`, shape: [D], dtype },
      { name: `${p}.self_attn.q_proj.weight`, shape: [q, D], dtype },
      { name: `${p}.self_attn.k_proj.weight`, shape: [kv, D], dtype },
      { name: `${p}.self_attn.v_proj.weight`, shape: [kv, D], dtype },
      { name: `${p}.self_attn.o_proj.weight`, shape: [D, q], dtype },
      { name: `${p}.mlp.gate_proj.weight`, shape: [F, D], dtype },
      { name: `${p}.mlp.up_proj.weight`, shape: [F, D], dtype },
      { name: `${p}.mlp.down_proj.weight`, shape: [D, F], dtype },
    );
  }
  t.push({ name: 'model.norm.weight', shape: [D], dtype });
  if (!c.tie_word_embeddings) t.push({ name: 'lm_head.weight', shape: [V, D], dtype });
  return t;
}

/** Starts the server on 127.0.0.1. */
export async function startMockHub(opts: MockHubOptions = {}): Promise<MockHub> {
  const repos = new Map(Object.entries(opts.repos ?? defaultRepos()));
  const log: LoggedRequest[] = [];

  const server = http.createServer((req, res) => {
    const entry: LoggedRequest = { method: req.method ?? 'GET', url: req.url ?? '/', status: 0, bytes: 0 };
    if (req.headers.range) entry.range = req.headers.range;
    if (req.headers.authorization) entry.authorization = req.headers.authorization;
    log.push(entry);
    // Record the status as the headers go out (Node routes implicit headers through writeHead too).
    const writeHead = res.writeHead.bind(res);
    res.writeHead = ((...args: Parameters<typeof res.writeHead>) => { entry.status = args[0]; return writeHead(...args); }) as typeof res.writeHead;
    if (opts.cors) {
      res.setHeader('access-control-allow-origin', '*');
      res.setHeader('access-control-allow-headers', 'authorization, range');
      res.setHeader('access-control-expose-headers', 'content-range, content-length, accept-ranges, x-error-code, etag, location');
    }
    if (req.method === 'OPTIONS') return end(res, 204);
    const url = new URL(req.url ?? '/', 'http://mock');
    // Match on the raw path, then decode each part: a revision such as refs/pr/1 arrives as refs%2Fpr%2F1.
    const raw = url.pathname;

    if (raw.startsWith(CDN)) {
      // "CDN" hop: /_cdn/<repo>/r/<rev>/<file>, signed by the resolve redirect, no token needed.
      const m = /^\/_cdn\/(.+?)\/r\/([^/]+)\/(.+)$/.exec(raw);
      const repo = m && repos.get(decodeURIComponent(m[1]));
      const dir = repo?.revisions[decodeURIComponent(m![2])];
      const file = dir && safeJoin(dir, decodeURIComponent(m![3]));
      if (!file || url.searchParams.get('sig') !== 'ok') return end(res, 403, 'bad CDN link');
      return sendFile(req, res, file, entry, opts);
    }

    const m = /^\/(.+?)\/resolve\/([^/]+)\/(.+)$/.exec(raw);
    if (!m) return end(res, 404, 'not a resolve URL', 'EntryNotFound');
    const [id, revision, name] = m.slice(1).map(decodeURIComponent);
    const repo = repos.get(id);
    if (!repo) return end(res, req.headers.authorization ? 404 : 401, `Repository ${id} not found`, 'RepoNotFound');
    if (repo.token !== undefined) {
      const auth = req.headers.authorization;
      if (!auth) return end(res, 401, `Access to model ${id} is restricted. You must have access to it and be authenticated to access it.`, 'GatedRepo');
      if (auth !== `Bearer ${repo.token}`) return end(res, 403, `Access to model ${id} is restricted and you are not in the authorized list.`, 'GatedRepo');
    }
    const dir = repo.revisions[revision];
    if (!dir) return end(res, 404, `Invalid rev id: ${revision}`, 'RevisionNotFound');
    const file = safeJoin(dir, name);
    if (!file) return end(res, 404, `Entry not found`, 'EntryNotFound');
    if (name.endsWith('.safetensors')) {
      const size = fs.statSync(file).size;
      res.setHeader('location', `${CDN}${id}/r/${encodeURIComponent(revision)}/${name.split('/').map(encodeURIComponent).join('/')}?sig=ok`);
      res.setHeader('x-linked-size', String(size));
      return end(res, 302);
    }
    return sendFile(req, res, file, entry, opts);
  });

  await new Promise<void>((resolve) => server.listen(opts.port ?? 0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    log,
    setRepo: (id, repo) => { repos.set(id, repo); },
    close: () => new Promise<void>((resolve) => { server.closeAllConnections(); server.close(() => resolve()); }),
  };
}

/** A file inside `dir` (no escaping with ..), or null when absent. */
function safeJoin(dir: string, name: string): string | null {
  const file = path.resolve(dir, name);
  if (!file.startsWith(path.resolve(dir) + path.sep)) return null;
  return fs.existsSync(file) && fs.statSync(file).isFile() ? file : null;
}

function end(res: http.ServerResponse, status: number, message = '', errorCode?: string): void {
  res.statusCode = status;
  if (errorCode) {
    res.setHeader('x-error-code', errorCode);
    res.setHeader('x-error-message', message);
  }
  res.end(message);
}

function sendFile(req: http.IncomingMessage, res: http.ServerResponse, file: string, entry: LoggedRequest, opts: MockHubOptions): void {
  const size = fs.statSync(file).size;
  let start = 0, last = size - 1;
  res.setHeader('accept-ranges', 'bytes');
  res.setHeader('content-type', file.endsWith('.json') ? 'application/json' : 'application/octet-stream');
  const m = /^bytes=(\d+)-(\d*)$/.exec(req.headers.range ?? '');
  if (m && !opts.ignoreRanges) {
    start = Number(m[1]);
    last = m[2] ? Math.min(Number(m[2]), size - 1) : size - 1;
    if (start >= size || last < start) {
      res.setHeader('content-range', `bytes */${size}`);
      return end(res, 416);
    }
    res.statusCode = 206;
    res.setHeader('content-range', `bytes ${start}-${last}/${size}`);
  } else {
    res.statusCode = 200;
  }
  res.setHeader('content-length', String(last - start + 1));
  if (req.method === 'HEAD' || size === 0) return void res.end();
  const stream = fs.createReadStream(file, { start, end: last, highWaterMark: CHUNK });
  stream.on('data', (chunk) => {
    entry.bytes += chunk.length;
    if (!res.write(chunk)) stream.pause();
    if (opts.chunkDelayMs) {
      stream.pause();
      setTimeout(() => { if (!res.destroyed) stream.resume(); }, opts.chunkDelayMs);
    }
  });
  res.on('drain', () => { if (!opts.chunkDelayMs) stream.resume(); });
  stream.on('end', () => res.end());
  res.on('close', () => stream.destroy());
}

if (process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const i = process.argv.indexOf('--port');
  const hub = await startMockHub({ cors: true, port: i > 0 ? Number(process.argv[i + 1]) : 0 });
  process.stdout.write(`mock Hub at ${hub.url}\nrepos: ${Object.keys(defaultRepos()).join(', ')}\n`);
}
