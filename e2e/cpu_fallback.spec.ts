import { test, expect } from '@playwright/test';
import { Lens, firstTokenAfter, parseShown, referencePrompt } from './golden';
import { analyseWith } from './app_page';

const PROMPT = 'Once upon a time';

// The same Chromium without --enable-unsafe-webgpu: requestAdapter() finds no adapter.
test.use({ launchOptions: { executablePath: process.env.CHROMIUM_PATH ?? '/usr/bin/chromium', args: ['--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync', '--disable-quic', '--no-sandbox'] } });

test('without WebGPU the badge says "CPU backend (fallback: …)" with the reason, the menu names the same backend, and the CPU backend shows the golden margins', async ({ page }) => {
  const golden = referencePrompt(PROMPT);
  const lens = new Lens(golden);
  const good = (await firstTokenAfter(PROMPT, ',')).id;
  const bad = (await firstTokenAfter(PROMPT, ' there')).id;

  await page.goto('/');
  const badge = page.getByTestId('backend-badge');
  await expect(badge).toBeVisible({ timeout: 120_000 });
  await expect(badge).toHaveAttribute('data-kind', 'cpu');
  await expect(badge).toContainText(/CPU backend \(fallback: .+\)/);
  // One name for it: the backend menu's choice is the badge's (trials saw "CPU reference" beside "TypeScript + WASM SIMD").
  await expect(page.getByTestId('backend-choice').locator('option[value="cpu"]')).toHaveText('CPU backend');
  console.log(`badge: ${await badge.textContent()}`);
  // the preview server sends COOP/COEP (vite.config.ts): the page is isolated, so the CPU backend multiplies on several threads
  expect(await page.evaluate(() => crossOriginIsolated)).toBe(true);
  if (await page.evaluate(() => navigator.hardwareConcurrency) > 1) await expect(badge).toContainText(/; \d+ threads\)/);

  await page.getByTestId('show-tables').check();
  await analyseWith(page, { prompt: PROMPT, good: ',', bad: ' there' });
  for (let l = 0; l <= lens.L; l++) {
    for (let t = 0; t < golden.n_prompt; t++) {
      const shown = parseShown(await page.getByTestId(`margin-cell-${l}-${t}`).textContent());
      expect(Math.abs(shown - lens.margin(l, t, good, bad)), `layer ${l}, position ${t}`).toBeLessThanOrEqual(1e-3);
    }
  }
});
