import { test, expect } from '@playwright/test';
import * as fs from 'node:fs';
import { open, settled } from './app_page';

/**
 * Issue #8 fault 10 as a user meets it: Analyse after a prompt edit, clicked while a generation
 * runs, is queued visibly (not dropped); loading a model cancels the running generation at once and
 * Generate stays disabled until the model is ready; the queued analysis then runs on the edited
 * prompt, and the generation says which prompt it was computed for.
 */
const FIRST = 'Once upon a time, there was a little girl named Lily. She';
const EDITED = 'Tom had a ball. He';
const SHOTS = '.artifacts/screenshots';

test('a queued Analyse, a load that cancels a generation, and results labelled with their prompt', async ({ page }) => {
  fs.mkdirSync(SHOTS, { recursive: true });
  await page.setViewportSize({ width: 1280, height: 900 });
  await open(page);
  await page.getByTestId('prompt').fill(FIRST);
  await page.getByTestId('good-future').fill(' was');
  await page.getByTestId('bad-future').fill(' had');
  await page.getByTestId('tab-generation').click();
  await page.getByTestId('max-new-tokens').fill('400');
  await page.getByTestId('generate').click();
  await expect(page.getByTestId('progress')).toHaveAttribute('data-job', 'generate');
  await expect(page.getByTestId('generated-token').first()).toBeVisible({ timeout: 120_000 });

  // Edit the prompt and press Analyse while generating: queued, and shown as queued.
  await page.getByTestId('prompt').fill(EDITED);
  await page.getByTestId('analyse').click();
  await expect(page.getByTestId('analyse')).toHaveText('Analyse (queued)');
  await expect(page.getByTestId('queued')).toContainText('Queued: Analyse — runs when this ends');
  await page.screenshot({ path: `${SHOTS}/concurrency-queued.png` });

  // Load a model while the generation runs: the generation is cancelled now, Generate is disabled while loading.
  await expect(page.getByTestId('progress'), 'the generation is still running when Load is clicked').toHaveAttribute('data-job', 'generate');
  await expect(page.getByTestId('load-local')).toBeEnabled();
  await page.getByTestId('load-local').click();
  await expect(page.getByTestId('generate')).toBeDisabled();
  await expect(page.getByTestId('generation-stop')).toContainText('stopped: cancelled', { timeout: 30_000 });
  const tokens = await page.getByTestId('generated-token').count();
  expect(tokens, 'tokens before the cancel').toBeLessThan(400);

  // The model is ready again; the queued analysis has run on the edited prompt.
  await settled(page);
  await expect(page.getByTestId('generate')).toBeEnabled();
  await expect(page.getByTestId('analyse')).toHaveText('Analyse');
  await expect(page.getByTestId('generation-status')).toContainText(`Stale — the prompt changed since this generation (computed for the prompt “${FIRST}”): press Generate.`);
  await page.screenshot({ path: `${SHOTS}/concurrency-generation-labelled.png` });
  await page.getByTestId('tab-margins').click();
  await expect(page.getByTestId('final-margin-last')).toBeVisible();
  await expect(page.getByTestId('margin-status')).toBeHidden(); // computed for the prompt as edited
  await page.screenshot({ path: `${SHOTS}/concurrency-analysed.png` });
});
