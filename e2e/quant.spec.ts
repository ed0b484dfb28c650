import { test, expect } from '@playwright/test';
import { analysed, open } from './app_page';

test('Q8_0 weights from the load control: the model info names the storage and the measured logit error, and Analyse works', async ({ page }) => {
  test.setTimeout(240_000);
  await open(page);
  await page.getByTestId('weight-dtype').selectOption('q8_0');
  await page.getByTestId('load-local').click();
  const storage = page.getByTestId('weight-storage');
  await expect(storage).toHaveAttribute('data-dtype', 'q8_0', { timeout: 120_000 });
  await expect(storage).toContainText('Q8_0 linear weights');
  const err = Number(await page.getByTestId('logit-error').getAttribute('data-max-abs'));
  console.log(`shown: ${await storage.textContent()}`);
  // quantised for real (float32 agrees within 1e-4), and within the Q8_0 error of stories260K
  // measured against its references on the CPU (≤ 0.25, tests/integration/quant_weights.test.ts)
  expect(err).toBeGreaterThan(1e-3);
  expect(err).toBeLessThan(1);
  await page.getByTestId('prompt').fill('Once upon a time');
  await page.getByTestId('good-future').fill(',');
  await page.getByTestId('bad-future').fill(' there');
  await page.getByTestId('analyse').click();
  await analysed(page);
  await page.getByTestId('model-status').screenshot({ path: '.artifacts/screenshots/quant-model-info.png' });
});
