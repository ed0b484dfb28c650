import { defineConfig, type Plugin } from 'vite';
import react from '@vitejs/plugin-react';
import * as path from 'node:path';
import { VitePWA } from 'vite-plugin-pwa';
import { bundledModels } from './tools/bundled_models.ts';
import { contentSecurityPolicy } from './tools/csp.ts';
import { goldenData } from './tools/golden_data.ts';

/** The shared golden data (../shared, or $BRANCHPOINT_SHARED), served under /models/, /fixtures/, /fixtures-moe/, /saes/ by tools/golden_data.ts. */
const SHARED = path.resolve(process.env.BRANCHPOINT_SHARED ?? path.join(import.meta.dirname, '..', 'shared'));

const PUBLIC = path.join(import.meta.dirname, 'public');

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
  plugins: [react(), bundledModels(PUBLIC), goldenData(SHARED, PUBLIC), contentSecurityPolicy(), withoutOnnxWasm(), offline],
  base: './',
  worker: { format: 'es' },
  build: { target: 'es2022', sourcemap: true },
  // /@fs/ reads only inside this repository (never its parent folder: other checkouts, ../shared, home)
  server: { fs: { allow: [import.meta.dirname] }, headers: ISOLATION_HEADERS },
  preview: { headers: ISOLATION_HEADERS },
});
