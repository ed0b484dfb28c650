import { execFileSync } from 'node:child_process';
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

/**
 * A port the OS says is free now: asked of a child process (the config is loaded synchronously),
 * then written to the environment so Playwright's worker processes see the same number.
 */
function freePort(envKey: string): number {
  if (!process.env[envKey]) {
    const script = "const s=require('net').createServer();s.listen(0,'127.0.0.1',()=>{process.stdout.write(String(s.address().port));s.close()})";
    process.env[envKey] = execFileSync(process.execPath, ['-e', script], { encoding: 'utf8' }).trim();
  }
  return Number(process.env[envKey]);
}

/**
 * The servers the tests start run on ports chosen here (or BP_DEV_PORT / BP_PREVIEW_PORT), and a
 * server already listening is never reused: reusing one that another checkout left running is how
 * one checkout silently tests another.
 */
const DEV_PORT = freePort('BP_DEV_PORT');
const PREVIEW_PORT = freePort('BP_PREVIEW_PORT');

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
    { command: `npx vite --port ${DEV_PORT} --strictPort --host 127.0.0.1`, url: `http://127.0.0.1:${DEV_PORT}/index.html`, reuseExistingServer: false, timeout: 120_000 },
    { command: `npx vite build && npx vite preview --port ${PREVIEW_PORT} --strictPort --host 127.0.0.1`, url: `http://127.0.0.1:${PREVIEW_PORT}/index.html`, reuseExistingServer: false, timeout: 300_000 },
  ],
});
