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

/**
 * What breaks the layout on the page now, read in the page: elements whose visible part runs past the
 * window's right edge (one not clipped by a scrolling or clipping ancestor inside the window), and
 * banners that lie over an input, a button or a tab. Each entry names the element.
 */
async function layoutFaults(page: Page): Promise<string[]> {
  return page.evaluate(() => {
    const W = document.documentElement.clientWidth;
    const name = (el: Element) => {
      const id = el.getAttribute('data-testid');
      return `${el.tagName.toLowerCase()}${id ? `[${id}]` : ''}${typeof el.className === 'string' && el.className ? `.${el.className.split(' ')[0]}` : ''}`;
    };
    // Drawn: not a visually-hidden input (clipped to nothing), nor inside a closed <details> (its summary aside).
    const shown = (el: Element) => {
      const r = el.getBoundingClientRect();
      const closed = el.closest('details:not([open])');
      return r.width > 1 && r.height > 1 && getComputedStyle(el).visibility !== 'hidden' && !(closed && !el.closest('summary')) && !el.closest('.visually-hidden');
    };
    const faults: string[] = [];
    if (document.documentElement.scrollWidth > W) faults.push(`the page is ${document.documentElement.scrollWidth - W}px wider than the window`);
    for (const el of document.querySelectorAll('body *')) {
      if (!shown(el)) continue;
      let right = el.getBoundingClientRect().right;
      for (let a = el.parentElement; a && a !== document.body; a = a.parentElement) {
        const o = getComputedStyle(a).overflowX;
        if (o !== 'visible') right = Math.min(right, a.getBoundingClientRect().right);
      }
      if (right > W + 1) faults.push(`${name(el)} runs ${Math.round(right - W)}px past the window`);
    }
    const controls = [...document.querySelectorAll('input, textarea, select, button, [role="tab"]')].filter((el) => shown(el) && !el.closest('[role="alert"]'));
    for (const b of document.querySelectorAll('[role="alert"]')) {
      if (!shown(b)) continue;
      const r = b.getBoundingClientRect();
      for (const c of controls) {
        const q = c.getBoundingClientRect();
        if (q.left < r.right && q.right > r.left && q.top < r.bottom && q.bottom > r.top) {
          // Overlap only counts where the banner is drawn over the control (it is the topmost thing there).
          const x = (Math.max(q.left, r.left) + Math.min(q.right, r.right)) / 2;
          const y = (Math.max(q.top, r.top) + Math.min(q.bottom, r.bottom)) / 2;
          const top = document.elementFromPoint(x, y);
          if (top && b.contains(top)) faults.push(`banner ${name(b)} covers ${name(c)}`);
        }
      }
    }
    // Text cut off inside its own box (a caption whose end is hidden).
    for (const el of document.querySelectorAll('.poster *, .tabs *')) {
      if (!shown(el) || el.children.length) continue;
      const s = getComputedStyle(el);
      if (s.overflowX !== 'visible' && el.scrollWidth > el.clientWidth + 1) faults.push(`${name(el)} cuts its text off (“${(el.textContent ?? '').slice(0, 40)}”)`);
    }
    return [...new Set(faults)].slice(0, 12);
  });
}

/** Every tab of the workbench (the tabs are the view registry's rows). */
const tabNames = (page: Page) => page.getByRole('tab').evaluateAll((els) => els.map((e) => (e.getAttribute('data-testid') ?? '').replace(/^tab-/, '')));

