import { defineConfig, type Plugin } from 'vite';
import react from '@vitejs/plugin-react';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { VitePWA } from 'vite-plugin-pwa';
import { bundledModels } from './tools/bundled_models.ts';
import { contentSecurityPolicy } from './tools/csp.ts';

const SHARED = path.resolve(process.env.BRANCHPOINT_SHARED ?? path.join(import.meta.dirname, '..', 'shared'));

const PUBLIC = path.join(import.meta.dirname, 'public');

/**
 * Test data only: serves the read-only golden data in ../shared (or $BRANCHPOINT_SHARED) under
 * /models/ (real models with their references), /fixtures/ (tiny per-architecture models) and
 * /saes/ (sparse autoencoders with their references) in dev
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
    const top = /^\/(models|fixtures|saes)\//.exec(url);
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

/**
 * Drops onnxruntime-web's wasm (27 MB) from the build: transformers.js references it, but the app
 * uses transformers.js only for tokenizers and chat templates, which never start an ONNX session
 * (the engine is our own WGSL). The benchmark baseline that does run ONNX uses the dev server.
 */
function withoutOnnxWasm(): Plugin {
  return {
    name: 'branchpoint-without-onnx-wasm',
    apply: 'build',
    generateBundle(_options, bundle) {
      for (const name of Object.keys(bundle)) if (/(^|\/)ort-wasm[^/]*\.wasm$/.test(name)) delete bundle[name];
    },
  };
}

/**
 * Offline (app/offline/sw.ts): Workbox precaches everything the build emits (app shell, worker,
 * decks, steering sets, the bundled models' files), except source maps. Registered by app/main.tsx.
 */
const offline = VitePWA({
  strategies: 'injectManifest',
  srcDir: 'app/offline',
  filename: 'sw.ts',
  injectRegister: null,
  manifest: false,
  injectManifest: {
    globPatterns: ['**/*'],
    globIgnores: ['**/*.map', '**/*.wasm'],
    maximumFileSizeToCacheInBytes: 16 * 2 ** 20,
    rollupFormat: 'iife',
  },
});

/**
 * Cross-origin isolation (COOP same-origin + COEP require-corp) for the dev and preview servers: it
 * gives the page SharedArrayBuffer, so the CPU backend multiplies on several threads
 * (workers/engine/backend/gemm_threads.ts). Everything the app loads is same-origin or fetched
 * with CORS (the Hub and mirrors), which require-corp allows. A static host without these headers
 * serves a page that is not isolated: the CPU backend then runs on one thread.
 */
export const ISOLATION_HEADERS = { 'Cross-Origin-Opener-Policy': 'same-origin', 'Cross-Origin-Embedder-Policy': 'require-corp' };

export default defineConfig({
  plugins: [react(), bundledModels(PUBLIC), goldenData(), contentSecurityPolicy(), withoutOnnxWasm(), offline],
  base: './',
  worker: { format: 'es' },
  build: { target: 'es2022', sourcemap: true },
  // /@fs/ reads only inside this repository (never its parent folder: other checkouts, ../shared, home)
  server: { fs: { allow: [import.meta.dirname] }, headers: ISOLATION_HEADERS },
  preview: { headers: ISOLATION_HEADERS },
});
