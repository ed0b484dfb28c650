import { test, expect } from '@playwright/test';
import QRCode from 'qrcode';
import * as fs from 'node:fs';
import { serveStatic, type StaticServer } from '../tools/static_server';
import { parseShown } from './golden';
import { analyseWith, analysed, open } from './app_page';

/**
 * Poster mode as a kiosk (`?poster`) on the built site from a sub-path: the deck's experiments
 * step with the arrow keys, each rerun with its key view large and a QR code of its link; R resets.
 * Screenshots at 1920×1080 land in .artifacts/screenshots/.
 */
const SHOTS = '.artifacts/screenshots';
let site: StaticServer;

test.beforeAll(async () => {
  fs.mkdirSync(SHOTS, { recursive: true });
  site = await serveStatic('dist', '/poster/');
});
test.afterAll(async () => site?.close());

test('a kiosk steps through the deck with the arrow keys, shows each experiment\'s view and QR code, and resets', async ({ page }) => {
  page.on('pageerror', (e) => console.log(`[page error] ${e.message}`));
  const fullscreenWarnings: string[] = [];
  page.on('console', (m) => { if (/requestFullscreen/.test(m.text())) fullscreenWarnings.push(m.text()); });
  await page.setViewportSize({ width: 1920, height: 1080 });
  await page.goto(`${site.url}?poster`);
  const poster = page.getByTestId('poster');
  await expect(poster).toHaveAttribute('data-slides', '6', { timeout: 60_000 });
  await expect(page.getByTestId('poster-title')).toHaveText('Where does “she” win?');
  await expect(page.getByTestId('final-margin-last')).toBeVisible({ timeout: 120_000 });
  await expect(page.getByTestId('progress')).toBeHidden({ timeout: 120_000 });
  expect(parseShown(await page.getByTestId('final-margin-last').textContent()), 'girl → she wins').toBeGreaterThan(3);
  await expect(page.getByTestId('poster-qr').locator('svg path').first()).toBeAttached();
  // A deck slide's QR holds its short deck link, at error correction L: the sparsest code for it.
  const qrLink = await page.getByTestId('poster-qr').getAttribute('data-link');
  expect(qrLink).toMatch(/#deck=0$/);
  const side = Number((await page.getByTestId('poster-qr').locator('svg').getAttribute('viewBox'))!.split(' ')[2]);
  expect(side).toBe(QRCode.create(qrLink!, { errorCorrectionLevel: 'L' }).modules.size + 2);
  // A kiosk start asks for no full screen (browsers refuse it without a user gesture, with a console warning).
  expect(fullscreenWarnings).toEqual([]);
  // The last readout row is above the fold at 1920×1080.
  await expect(page.getByTestId('sequence-margin')).toBeInViewport({ ratio: 1 });
  await page.screenshot({ path: `${SHOTS}/poster-1920x1080.png` });

  await page.keyboard.press('ArrowRight');
  await expect(page.getByTestId('poster-counter')).toHaveText('2 / 6');
  await expect(page.getByTestId('poster-title')).toHaveText('Same sentence, a boy');
  await expect(page.getByTestId('progress')).toBeHidden({ timeout: 120_000 });
  await expect.poll(async () => parseShown(await page.getByTestId('final-margin-last').textContent()), { timeout: 120_000 }).toBeLessThan(-2);

  await page.keyboard.press('ArrowRight');
  await expect(page.getByTestId('poster-title')).toHaveText('Steering mood: dose–response');
  await expect(page.getByTestId('dose-margin-chart')).toBeVisible({ timeout: 120_000 });
  await expect(page.getByTestId('progress')).toBeHidden({ timeout: 120_000 });
  // Its full link (vector inside) is too long for a scannable code: the QR holds the short deck link.
  await expect(page.getByTestId('poster-qr')).toHaveAttribute('data-link', /#deck=2$/);
  await expect(page.getByTestId('poster-qr').locator('svg path').first()).toBeAttached();
  // Both charts fit the 1920×1080 screen (side by side): the KL cost is not cut off below the fold.
  await expect(page.getByTestId('dose-kl-chart')).toBeInViewport({ ratio: 1 });
  await expect(page.getByTestId('dose-margin-chart')).toBeInViewport({ ratio: 1 });
  await page.screenshot({ path: `${SHOTS}/poster-dose-1920x1080.png` });

  await page.keyboard.press('r');
  await expect(page.getByTestId('poster-counter')).toHaveText('1 / 6');
  await expect(page.getByTestId('poster-title')).toHaveText('Where does “she” win?');
  await expect(page.getByTestId('margin-heatmap')).toBeVisible({ timeout: 120_000 });
  await expect(page.getByTestId('progress')).toBeHidden({ timeout: 120_000 });

  // Two presses at once: the second comes while the first slide is still running. It is queued and
  // shown (issue 29 item 10: it was dropped), and the deck ends on the slide both presses ask for.
  // The note can come and go between two polls on a fast run: record every text it shows.
  await page.evaluate(() => {
    const seen: string[] = ((window as unknown as { __busy: string[] }).__busy = []);
    new MutationObserver(() => {
      const t = document.querySelector('[data-testid="poster-busy"]')?.textContent;
      if (t) seen.push(t);
    }).observe(document.body, { subtree: true, childList: true, characterData: true });
  });
  await page.keyboard.press('ArrowRight');
  await page.keyboard.press('ArrowRight');
  await page.screenshot({ path: `${SHOTS}/poster-queued-1920x1080.png` });
  await expect(page.getByTestId('poster-counter')).toHaveText('3 / 6', { timeout: 120_000 });
  expect((await page.evaluate(() => (window as unknown as { __busy: string[] }).__busy)).join(' | ')).toContain('still running: then 3');
  await expect(page.getByTestId('poster-title')).toHaveText('Steering mood: dose–response');
  await expect(page.getByTestId('progress')).toBeHidden({ timeout: 120_000 });
  await expect(page.getByTestId('poster-busy')).toBeHidden({ timeout: 120_000 });
});

test('poster mode gives the user\'s own experiment back on Esc, in the page and in the saved link and local storage', async ({ page }) => {
  const mine = { prompt: 'Once upon a time the cat', good: ' ran', bad: ' sat' };
  await open(page, site.url);
  // Analysed with another bad future, then edited: the heatmap on display is stale when poster mode starts.
  await analyseWith(page, { ...mine, bad: ' jumped' });
  await page.getByTestId('bad-future').fill(mine.bad);
  await expect(page.getByTestId('margin-status')).toHaveAttribute('data-stale', 'futures');
  await page.setViewportSize({ width: 1440, height: 900 });
  await page.getByTestId('poster-mode').click();
  await expect(page.getByTestId('poster')).toHaveAttribute('data-slides', '7', { timeout: 60_000 });
  // Slide 1 shows the experiment as edited (the one its prompt and QR code stand for): the analysis was run again.
  await expect(page.getByTestId('margin-status')).toBeHidden({ timeout: 120_000 });
  await expect(page.getByRole('button', { name: 'next experiment' })).toBeEnabled({ timeout: 120_000 });
  // Slide 1's QR code holds the short link (#q=, the difference from the default experiment): a sparse code (trials: 87
  // modules), which opens this experiment (checked after leaving).
  const qr = page.getByTestId('poster-qr');
  await expect(qr).toHaveAttribute('data-link', /#q=/);
  const qrLink = (await qr.getAttribute('data-link'))!;
  expect(Number((await qr.locator('svg').getAttribute('viewBox'))!.split(' ')[2])).toBeLessThanOrEqual(51);
  const myMargin = await page.getByTestId('final-margin-last').textContent();
  // R goes to the first slide (the user's experiment), not the deck's first.
  await page.keyboard.press('r');
  await expect(page.getByTestId('poster-counter')).toHaveText('1 / 7');
  for (const n of [2, 3]) {
    await page.keyboard.press('ArrowRight');
    await expect(page.getByTestId('poster-counter')).toHaveText(`${n} / 7`);
    await expect(page.getByTestId('margin-stale')).toBeHidden({ timeout: 120_000 });
    await analysed(page);
    // At 1440×900 the side panel (title, note, prompt, QR, buttons) fits without scrolling.
    await expect(page.getByTestId('poster-exit')).toBeInViewport({ ratio: 1 });
    expect(await page.locator('.poster-side').evaluate((el) => el.scrollHeight - el.clientHeight)).toBeLessThanOrEqual(0);
  }
  await page.keyboard.press('Escape');
  await expect(page.getByTestId('poster')).toBeHidden();
  const saved = async () => JSON.parse(await page.evaluate(() => localStorage.getItem('branchpoint.experiment') ?? '{}'));
  for (const reload of [false, true]) {
    if (reload) await open(page, page.url());
    await expect(page.getByTestId('prompt')).toHaveValue(mine.prompt);
    await expect(page.getByTestId('good-future')).toHaveValue(mine.good);
    await expect(page.getByTestId('bad-future')).toHaveValue(mine.bad);
    await expect.poll(async () => (await saved()).prompt).toBe(mine.prompt);
    expect((await saved()).interventions).toEqual([]);
    if (!reload) {
      // the user's own (refreshed) result is on display again, not the last slide's marked stale
      await expect(page.getByTestId('final-margin-last')).toHaveText(myMargin!);
      await expect(page.getByTestId('margin-status')).toBeHidden();
      await page.screenshot({ path: `${SHOTS}/poster-left.png` });
    }
  }
  await page.getByTestId('prompt').fill('A different prompt');
  await open(page, qrLink);
  await expect(page.getByTestId('prompt')).toHaveValue(mine.prompt);
  await expect(page.getByTestId('good-future')).toHaveValue(mine.good);
});

test('the deck\'s base-vs-fine-tune slide loads both bundled models from the static site and shows the change in block 3\'s MLP', async ({ page }) => {
  page.on('pageerror', (e) => console.log(`[page error] ${e.message}`));
  await page.setViewportSize({ width: 1920, height: 1080 });
  await page.goto(`${site.url}?poster`);
  await expect(page.getByTestId('poster')).toHaveAttribute('data-slides', '6', { timeout: 60_000 });
  // a key press while a slide still runs is queued (PosterMode): press only while the counter is
  // short of the slide wanted, and accept a queued press that has already moved it further
  const slide = async () => Number((await page.getByTestId('poster-counter').textContent())!.split('/')[0]);
  for (let n = 2; n <= 6; n++) {
    await expect(async () => {
      if ((await slide()) < n) {
        await expect(page.getByTestId('progress')).toBeHidden();
        await page.keyboard.press('ArrowRight');
      }
      await expect.poll(slide, { timeout: 1500 }).toBeGreaterThanOrEqual(n);
    }).toPass({ timeout: 180_000 });
  }
  await expect(page.getByTestId('poster-counter')).toHaveText('6 / 6');
  await expect(page.getByTestId('poster-title')).toHaveText('Base vs fine-tune: what changed?');
  await expect(page.getByTestId('poster-qr')).toHaveAttribute('data-link', /#deck=5$/);
  // model B is the bundled fine-tune, loaded from the site's own models/ folder (no ../shared)
  await expect(page.getByTestId('compare-weights-changed')).toContainText('Weights differ only in: block 3 gate, block 3 up, block 3 down', { timeout: 240_000 });
  await expect(page.getByTestId('progress')).toBeHidden({ timeout: 120_000 });
  await expect(page.getByTestId('compare-caption')).toHaveAttribute('data-label-b', 'stories260K-happy-ft');
  // the note's numbers: Δ_A ≈ +0.7, Δ_B ≈ +8.1, and r = 1 at block 3's mlp_out
  expect(Number((await page.getByTestId('compare-margin-a').textContent())!.replace('+', ''))).toBeCloseTo(0.7, 1);
  expect(Number((await page.getByTestId('compare-margin-b').textContent())!.replace('+', ''))).toBeCloseTo(8.1, 1);
  await expect(page.getByTestId('compare-patch-summary')).toContainText('is mlp_out of block 3 (r = 1.0000)');
  await page.screenshot({ path: `${SHOTS}/poster-compare-1920x1080.png` });
});
