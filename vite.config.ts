import { defineConfig, type Plugin } from 'vite';
import react from '@vitejs/plugin-react';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { bundledModels } from './tools/bundled_models';
import { contentSecurityPolicy } from './tools/csp';

const SHARED = path.resolve(process.env.BRANCHPOINT_SHARED ?? path.join(import.meta.dirname, '..', 'shared'));

const PUBLIC = path.join(import.meta.dirname, 'public');

/**
 * Test data only: serves the read-only golden data in ../shared (or $BRANCHPOINT_SHARED) under
 * /models/ (real models with their references) and /fixtures/ (tiny per-architecture models) in dev
 * and preview, for the harness pages and benchmarks, with nothing copied into the repo. A path that
 * exists in public/ (the bundled model) is left to Vite, so the app sees exactly what a static host
 * serves. Supports HEAD and single-range GET, as the Hub does.
 */
function goldenData(): Plugin {
  const handler = (req: import('node:http').IncomingMessage, res: import('node:http').ServerResponse, next: () => void) => {
    let url: string;
    try {
      url = decodeURIComponent((req.url ?? '').split('?')[0]);
    } catch {
      res.statusCode = 400; // a malformed %-escape (/models/%E0%A4%A) is the client's error, not a 500
      res.end('bad request: malformed URL encoding');
      return;
    }
    const top = /^\/(models|fixtures)\//.exec(url);
    if (!top || fs.existsSync(path.join(PUBLIC, url.slice(1)))) return next();
    const file = path.join(SHARED, url.slice(1));
    if (!file.startsWith(path.join(SHARED, top[1])) || !fs.existsSync(file) || !fs.statSync(file).isFile()) {
      res.statusCode = 404;
      res.end('not found');
      return;
    }
    const size = fs.statSync(file).size;
    res.setHeader('accept-ranges', 'bytes');
    const m = /bytes=(\d+)-(\d*)/.exec(req.headers.range ?? '');
    if (m) {
      const start = Number(m[1]);
      const end = m[2] ? Math.min(Number(m[2]), size - 1) : size - 1;
      res.statusCode = 206;
      res.setHeader('content-range', `bytes ${start}-${end}/${size}`);
      res.setHeader('content-length', String(end - start + 1));
      if (req.method === 'HEAD') return res.end();
      fs.createReadStream(file, { start, end }).pipe(res);
      return;
    }
    res.setHeader('content-length', String(size));
    if (req.method === 'HEAD') return res.end();
    fs.createReadStream(file).pipe(res);
  };
  return {
    name: 'branchpoint-golden-data',
    configureServer: (server) => { server.middlewares.use(handler); },
    configurePreviewServer: (server) => { server.middlewares.use(handler); },
  };
}

export default defineConfig({
  plugins: [react(), bundledModels(PUBLIC), goldenData(), contentSecurityPolicy()],
  base: './',
  worker: { format: 'es' },
  build: { target: 'es2022', sourcemap: true },
  // /@fs/ reads only inside this repository (never its parent folder: other checkouts, ../shared, home)
  server: { fs: { allow: [import.meta.dirname] } },
});
