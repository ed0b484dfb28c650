import * as fs from 'node:fs';
import * as http from 'node:http';
import * as path from 'node:path';
import type { AddressInfo } from 'node:net';
import { isInside } from './golden_data';

/** Content types a static host (GitHub Pages, nginx) sends for the files the build emits. */
const TYPES: Record<string, string> = {
  '.html': 'text/html; charset=utf-8', '.js': 'text/javascript', '.mjs': 'text/javascript', '.css': 'text/css',
  '.json': 'application/json', '.svg': 'image/svg+xml', '.png': 'image/png', '.wasm': 'application/wasm',
  '.map': 'application/json', '.md': 'text/markdown', '.txt': 'text/plain',
};

export interface StaticServer {
  /** Address of the site root, ending in the sub-path: `http://127.0.0.1:PORT/base/`. */
  url: string;
  /** Requests seen, in order (path and status), so a test can check what was fetched. */
  log: { url: string; status: number }[];
  /** Stops the server (closes idle keep-alive connections). */
  close(): Promise<void>;
  /** While true every request is refused (connection destroyed), as with the network off. */
  offline: boolean;
}

/**
 * A plain static file server (no dev/preview middleware, no COOP/COEP headers, no SPA fallback): serves
 * `root` under the sub-path `base` (e.g. '/lab/branchpoint/') on `port` (0 = a free port the OS picks),
 * GET and HEAD, 404 for anything else. What a static host does, so tests see what users of a
 * GitHub Pages copy see.
 * @throws Error if `base` does not start and end with '/'.
 */
export async function serveStatic(root: string, base = '/', port = 0): Promise<StaticServer> {
  if (!base.startsWith('/') || !base.endsWith('/')) throw new Error(`base must start and end with "/": ${base}`);
  const dir = path.resolve(root);
  const state = { offline: false };
  const log: StaticServer['log'] = [];
  const server = http.createServer((req, res) => {
    if (state.offline) return void req.socket.destroy();
    let url: string;
    try {
      url = decodeURIComponent((req.url ?? '/').split('?')[0]);
    } catch {
      url = req.url ?? '/';
      log.push({ url, status: 400 });
      res.statusCode = 400;
      return void res.end('bad request: malformed URL encoding');
    }
    const send = (status: number, body?: string) => { log.push({ url, status }); res.statusCode = status; res.end(body); };
    if (req.method !== 'GET' && req.method !== 'HEAD') return send(405);
    if (!url.startsWith(base)) return send(404, 'not found');
    let file = path.join(dir, url.slice(base.length));
    if (!isInside(dir, file)) return send(403, 'forbidden: the path leaves the site'); // resolved paths, not a string prefix (dist-private/ starts with dist)
    if (fs.existsSync(file) && fs.statSync(file).isDirectory()) file = path.join(file, 'index.html');
    if (!fs.existsSync(file)) return send(404, 'not found');
    res.setHeader('content-type', TYPES[path.extname(file)] ?? 'application/octet-stream');
    res.setHeader('content-length', String(fs.statSync(file).size));
    log.push({ url, status: 200 });
    if (req.method === 'HEAD') return void res.end();
    fs.createReadStream(file).pipe(res);
  });
  await new Promise<void>((resolve) => server.listen(port, '127.0.0.1', resolve));
  const { port: chosen } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${chosen}${base}`,
    log,
    get offline() { return state.offline; },
    set offline(v: boolean) { state.offline = v; },
    close: () => new Promise<void>((resolve) => { server.closeAllConnections(); server.close(() => resolve()); }),
  };
}

// `npx tsx tools/static_server.ts dist /sub/path/ [port]`: serve a build as a static host would.
if (process.argv[1] && path.resolve(process.argv[1]) === path.resolve(import.meta.filename)) {
  const [root = 'dist', base = '/', port = '0'] = process.argv.slice(2);
  void serveStatic(root, base, Number(port)).then((s) => console.log(`serving ${root} at ${s.url}`));
}
