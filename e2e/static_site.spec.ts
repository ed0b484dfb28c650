import { test, expect } from '@playwright/test';
import * as fs from 'node:fs';
import { serveStatic, type StaticServer } from '../tools/static_server';
import { Lens, firstTokenAfter, parseShown, referencePrompt } from './golden';
import { analyseWith } from './app_page';

/**
 * The production build as a static host serves it: dist/ (built by the `e2e` project's web server
 * command) under a sub-path, by a plain file server with no dev/preview middleware, so nothing of
 * ../shared is reachable. The app must open on its bundled stories260K and analyse with it.
 */
const SUB_PATH = '/lab/branchpoint/';
const PROMPT = 'Lily and Tom went to the park. Lily gave the ball to';
const SHOTS = '.artifacts/screenshots';
let site: StaticServer;

test.beforeAll(async () => {
  if (!fs.existsSync('dist/index.html')) throw new Error('dist/ is missing: the e2e project builds it (npx vite build) before the tests');
  fs.mkdirSync(SHOTS, { recursive: true });
  site = await serveStatic('dist', SUB_PATH);
});

test('the build ships no onnxruntime wasm (transformers.js is used for tokenizers only; the test below tokenizes with the build)', () => {
  const wasm = fs.readdirSync('dist', { recursive: true, encoding: 'utf8' }).filter((f) => f.endsWith('.wasm'));
  expect(wasm).toEqual([]);
});
test.afterAll(async () => site?.close());

test('the built site under a sub-path opens on its bundled stories260K and reproduces the golden margins', async ({ page }) => {
  page.on('pageerror', (e) => console.log(`[page error] ${e.message}`));
  await page.setViewportSize({ width: 1280, height: 800 });
  await page.goto(site.url);
  await expect(page.getByTestId('model-info')).toContainText('stories260K', { timeout: 120_000 });
  await expect(page.getByTestId('model-select')).toHaveValue('stories260K');

  // Every file came from the sub-path; the only 404 is the probe for a sharded-weights index.
  const misses = site.log.filter((r) => r.status !== 200 && !r.url.endsWith('model.safetensors.index.json'));
  expect(misses, 'requests the static host could not serve').toEqual([]);
  expect(site.log.some((r) => r.url === `${SUB_PATH}models/stories260K/model.safetensors`)).toBe(true);

  const golden = referencePrompt(PROMPT);
  const lens = new Lens(golden);
  const he = await firstTokenAfter(PROMPT, ' he');
  const she = await firstTokenAfter(PROMPT, ' she');
  await analyseWith(page, { prompt: PROMPT, good: ' he', bad: ' she' });
  const shown = parseShown(await page.getByTestId('final-margin-last').textContent());
  const want = lens.margin(lens.L, golden.n_prompt - 1, he.id, she.id);
  expect(Math.abs(shown - want), `final margin " he" − " she": shown ${shown}, reference ${want}`).toBeLessThanOrEqual(1e-3);
  await page.screenshot({ path: `${SHOTS}/static-site-1280x800.png` });
});
