import { test, expect, type Request } from '@playwright/test';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { fileURLToPath } from 'node:url';
import { open } from './app_page';

/**
 * A fresh open (no link, nothing stored) loads the bundled model once (issue 29 item 9: the first
 * load was aborted and started again, ~19 aborted requests and two 404s for
 * model.safetensors.index.json): every request the page makes for the model's folder is counted —
 * none fails, none is for a file the build's manifest (tools/bundled_models.ts: the folder's files)
 * says is absent, and the tokenizer is read once (one load).
 */
const ROOT = path.join(path.dirname(fileURLToPath(import.meta.url)), '..');
const MODEL_DIR = path.join(ROOT, 'public', 'models', 'stories260K');

test('a fresh open loads the bundled model once, asking only for files it has', async ({ page }) => {
  const shipped = new Set(fs.readdirSync(MODEL_DIR));
  const asked: string[] = [];
  const failed: string[] = [];
  const missing: string[] = [];
  const model = (r: Request) => { const m = /\/models\/stories260K\/([^?#]+)/.exec(r.url()); return m ? decodeURIComponent(m[1]) : null; };
  page.on('request', (r) => { const f = model(r); if (f) asked.push(f); });
  page.on('requestfailed', (r) => { const f = model(r); if (f) failed.push(`${f}: ${r.failure()?.errorText}`); });
  page.on('response', (r) => { const f = model(r.request()); if (f && r.status() >= 400) missing.push(`${f}: ${r.status()}`); });
  await open(page);
  await page.waitForTimeout(1500); // anything late (a second load) would show up here
  expect(failed, 'aborted or failed requests').toEqual([]);
  expect(missing, '4xx/5xx responses').toEqual([]);
  expect(asked.filter((f) => !shipped.has(f)), 'requests for files the manifest says are absent').toEqual([]);
  // one load: the tokenizer and the weights are read once (config.json is read by the size check too)
  expect(asked.filter((f) => f === 'tokenizer.json').length, 'tokenizer.json reads (one per load)').toBe(1);
  expect(asked.filter((f) => f === 'model.safetensors').length, 'model.safetensors reads: two header ranges for the size check, the header again for the load\'s own check, the whole file once').toBeLessThanOrEqual(5);
  await page.screenshot({ path: '.artifacts/screenshots/fresh-open.png' });
});
