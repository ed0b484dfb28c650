import { expect, type Page } from '@playwright/test';

/**
 * What every e2e spec does to drive the app (one copy, not one per spec): open a page and wait for
 * the start-up model load, and wait for a run to settle.
 */

/** Opens `url` (default: the app root), logs page errors, and waits until a model is loaded and no job runs. */
export async function open(page: Page, url = '/', opts: { model?: string | RegExp } = {}): Promise<void> {
  page.on('pageerror', (e) => console.log(`[page error] ${e.message}`));
  await page.goto(url);
  await expect(page.getByTestId('model-info')).toContainText(opts.model ?? 'stories260K', { timeout: 120_000 });
  await settled(page);
}

/** Waits until no job runs (the progress bar is gone) and no error is shown. */
export async function settled(page: Page): Promise<void> {
  await expect(page.getByTestId('progress')).toBeHidden({ timeout: 120_000 });
  await expect(page.getByTestId('error-banner')).toBeHidden();
}

/** Waits until an analysis has drawn its final margin and nothing runs any more. */
export async function analysed(page: Page): Promise<void> {
  await expect(page.getByTestId('final-margin-last')).toBeVisible({ timeout: 120_000 });
  await settled(page);
}
