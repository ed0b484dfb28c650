import { test, expect } from '@playwright/test';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { SHARED, parseShown } from './golden';

/**
 * Issue #28 kind 8: a local folder whose model.safetensors is truncated fails to load with a good
 * error, and the model loaded before (the default stories260K) stays loaded and usable — the
 * worker builds the new engine before it releases the old one.
 */
const SOURCE = path.join(SHARED, 'models', 'aidreams260K');
const FILES = ['config.json', 'generation_config.json', 'special_tokens_map.json', 'tokenizer.json', 'tokenizer_config.json'];

test('a failed local load (truncated safetensors) leaves the previous model loaded and Analyse working', async ({ page }) => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'branchpoint-truncated-'));
  const folder = path.join(dir, 'aidreams260K-truncated');
  fs.mkdirSync(folder);
  for (const f of FILES) fs.copyFileSync(path.join(SOURCE, f), path.join(folder, f));
  const weights = fs.readFileSync(path.join(SOURCE, 'model.safetensors'));
  fs.writeFileSync(path.join(folder, 'model.safetensors'), weights.subarray(0, weights.length >> 1));
  try {
    await page.goto('/index.html');
    await expect(page.getByTestId('model-info')).toContainText('stories260K', { timeout: 120_000 });
    await expect(page.getByTestId('progress')).toBeHidden({ timeout: 120_000 });
    await page.getByTestId('folder-input').setInputFiles(folder);
    await expect(page.getByTestId('error-banner')).toContainText(/model\.safetensors.*run past the end of the data/, { timeout: 120_000 });
    await expect(page.getByTestId('progress')).toBeHidden({ timeout: 120_000 });
    // the previous model is still the one shown and loaded
    await expect(page.getByTestId('model-info')).toContainText('stories260K');
    await expect(page.getByText('no model loaded')).toHaveCount(0);
    await expect(page.getByTestId('analyse')).toBeEnabled();
    await page.getByTestId('prompt').fill('Once upon a time there was a girl');
    await page.getByTestId('analyse').click();
    await expect(page.getByTestId('progress')).toBeHidden({ timeout: 120_000 });
    await expect(page.getByTestId('error-banner')).toBeHidden();
    await page.getByTestId('show-tables').check();
    expect(Number.isFinite(parseShown(await page.getByTestId('final-margin-1').textContent()))).toBe(true);
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
});
