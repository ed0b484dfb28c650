/**
 * A Vite plugin for the benchmarks that load random-weight models built under .artifacts/bench/:
 * serves that folder under /bench-models/ (404 for a missing file, which the engine's loader relies on).
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import type { Plugin } from 'vite';

/** Serves the folder `root` under /bench-models/ (dev server only). */
export function benchModels(root: string): Plugin {
  return {
    name: 'bench-models',
    configureServer: (s) => {
      s.middlewares.use((req, res, next) => {
        const url = decodeURIComponent((req.url ?? '').split('?')[0]);
        if (!url.startsWith('/bench-models/')) return next();
        const file = path.join(root, url.slice('/bench-models/'.length));
        if (!file.startsWith(root) || !fs.existsSync(file) || !fs.statSync(file).isFile()) { res.statusCode = 404; res.end('not found'); return; }
        res.setHeader('content-length', String(fs.statSync(file).size));
        if (req.method === 'HEAD') { res.end(); return; }
        fs.createReadStream(file).pipe(res);
      });
    },
  };
}
