import { test, expect, type Page } from '@playwright/test';
import * as fs from 'node:fs';
import { open, settled, buildCaa } from './app_page';

/**
 * Layout on small laptop screens, on the production build with stories260K: with every view
 * filled (a steered analysis, a head's pattern, a generation, a sweep, a vector in the library),
 * no view makes the page wider than the window at 1024 × 768 or 1280 × 800, with the data tables
 * off or on (wide tables scroll inside their own box).
 */
const SHOTS = '.artifacts/screenshots';
const VIEWS = ['margins', 'sinks', 'generation', 'norms', 'dose', 'vectors', 'probe', 'window'] as const;

test.beforeAll(() => fs.mkdirSync(SHOTS, { recursive: true }));

/** Waits for the running job to end without an error banner. */
/** How many pixels the page is wider than the window's layout width (0 or less: no sideways scroll). */
const overflow = (page: Page) => page.evaluate(() => document.documentElement.scrollWidth - document.documentElement.clientWidth);

/** Clicks heatmap cell (row, col) using the geometry the canvas publishes. */
async function clickCell(page: Page, testId: string, row: number, col: number) {
  const c = page.getByTestId(testId);
  const g = await c.evaluate((el) => ({ ...(el as HTMLElement).dataset }));
  const i = g.rowsUpward === 'true' ? Number(g.rows) - 1 - row : row;
  await c.click({ position: { x: Number(g.x0) + (col + 0.5) * Number(g.cellWidth), y: Number(g.y0) + (i + 0.5) * Number(g.cellHeight) } });
}

test('at 1024×768 and 1280×800 no view (heatmap, sinks, generation, norms, dose–response, vectors, probes, window) is wider than the window; one progress bar per job; the icon is served', async ({ page }) => {
  page.on('pageerror', (e) => console.log(`[page error] ${e.message}`));
  await page.setViewportSize({ width: 1024, height: 768 });
  await page.goto('/');
  await expect(page.getByTestId('model-info')).toContainText('stories260K', { timeout: 120_000 });
  await settled(page);
  // The page names its icon, and the icon is served (no favicon 404 in the console).
  const icon = await page.locator('link[rel="icon"]').getAttribute('href');
  const served = await page.request.get(new URL(icon ?? '/favicon.ico', page.url()).href);
  expect(served.status(), `icon ${icon}`).toBe(200);
  expect(served.headers()['content-type']).toContain('image/svg+xml');

  // A CAA vector in the library (its long name is what the sweep's Vector menu shows).
  await buildCaa(page);

  // A steered analysis (row marks beside the heatmap) and one head's pattern.
  await page.getByTestId('tab-margins').click();
  await page.getByTestId('analyse').click();
  await settled(page);
  const T = await page.getByTestId('token-strip').locator('li').count();
  await clickCell(page, 'margin-heatmap', 4, T - 1);
  await page.getByTestId('analyse').click();
  await settled(page);
  await expect(page.getByTestId('margin-steered-tag')).toContainText('#1');
  await page.getByTestId('tab-sinks').click();
  await clickCell(page, 'sink-heatmap', 1, 1);
  await expect(page.getByTestId('pattern-view')).toBeVisible({ timeout: 60_000 });
  await settled(page);

  await page.getByTestId('tab-generation').click();
  await page.getByTestId('max-new-tokens').fill('8');
  await page.getByTestId('generate').click();
  await expect(page.getByTestId('generation-output-steered')).toHaveAttribute('data-done', 'true', { timeout: 120_000 });
  await settled(page);

  // A sweep in progress shows one progress bar and one Cancel (the job bar's).
  await page.getByTestId('tab-dose').click();
  await page.getByTestId('sweep-layers').fill('all');
  await page.getByTestId('sweep-doses').fill(Array.from({ length: 40 }, (_, i) => i - 20).join(','));
  await page.getByTestId('run-sweep').click();
  await expect(page.getByTestId('progress-detail')).toContainText(/[1-9]\d* of 200 forward passes/, { timeout: 60_000 });
  // The view itself says the sweep runs and how far it got (trials watched ~40 s of a silent view).
  await expect(page.getByTestId('sweep-running')).toContainText(/\d+ of 200 forward passes/);
  await expect(page.locator('progress')).toHaveCount(1);
  await expect(page.getByRole('button', { name: 'Cancel', exact: true })).toHaveCount(1);
  await page.getByTestId('cancel-job').click();
  await settled(page);
  await page.getByTestId('sweep-layers').fill('1,2,3');
  await page.getByTestId('sweep-doses').fill('-8,-4,0,4,8');
  await page.getByTestId('run-sweep').click();
  await settled(page);
  await expect(page.getByTestId('dose-margin-chart').locator('g.series')).toHaveCount(3);

  for (const [width, height] of [[1024, 768], [1280, 800]]) {
    await page.setViewportSize({ width, height });
    for (const view of VIEWS) {
      await page.getByTestId(`tab-${view}`).click();
      for (const tables of [false, true]) {
        await page.getByTestId('show-tables').setChecked(tables);
        const over = await overflow(page);
        expect(over, `${view} at ${width}px${tables ? ' with tables' : ''}: the page is ${over}px wider than the window`).toBeLessThanOrEqual(0);
        if (!tables || view === 'margins') await page.screenshot({ path: `${SHOTS}/layout-${view}${tables ? '-tables' : ''}-${width}.png`, fullPage: true });
      }
      if (view === 'generation') {
        // Cancel stays on the line of Generate.
        const [g, c] = await Promise.all([page.getByTestId('generate').boundingBox(), page.getByTestId('cancel-generate').boundingBox()]);
        expect(Math.abs((g?.y ?? 0) - (c?.y ?? -100)), `Generate and Cancel on one line at ${width}px`).toBeLessThan(4);
      }
    }
  }
  await page.getByTestId('show-tables').setChecked(false);
});

