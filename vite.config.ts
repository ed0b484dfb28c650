import { defineConfig, type Plugin } from 'vite';
import react from '@vitejs/plugin-react';
import * as fs from 'node:fs';
import * as path from 'node:path';

const SHARED = path.resolve(process.env.BRANCHPOINT_SHARED ?? path.join(import.meta.dirname, '..', 'shared'));

/**
 * Serves the read-only golden data in ../shared (or $BRANCHPOINT_SHARED): /models/ (real models the
 * workbench starts on) and /fixtures/ (tiny per-architecture models for the harness tests), in dev
 * and preview, with nothing copied into the repo. Supports HEAD and single-range GET, as the Hub does.
 */
function localModels(): Plugin {
  const root = path.join(SHARED, 'models');
  const handler = (req: import('node:http').IncomingMessage, res: import('node:http').ServerResponse, next: () => void) => {
    const url = decodeURIComponent((req.url ?? '').split('?')[0]);
    if (url === '/models/index.json') {
      const names = fs.existsSync(root) ? fs.readdirSync(root).filter((d) => fs.existsSync(path.join(root, d, 'config.json'))) : [];
      res.setHeader('content-type', 'application/json');
      res.end(JSON.stringify(names));
      return;
    }
    const top = /^\/(models|fixtures)\//.exec(url);
    if (!top) return next();
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
    name: 'branchpoint-local-models',
    configureServer: (server) => { server.middlewares.use(handler); },
    configurePreviewServer: (server) => { server.middlewares.use(handler); },
  };
}

export default defineConfig({
  plugins: [react(), localModels()],
  base: './',
  worker: { format: 'es' },
  build: { target: 'es2022', sourcemap: true },
  server: { fs: { allow: ['..'] } },
});
