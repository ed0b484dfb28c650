import { test, expect } from '@playwright/test';
import * as fs from 'node:fs';
import { analyseWith, settled } from './app_page';
import { open } from './app_page';

/**
 * The Attribution view as a user meets it: spans picked on the token strip (the evidence " Tom",
 * the distractor " Lily"), one run, the strip coloured, one number per span, the deletion curve, the
 * direct logit attribution per layer and per head; a screenshot at 1280×800.
 */
test('attribution: spans on the strip get their numbers, with the deletion curve and the DLA panels', async ({ page }) => {
  await page.setViewportSize({ width: 1280, height: 800 });
  await open(page);
  await analyseWith(page, { prompt: 'Lily and Tom went to the park. Lily gave the ball to', good: ' Tom', bad: ' Sue' });
  await page.getByTestId('tab-attribution').click();
  await page.getByTestId('run-attribution').click();
  await expect(page.getByTestId('attribution-strip')).toBeVisible({ timeout: 120_000 });
  await settled(page);
  await page.getByTestId('attr-token-3').click();
  await page.getByTestId('attr-token-4').click({ modifiers: ['Shift'] });
  await page.getByTestId('span-label').fill('evidence: Tom');
  await page.getByTestId('add-span').click();
  await page.getByTestId('attr-token-13').click();
  await page.getByTestId('span-label').fill('distractor: Lily');
  await page.getByTestId('add-span').click();
  await page.getByTestId('run-attribution').click();
  await expect(page.getByTestId('span-bars')).toBeVisible({ timeout: 120_000 });
  await settled(page);
  await expect(page.getByTestId('span-bars')).toContainText('evidence: Tom');
  await expect(page.getByTestId('span-bars')).toContainText('distractor: Lily');
  await expect(page.getByTestId('deletion-curve')).toBeVisible();
  await expect(page.getByTestId('dla-heads')).toBeVisible();
  await expect(page.getByTestId('attribution-legend')).toContainText('toward');
  fs.mkdirSync('.artifacts/screenshots', { recursive: true });
  await page.screenshot({ path: '.artifacts/screenshots/attribution-1280x800.png' });
  await page.getByTestId('attribution-view').screenshot({ path: '.artifacts/screenshots/attribution-view.png' });
});
