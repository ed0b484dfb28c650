import { test, expect, type Page } from '@playwright/test';
import * as fs from 'node:fs';
import { open, settled, buildCaa } from './app_page';
import { withMoeFixture } from './moe_fixture';

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
  await fillLongPair(page);
  // The progress line starting and ending moves nothing (it floats; trials saw the page jump ~55 px).
  const top = () => page.locator('main').evaluate((el) => el.getBoundingClientRect().top + window.scrollY);
  const before = await top();
  // No band is kept for it between jobs (trials saw ~60 px of empty space under the Experiment row).
  const barBottom = await page.getByTestId('experiment-bar').evaluate((el) => el.getBoundingClientRect().bottom + window.scrollY);
  expect(before - barBottom, 'space between the Experiment row and the panels').toBeLessThan(24);
  await page.getByTestId('run-patching').click();
  await expect(page.getByTestId('progress')).toBeVisible();
  expect(await top(), 'page shift when the job started').toBe(before);
  // It lies at the foot of the window, clear of the Experiment row (the leftovers test below checks every button).
  const [line, bar] = await Promise.all([page.getByTestId('progress').boundingBox(), page.getByTestId('experiment-bar').boundingBox()]);
  expect(line!.y, 'the progress line lies below the Experiment row').toBeGreaterThan(bar!.y + bar!.height);
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

test('poster mode at 1280×800 and 1920×1080: Reset and Leave are on screen, nothing is wider than the window (issue 29 item 7), and the final-margin numbers are in view without scrolling', async ({ page }) => {
  for (const [width, height] of [[1280, 800], [1920, 1080]]) {
    await page.setViewportSize({ width, height });
    await page.goto('/index.html?poster');
    await expect(page.getByTestId('poster')).toHaveAttribute('data-slides', '6', { timeout: 60_000 });
    await expect(page.getByTestId('final-margin-last')).toBeVisible({ timeout: 120_000 });
    await settled(page);
    for (const id of ['poster-reset', 'poster-exit', 'poster-counter', 'poster-title']) await expect(page.getByTestId(id), id).toBeInViewport({ ratio: 1 });
    // the slide's numbers, whole, inside the view's box as it opens (they lay below the fold, the box scrolled to 0)
    for (const id of ['final-margin-last', 'sequence-margin']) await expect.soft(page.getByTestId(id), `${id} at ${width}×${height}`).toBeInViewport({ ratio: 1 });
    expect(await page.evaluate(() => document.documentElement.scrollWidth)).toBeLessThanOrEqual(width);
    await page.screenshot({ path: `${SHOTS}/poster-${width}x${height}.png` });
  }
});

/** Expert routes: types the prompt and the two futures, opens the tab and runs the routes. */
async function runRoutes(page: Page, prompt: string, good: string, bad: string) {
  await page.getByTestId('prompt').fill(prompt);
  await page.getByTestId('good-future').fill(good);
  await page.getByTestId('bad-future').fill(bad);
  await page.getByTestId('tab-routes').click();
  await page.getByTestId('run-routes').click();
  await settled(page);
}