test('at 1440×900 a job\'s progress line shifts nothing, and a patching grid wider than its box keeps the whole-layer column "all" and the row labels in view while it scrolls', async ({ page }) => {
  await page.setViewportSize({ width: 1440, height: 900 });
  await open(page);
  await page.getByTestId('tab-patching').click();
  // 40 tokens: 41 columns of ≥ 16 px do not fit beside the readout, so the grid scrolls sideways.
  const tail = ' They played with a big red ball and ran around the green trees. Then Lily gave the ball to';
  await page.getByTestId('patching-clean').fill(`Lily and Tom went to the park.${tail}`);
  await page.getByTestId('patching-corrupt').fill(`Lily and dad went to the park.${tail}`);
  // The progress line starting and ending moves nothing (it floats; trials saw the page jump ~55 px).
  const top = () => page.locator('main').evaluate((el) => el.getBoundingClientRect().top + window.scrollY);
  const before = await top();
  // No band is kept for it between jobs (trials saw ~60 px of empty space under the Experiment row).
  const barBottom = await page.getByTestId('experiment-bar').evaluate((el) => el.getBoundingClientRect().bottom + window.scrollY);
  expect(before - barBottom, 'space between the Experiment row and the panels').toBeLessThan(24);
  await page.getByTestId('run-patching').click();
  await expect(page.getByTestId('progress')).toBeVisible();
  expect(await top(), 'page shift when the job started').toBe(before);
  // It lies over the Experiment row's empty right part, clear of its buttons.
  const [line, button] = await Promise.all([page.getByTestId('progress').boundingBox(), page.getByTestId('poster-mode').boundingBox()]);
  expect(line!.x, 'the progress line starts right of the Experiment buttons').toBeGreaterThan(button!.x + button!.width);
  await page.screenshot({ path: `${SHOTS}/layout-progress-1440.png` });
  await settled(page);
  expect(await top(), 'page shift when the job ended').toBe(before);
  const box = page.locator('[data-testid="patching-view"] .heatmap-box');
  const inBox = async (testId: string) => {
    const [b, c] = await Promise.all([box.boundingBox(), page.getByTestId(testId).boundingBox()]);
    return !!b && !!c && c.x >= b.x - 1 && c.x + c.width <= b.x + b.width + 1;
  };
  expect(await box.evaluate((el) => el.scrollWidth > el.clientWidth), 'the grid scrolls').toBe(true);
  for (const left of [0, 10_000]) {
    await box.evaluate((el, x) => { el.scrollLeft = x; }, left);
    expect(await inBox('patching-heatmap-pinned'), `"all" column in view at scrollLeft ${left}`).toBe(true);
    expect(await inBox('patching-heatmap-row-labels'), `row labels in view at scrollLeft ${left}`).toBe(true);
  }
  expect(await overflow(page)).toBeLessThanOrEqual(0);
  await page.screenshot({ path: `${SHOTS}/layout-patching-pinned-1440.png` });
  // The pinned column is the whole-layer patch: pointing at its top row reads it.
  await box.evaluate((el) => { el.scrollLeft = 0; });
  const pin = page.getByTestId('patching-heatmap-pinned');
  const y0 = Number(await page.getByTestId('patching-heatmap').getAttribute('data-y0'));
  await pin.hover({ position: { x: 14, y: y0 + 10 } });
  await expect(page.getByTestId('patching-readout-col')).toHaveText('all positions');
  await expect(page.getByTestId('patching-readout-layer')).toHaveText('L3 · blocks.4.hook_resid_pre');
});

test('poster mode at 1280×800: Reset and Leave are on screen and nothing is wider than the window (issue 29 item 7)', async ({ page }) => {
  await page.setViewportSize({ width: 1280, height: 800 });
  await page.goto('/index.html?poster');
  await expect(page.getByTestId('poster')).toHaveAttribute('data-slides', '6', { timeout: 60_000 });
  await expect(page.getByTestId('final-margin-last')).toBeVisible({ timeout: 120_000 });
  await settled(page);
  for (const id of ['poster-reset', 'poster-exit', 'poster-counter', 'poster-title']) await expect(page.getByTestId(id), id).toBeInViewport({ ratio: 1 });
  expect(await page.evaluate(() => document.documentElement.scrollWidth)).toBeLessThanOrEqual(1280);
  await page.screenshot({ path: `${SHOTS}/poster-1280x800.png` });
});