test('issue 29 item 7: at 1280×800 every registered view, filled, fits the window (scrolled or not), banners cover no input, the heatmap labels all 38 tokens, and the poster fits at 1920×1080 and 1280×800', async ({ page }) => {
  test.setTimeout(240_000);
  await page.setViewportSize({ width: 1280, height: 800 });
  await open(page);
  await buildCaa(page);
  // A 38-token prompt: every column of the margin heatmap is labelled, and the heatmap uses the panel.
  await page.getByTestId('tab-margins').click();
  await page.getByTestId('prompt').fill('Lily and Tom went to the park. They played with a big red ball and ran around. Then Lily gave the ball to');
  await page.getByTestId('analyse').click();
  await settled(page);
  const T = await page.getByTestId('token-strip').locator('li').count();
  const heat = await page.getByTestId('margin-heatmap').evaluate((el) => ({ every: (el as HTMLElement).dataset.labelEvery, w: el.getBoundingClientRect().width, panel: el.closest('.views')!.getBoundingClientRect().width }));
  expect(T, 'tokens').toBeGreaterThanOrEqual(34);
  expect(T, 'tokens').toBeLessThanOrEqual(42);
  expect.soft(heat.every, `label every n-th column at ${T} tokens`).toBe('1');
  expect.soft(heat.w / heat.panel, 'heatmap width / panel width').toBeGreaterThan(0.8);
  // Branches: a trunk and its fork points (a wide table).
  await page.getByTestId('tab-branches').click();
  await page.getByTestId('branch-max-new').fill('6');
  await page.getByTestId('branch-start').click();
  await settled(page);
  await page.getByTestId('fork-near-ties-only').uncheck();
  await page.getByTestId('fork-samples').fill('1');
  await page.getByTestId('find-forks').click();
  // While it runs, the progress line fits the window.
  await expect(page.getByTestId('progress')).toBeVisible();
  expect.soft(await layoutFaults(page), 'with the progress line').toEqual([]);
  await settled(page);
  await expect(page.getByTestId('fork-table')).toBeVisible();
  // Two banners at once: a failed analysis (an empty future) and an experiment notice (a bad file).
  await page.getByTestId('experiment-file').setInputFiles({ name: 'broken.json', mimeType: 'application/json', buffer: Buffer.from('{"format": "branchpoint-experiment", ') });
  await expect(page.getByRole('alert')).toHaveCount(1);
  await page.getByTestId('good-future').fill('');
  await page.getByTestId('analyse').click({ force: true });
  await expect(page.getByRole('alert')).toHaveCount(2);
  // Banners one under the other lie close (a trial saw a gap between them) and over nothing.
  const gaps = await page.getByRole('alert').evaluateAll((els) => {
    const rs = els.map((e) => e.getBoundingClientRect()).sort((a, b) => a.top - b.top);
    return rs.slice(1).map((r, i) => Math.round(r.top - rs[i].bottom));
  });
  for (const g of gaps) expect.soft(g, 'px between two banners').toBeLessThanOrEqual(12);
  for (const view of await tabNames(page)) {
    await page.getByTestId(`tab-${view}`).click();
    for (const y of [0, 400, 100_000]) {
      await page.evaluate((top) => window.scrollTo(0, top), y);
      expect.soft(await layoutFaults(page), `${view} at 1280×800, scrolled to ${y}`).toEqual([]);
    }
    await page.evaluate(() => window.scrollTo(0, 0));
    if (['margins', 'sinks', 'vectors', 'branches'].includes(view)) await page.screenshot({ path: `${SHOTS}/layout-all-${view}-1280.png`, fullPage: true });
  }
  await page.getByTestId('good-future').fill(' happy');
  for (const [width, height] of [[1920, 1080], [1280, 800]]) {
    await page.setViewportSize({ width, height });
    await page.goto('/index.html?poster');
    await expect(page.getByTestId('poster')).toHaveAttribute('data-slides', '6', { timeout: 60_000 });
    for (let s = 0; s < 6; s++) {
      await expect(page.getByTestId('poster-busy')).toBeHidden({ timeout: 120_000 });
      await settled(page);
      for (const id of ['poster-reset', 'poster-exit', 'poster-counter', 'poster-title']) await expect.soft(page.getByTestId(id), `${id} on slide ${s + 1} at ${width}×${height}`).toBeInViewport({ ratio: 1 });
      expect.soft(await layoutFaults(page), `poster slide ${s + 1} at ${width}×${height}`).toEqual([]);
      await page.screenshot({ path: `${SHOTS}/layout-poster-${s + 1}-${width}.png` });
      await page.keyboard.press('ArrowRight');
    }
  }
});