/** Branches: grows a 6-token trunk, then starts Find fork points over every position (1 sample each). */
async function findForkPoints(page: Page) {
  await page.getByTestId('tab-branches').click();
  await page.getByTestId('branch-max-new').fill('6');
  await page.getByTestId('branch-start').click();
  await settled(page);
  await page.getByTestId('fork-near-ties-only').uncheck();
  await page.getByTestId('fork-samples').fill('1');
  await page.getByTestId('find-forks').click();
}

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
    // A control's part drawn inside its scrolling boxes (a prompt scrolled up inside the side column is not under a banner above it).
    const drawn = (el: Element) => {
      let q = { left: 0, top: 0, right: 0, bottom: 0, ...el.getBoundingClientRect().toJSON() };
      for (let a = el.parentElement; a && a !== document.body; a = a.parentElement) {
        const s = getComputedStyle(a);
        if (s.overflowX === 'visible' && s.overflowY === 'visible') continue;
        const b = a.getBoundingClientRect();
        q = { left: Math.max(q.left, b.left), top: Math.max(q.top, b.top), right: Math.min(q.right, b.right), bottom: Math.min(q.bottom, b.bottom) };
      }
      return q;
    };
    const controls = [...document.querySelectorAll('input, textarea, select, button, [role="tab"]')].filter((el) => shown(el) && !el.closest('[role="alert"]'));
    for (const b of document.querySelectorAll('[role="alert"]')) {
      if (!shown(b)) continue;
      const r = b.getBoundingClientRect();
      for (const c of controls) {
        const q = drawn(c);
        if (q.right - q.left < 1 || q.bottom - q.top < 1) continue;
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
  await findForkPoints(page);
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

/** Where two boxes overlap (by more than a pixel each way). */
const overlaps = (a: { x: number; y: number; width: number; height: number }, b: { x: number; y: number; width: number; height: number }) =>
  a.x + 1 < b.x + b.width && b.x + 1 < a.x + a.width && a.y + 1 < b.y + b.height && b.y + 1 < a.y + a.height;

/**
 * What the running job's progress line does wrong on the page now, read in the page: each button, input, select,
 * textarea or tab whose visible part (clipped by its scrolling ancestors) lies under the line, and each element of the
 * line whose text is cut off (scrollWidth > clientWidth). Each entry names the element.
 */
async function progressLineFaults(page: Page): Promise<string[]> {
  return page.getByTestId('progress').evaluate((line) => {
    const name = (el: Element) => `${el.tagName.toLowerCase()}${el.getAttribute('data-testid') ? `[${el.getAttribute('data-testid')}]` : ''} “${(el.textContent ?? (el as HTMLInputElement).value ?? '').trim().slice(0, 30)}”`;
    const l = line.getBoundingClientRect();
    const faults: string[] = [];
    for (const c of document.querySelectorAll('input, textarea, select, button, [role="tab"]')) {
      if (line.contains(c) || c.closest('.visually-hidden, [hidden]') || (c.closest('details:not([open])') && !c.closest('summary'))) continue;
      let r = { left: 0, top: 0, right: 0, bottom: 0, ...c.getBoundingClientRect().toJSON() };
      for (let a = c.parentElement; a && a !== document.body; a = a.parentElement) {
        const s = getComputedStyle(a);
        if (s.overflowX === 'visible' && s.overflowY === 'visible') continue;
        const b = a.getBoundingClientRect();
        r = { left: Math.max(r.left, b.left), top: Math.max(r.top, b.top), right: Math.min(r.right, b.right), bottom: Math.min(r.bottom, b.bottom) };
      }
      if (r.right - r.left < 1 || r.bottom - r.top < 1) continue; // scrolled out of its box: not drawn
      if (r.left < l.right && r.right > l.left && r.top < l.bottom && r.bottom > l.top) faults.push(`the line lies over ${name(c)}`);
    }
    for (const el of [line, ...line.querySelectorAll('*')]) {
      if (el.scrollWidth > el.clientWidth + 1 && el.clientWidth > 0) faults.push(`${name(el)} cuts its text off (${el.scrollWidth} > ${el.clientWidth} px)`);
    }
    return faults;
  });
}

/** A patching pair long enough that its run shows the progress line for a while (the layout checks look at it during the run). */
async function fillLongPair(page: Page): Promise<void> {
  const tail = ' They played with a big red ball and ran around the green trees. Then Lily gave the ball to';
  await page.getByTestId('patching-clean').fill(`Lily and Tom went to the park.${tail}`);
  await page.getByTestId('patching-corrupt').fill(`Lily and dad went to the park.${tail}`);
}

test('issue 29 leftover: at 1280×800, while a job runs, the progress line lies over no button or input (scrolled to the top, 400 px, the end; Analyse pressed and queued stays in view) and its words are whole', async ({ page }) => {
  test.setTimeout(120_000);
  await page.setViewportSize({ width: 1280, height: 800 });
  await open(page);
  await page.getByTestId('tab-patching').click();
  await fillLongPair(page);
  await page.getByTestId('run-patching').click();
  const line = page.getByTestId('progress');
  await expect(line).toBeVisible();
  // the time left is the longest text the line shows (a trial read “about 12 s l…”)
  await expect(page.getByTestId('progress-detail')).toContainText(/left/, { timeout: 60_000 });
  for (const y of [0, 400, 100_000]) {
    await page.evaluate((top) => window.scrollTo(0, top), y);
    expect.soft(await progressLineFaults(page), `scrolled to ${y}`).toEqual([]);
    await expect.soft(line, `the line in view, scrolled to ${y}`).toBeInViewport({ ratio: 1 });
  }
  // At the default scroll the Analyse button sat at the window's foot, under the line: pressed now it queues, and stays whole in view.
  await page.evaluate(() => window.scrollTo(0, 0));
  await page.getByTestId('analyse').click();
  await expect(page.getByTestId('queued')).toBeVisible();
  await expect.soft(page.getByTestId('analyse')).toBeInViewport({ ratio: 1 });
  expect.soft(await progressLineFaults(page), 'with Analyse queued').toEqual([]);
  await page.screenshot({ path: `${SHOTS}/layout-progress-queued-1280.png` });
  await page.getByTestId('drop-queued').click();
  await page.getByTestId('cancel-job').click();
  await settled(page);
});

test('issue 29 leftovers a, b: during a job the progress line covers no Experiment button (1280 and 1440 wide) and no heading scrolled to the top of the window, and the end of the page scrolls clear of it', async ({ page }) => {
  test.setTimeout(180_000);
  await page.setViewportSize({ width: 1280, height: 800 });
  await open(page);
  await page.getByTestId('tab-patching').click();
  await fillLongPair(page);
  const line = page.getByTestId('progress');
  for (const [width, height] of [[1280, 800], [1440, 900]]) {
    await page.setViewportSize({ width, height });
    await page.evaluate(() => window.scrollTo(0, 0));
    await page.getByTestId('run-patching').click();
    await expect(line).toBeVisible();
    // b. The Experiment row's buttons stay whole in view (Export nnsight script and Open results… included).
    const lineBox = (await line.boundingBox())!;
    for (const b of await page.getByTestId('experiment-bar').locator('button').all()) {
      const box = await b.boundingBox();
      expect.soft(box && overlaps(lineBox, box), `${width}px: the progress line lies over “${await b.textContent()}”`).toBe(false);
    }
    // a. Each heading, scrolled toward 4 px below the window's top edge as a reader would (as far as the page scrolls), is not under the line (in tall views too, while the job runs).
    let atTop = 0;
    for (const view of ['patching', 'mechanisms', 'side-effects', 'vectors']) {
      await page.getByTestId(`tab-${view}`).click();
      // the views' headings (the experiment's scroll inside the side column, which ends above the line)
      for (const h of await page.locator('main .views h2, main .views h3, main .views legend').all()) {
        if (!(await h.isVisible())) continue;
        await h.evaluate((el) => { window.scrollTo(0, el.getBoundingClientRect().top + window.scrollY - 4); });
        atTop++;
        const [hb, lb] = await Promise.all([h.boundingBox(), line.boundingBox()]);
        expect.soft(overlaps(hb!, lb!), `${width}px: the progress line covers the heading “${await h.textContent()}” (${view}) scrolled to the top`).toBe(false);
        if (atTop === 1) await page.screenshot({ path: `${SHOTS}/layout-progress-heading-${width}.png` });
      }
    }
    await expect(line, 'the job still runs').toBeVisible();
    expect(atTop, 'headings scrolled toward the top of the window').toBeGreaterThanOrEqual(2);
    await page.getByTestId('tab-patching').click();
    // Scrolled to the end, nothing lies under the line (nothing stays under it for good).
    await page.evaluate(() => window.scrollTo(0, document.documentElement.scrollHeight));
    expect.soft(await progressLineFaults(page), `${width}px: scrolled to the end`).toEqual([]);
    await page.screenshot({ path: `${SHOTS}/layout-progress-end-${width}.png` });
    await page.getByTestId('cancel-job').click();
    await settled(page);
  }
});

test('issue 29 leftovers d, e, f: at 1280×800 the fork-points table fits the window; the DLA bars\' numbers overlap no label; the Side effects doses box shows its whole default', async ({ page }) => {
  test.setTimeout(180_000);
  await page.setViewportSize({ width: 1280, height: 800 });
  await open(page);
  // e. Branches: a trunk and its fork points (the table once made the page 1399 px wide).
  await findForkPoints(page);
  await settled(page);
  await expect(page.getByTestId('fork-table')).toBeVisible();
  expect.soft(await overflow(page), 'px the page is wider than the window with the fork table').toBeLessThanOrEqual(0);
  expect.soft(await layoutFaults(page), 'Branches with the fork table').toEqual([]);
  await page.getByTestId('fork-table').scrollIntoViewIfNeeded();
  await page.screenshot({ path: `${SHOTS}/layout-fork-table-1280.png` });
  // d. Direct logit attribution: no number beside a bar overlaps a row's label, and each stays inside the chart.
  await page.getByTestId('tab-attribution').click();
  await page.getByTestId('run-attribution').click();
  await expect(page.getByTestId('dla-bars')).toBeVisible({ timeout: 120_000 });
  await settled(page);
  for (const id of ['dla-bars', 'span-bars']) {
    if (!(await page.getByTestId(id).count())) continue;
    const faults = await page.getByTestId(id).evaluate((svg) => {
      const W = (svg as SVGSVGElement).width.baseVal.value;
      const hit = (a: DOMRect, b: DOMRect) => a.x + 0.5 < b.x + b.width && b.x + 0.5 < a.x + a.width && a.y + 0.5 < b.y + b.height && b.y + 0.5 < a.y + a.height;
      const rows = [...svg.querySelectorAll('g[data-label]')].map((g) => {
        const [label, value] = [...g.querySelectorAll('text')].map((t) => (t as SVGTextElement).getBBox());
        return { name: (g as SVGGElement).dataset.label, label, value, bar: (g.querySelector('rect') as SVGRectElement).getBBox() };
      });
      const out: string[] = [];
      for (const r of rows) {
        if (hit(r.label, r.value)) out.push(`${r.name}: its number overlaps its label`);
        for (const o of rows) if (o !== r && (hit(r.value, o.bar) || hit(r.value, o.label))) out.push(`${r.name}: its number overlaps ${o.name}`);
        if (hit(r.label, r.bar)) out.push(`${r.name}: its label overlaps its bar`);
        if (r.value.x < 0 || r.value.x + r.value.width > W) out.push(`${r.name}: its number runs out of the chart`);
        if (r.label.x < 0) out.push(`${r.name}: its label is cut at the left`);
      }
      return out;
    });
    expect.soft(faults, id).toEqual([]);
  }
  await page.getByTestId('dla-bars').scrollIntoViewIfNeeded();
  await page.screenshot({ path: `${SHOTS}/layout-dla-1280.png` });
  // f. The Side effects doses box is wide enough for its default list.
  await page.getByTestId('tab-side-effects').click();
  const doses = page.getByTestId('side-doses');
  const fit = await doses.evaluate((el) => ({ scroll: el.scrollWidth, client: el.clientWidth, value: (el as HTMLInputElement).value }));
  expect.soft(fit.scroll, `the doses box cuts “${fit.value}” off`).toBeLessThanOrEqual(fit.client);
  await doses.scrollIntoViewIfNeeded();
  await page.screenshot({ path: `${SHOTS}/layout-side-doses-1280.png` });
});

test('trial: the Expert routes map of a long prompt (mixtral-tiny, 80+ tokens) scrolls in its own box at 1280×800, the decision token pinned in view', async ({ page }) => {
  test.setTimeout(180_000);
  await withMoeFixture(page, 'mixtral', async (load) => {
    await load();
    await runRoutes(page, 'Lily and Tom went to the park. They saw a big dog and a small cat. The dog ran after the ball and the cat sat under the tree. Then Lily and Tom had a picnic with the dog and the cat, and they gave the ball to', ' the', ' a');
    const map = page.getByTestId('routes-map');
    await expect(map).toBeVisible();
    const T = await page.getByTestId('token-strip').locator('li').count();
    expect(T, 'tokens of the prompt').toBeGreaterThan(80);
    const g = await map.evaluate((el) => {
      const box = el.closest('.heatmap-box') as HTMLElement;
      const b = box.getBoundingClientRect();
      return { boxRight: b.right, windowRight: document.documentElement.clientWidth, hidden: box.scrollWidth - box.clientWidth, pageHidden: document.documentElement.scrollWidth - document.documentElement.clientWidth };
    });
    // The trial saw a 1352 px canvas in an 830 px panel, the page itself wider than the window and nothing to scroll.
    expect.soft(g.pageHidden, 'px of the page hidden to the right of the window').toBeLessThanOrEqual(0);
    expect.soft(g.boxRight, 'the map box’s right edge (px; the window ends at the next number)').toBeLessThanOrEqual(g.windowRight);
    expect.soft(g.hidden, 'the map is wider than its box, so the box scrolls').toBeGreaterThan(0);
    // Headless Chromium draws no scrollbar (the trial saw none): the grid says that it scrolls.
    await expect(page.getByTestId('routes-map-scroll-note')).toContainText(`${T} columns, wider than the panel: scroll the grid sideways`);
    // The decision token (the last column) is in view without scrolling: a pinned copy at the box's right edge.
    await expect(page.getByTestId('routes-map-pinned')).toBeVisible();
    // Scrolled to its end, the last position's column lies inside the box.
    const end = await map.evaluate((el, n) => {
      const box = el.closest('.heatmap-box') as HTMLElement;
      box.scrollLeft = box.scrollWidth;
      const d = (el as HTMLElement).dataset;
      const c = el.getBoundingClientRect(), b = box.getBoundingClientRect();
      return { lastRight: c.left + Number(d.x0) + n * Number(d.cellWidth), boxRight: b.right };
    }, T);
    expect.soft(end.lastRight, 'scrolled to the end, the last column’s right edge (px; the box ends at the next number)').toBeLessThanOrEqual(end.boxRight + 1);
    await map.scrollIntoViewIfNeeded();
    await page.screenshot({ path: `${SHOTS}/layout-routes-long-1280.png` });
  });
});

test('issue 29 leftover c: at 1280×800 the Expert routes map of a 29-token prompt (mixtral-tiny) shows every token, the last ones included', async ({ page }) => {
  test.setTimeout(180_000);
  await withMoeFixture(page, 'mixtral', async (load) => {
    await load();
    await runRoutes(page, 'The quick brown fox jumps over the lazy dog while the cat sleeps under warm tree', ' jumps', ' runs');
    const map = page.getByTestId('routes-map');
    await expect(map).toBeVisible();
    const T = await page.getByTestId('token-strip').locator('li').count();
    expect(T, 'tokens of the prompt').toBe(29);
    // Every column in view at once: the box does not scroll (a trial saw the map end at token 26 with nothing saying it scrolls), the last token's column whole.
    const g = await map.evaluate((el) => {
      const box = el.closest('.heatmap-box') as HTMLElement;
      const d = (el as HTMLElement).dataset;
      const c = el.getBoundingClientRect(), b = box.getBoundingClientRect();
      return { lastRight: c.left + Number(d.x0) + 29 * Number(d.cellWidth), boxRight: b.right, windowRight: document.documentElement.clientWidth, labelEvery: d.labelEvery, hidden: box.scrollWidth - box.clientWidth };
    });
    expect.soft(g.hidden, 'px of the map hidden to the right of its box').toBeLessThanOrEqual(0);
    expect.soft(g.lastRight, 'the last token column’s right edge (px; the box ends at the next number)').toBeLessThanOrEqual(Math.min(g.boxRight, g.windowRight) + 1);
    expect.soft(g.labelEvery, 'every token labelled').toBe('1');
    expect.soft(await layoutFaults(page), 'Routes at 1280×800').toEqual([]);
    await map.scrollIntoViewIfNeeded();
    await page.screenshot({ path: `${SHOTS}/layout-routes-29-1280.png` });
    // f. The Model dropdown names the loaded folder's model, not the bundled one it showed before.
    await expect(page.getByTestId('model-select').locator('option:checked')).toContainText('mixtral-tiny');
  });
});

test('issue 29 leftover: at 1280×800 the steering transfer\'s set picker is a whole button beside the set\'s name (a native file input was cut to “No fi…osen”)', async ({ page }) => {
  test.setTimeout(120_000);
  await page.setViewportSize({ width: 1280, height: 800 });
  await open(page);
  await page.getByTestId('tab-compare').click();
  await page.getByTestId('b-load-local').click();
  await expect(page.getByTestId('model-b-badge')).toHaveAttribute('data-status', 'ready', { timeout: 120_000 });
  await settled(page);
  const transfer = page.getByTestId('transfer');
  await expect(transfer).toBeVisible();
  // every control of its settings row shows its whole text, and no native file input is drawn
  const cut = async () => transfer.locator('.settings').evaluate((row) => [...row.querySelectorAll('button, select, input, label, span')]
    .filter((el) => el.getBoundingClientRect().width > 1 && getComputedStyle(el).display !== 'none')
    .flatMap((el) => [
      ...(el.scrollWidth > el.clientWidth + 1 ? [`${el.tagName.toLowerCase()} “${(el.textContent || (el as HTMLInputElement).value || '').trim().slice(0, 30)}” cuts its text off`] : []),
      ...(el instanceof HTMLInputElement && el.type === 'file' ? ['a native file input is drawn'] : []),
    ]));
  expect.soft(await cut(), 'before a set is opened').toEqual([]);
  await expect(page.getByTestId('transfer-set-source')).toHaveText('no set loaded');
  // picking a file loads the set and names it beside the button
  await page.getByTestId('transfer-set-file').setInputFiles('public/probes/he_she.json');
  await expect(page.getByTestId('transfer-set-source')).toHaveText('from he_she.json');
  expect.soft(await cut(), 'with the set opened').toEqual([]);
  await transfer.scrollIntoViewIfNeeded();
  await page.screenshot({ path: `${SHOTS}/layout-transfer-set-1280.png` });
});
