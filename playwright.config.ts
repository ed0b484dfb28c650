import { defineConfig } from '@playwright/test';

/**
 * Two projects: `kernels` drives WGSL kernel and engine-numerics harness pages on the Vite dev
 * server; `e2e` drives the production build (vite preview) as a user would. Both use Debian's
 * Chromium with WebGPU on SwiftShader (see ../shared/TESTING.md for the flags).
 */
const chromium = {
  browserName: 'chromium' as const,
  headless: true,
  launchOptions: {
    executablePath: process.env.CHROMIUM_PATH ?? '/usr/bin/chromium',
    args: ['--enable-unsafe-webgpu', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync', '--disable-quic', '--no-sandbox'],
  },
};

/** Ports can be moved (BP_DEV_PORT, BP_PREVIEW_PORT) so two checkouts can test side by side. */
const DEV_PORT = Number(process.env.BP_DEV_PORT ?? 5174);
const PREVIEW_PORT = Number(process.env.BP_PREVIEW_PORT ?? 4174);

export default defineConfig({
  testDir: 'e2e',
  timeout: 300_000,
  workers: 1,
  reporter: [['list']],
  outputDir: '.artifacts/test-results',
  projects: [
    { name: 'kernels', testMatch: /harness\/.*\.spec\.ts/, use: { ...chromium, baseURL: `http://127.0.0.1:${DEV_PORT}` } },
    { name: 'e2e', testMatch: /^(?!.*harness).*\.spec\.ts$/, use: { ...chromium, baseURL: `http://127.0.0.1:${PREVIEW_PORT}` } },
  ],
  webServer: [
    { command: `npx vite --port ${DEV_PORT} --strictPort --host 127.0.0.1`, url: `http://127.0.0.1:${DEV_PORT}/index.html`, reuseExistingServer: !process.env.CI, timeout: 120_000 },
    { command: `npx vite build && npx vite preview --port ${PREVIEW_PORT} --strictPort --host 127.0.0.1`, url: `http://127.0.0.1:${PREVIEW_PORT}/index.html`, reuseExistingServer: !process.env.CI, timeout: 300_000 },
  ],
});
