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

/** What an analysis is of: the prompt and the two futures, as typed into the workbench. */
export interface Analysis { prompt: string; good: string; bad: string }

/**
 * Types the prompt and both futures, presses Analyse and (unless `wait` is false: a spec that
 * looks at the run or its failure) waits until it has drawn its final margin and nothing runs.
 */
export async function analyseWith(page: Page, a: Analysis, opts: { wait?: boolean } = {}): Promise<void> {
  await page.getByTestId('prompt').fill(a.prompt);
  await page.getByTestId('good-future').fill(a.good);
  await page.getByTestId('bad-future').fill(a.bad);
  await expect(page.getByTestId('analyse')).toBeEnabled({ timeout: 60_000 });
  await page.getByTestId('analyse').click();
  if (opts.wait !== false) await analysed(page);
}

/**
 * Builds the CAA vector of the bundled happy/sad set in the Vectors tab (the set's suggested prompt
 * and futures, then Build) at `hook` (default: the hook the tab offers) and waits for it to finish.
 */
export async function buildCaa(page: Page, hook?: string): Promise<void> {
  await page.getByTestId('tab-vectors').click();
  await page.getByTestId('use-suggested').click();
  await page.getByTestId('vector-method').selectOption('caa');
  if (hook) await page.getByTestId('vector-hook').selectOption(hook);
  await page.getByTestId('build-vector').click();
  await settled(page);
}
