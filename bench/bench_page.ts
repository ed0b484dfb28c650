/**
 * The browser side of the page benchmarks (run-model.ts, run-flash.ts): a Vite dev server of this
 * repo that also serves .artifacts/bench/ under /bench-models/ (serve_models.ts), and headless
 * Chromium with WebGPU on (SwiftShader here; with `gpu`, Chromium on Vulkan with the GPU blocklist
 * off, as bench/gpu.sh runs it). Both are closed when `body` settles.
 */
import { chromium, type Page } from '@playwright/test';
import * as path from 'node:path';
import { fileURLToPath } from 'node:url';
import { createServer } from 'vite';
import { benchModels } from './serve_models';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');

/**
 * Opens `base` + `html` in a fresh page and waits for `window[fn]` (the page's bench entry).
 * @param port the first port tried (the next free one is taken when it is busy).
 * @param ignore page console errors matching this are not echoed (e.g. the loader's expected 404 probes).
 * @param args more Chromium flags (e.g. --enable-precise-memory-info for a benchmark that reads performance.memory).
 * @returns what `body` returns, given the page and the server's base URL.
 */
export async function withBenchPage<T>(o: { html: string; fn: string; port: number; gpu: boolean; ignore?: RegExp; args?: string[] }, body: (page: Page, base: string) => Promise<T>): Promise<T> {
  const server = await createServer({ root: ROOT, configFile: path.join(ROOT, 'vite.config.ts'), logLevel: 'warn', plugins: [benchModels(path.join(ROOT, '.artifacts', 'bench'))], server: { host: '127.0.0.1', port: o.port, strictPort: false } });
  await server.listen();
  const base = server.resolvedUrls?.local[0];
  if (!base) { await server.close(); throw new Error('the Vite dev server reported no local URL'); }
  const gpuArgs = o.gpu ? ['--enable-features=Vulkan', '--use-vulkan=native', '--use-angle=vulkan', '--ignore-gpu-blocklist', '--disable-vulkan-surface'] : [];
  const browser = await chromium.launch({
    executablePath: process.env.CHROMIUM_PATH ?? '/usr/bin/chromium', headless: true,
    args: ['--enable-unsafe-webgpu', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync', '--disable-quic', '--no-sandbox', ...gpuArgs, ...(o.args ?? [])],
  });
  try {
    const page = await browser.newPage();
    page.on('console', (m) => { if (m.type() === 'error' && !(o.ignore?.test(m.text()))) console.error(`[page] ${m.text()}`); });
    // A cold Vite transform of the bench page takes over 30 s on a busy 2-core machine.
    await page.goto(`${base}bench/${o.html}`, { timeout: 180_000 });
    await page.waitForFunction((f) => typeof (window as unknown as Record<string, unknown>)[f] === 'function', o.fn, { timeout: 120_000 });
    return await body(page, base);
  } finally {
    await browser.close();
    await server.close();
  }
}
