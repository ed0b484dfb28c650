import { test, expect, type Page } from '@playwright/test';
import * as fs from 'node:fs';
import { Lens, firstTokenAfter, parseShown, referencePrompt } from './golden';
import { analyseWith } from './app_page';

const PROMPT = 'Lily and Tom went to the park. Lily gave the ball to';
const GOOD = ' Tom';
const BAD = ' Lily';
const TOL = 1e-3;
const SHOTS = '.artifacts/screenshots';

/** Points at heatmap cell (row, col) using the geometry the canvas publishes. */
async function hoverCell(page: Page, testId: string, row: number, col: number) {
  const c = page.getByTestId(testId);
  const g = await c.evaluate((el) => ({ ...el.dataset }));
  const x0 = Number(g.x0), y0 = Number(g.y0), cw = Number(g.cellWidth), ch = Number(g.cellHeight), rows = Number(g.rows);
  const i = g.rowsUpward === 'true' ? rows - 1 - row : row;
  await c.hover({ position: { x: x0 + (col + 0.5) * cw, y: y0 + (i + 0.5) * ch } });
}

test.beforeAll(() => fs.mkdirSync(SHOTS, { recursive: true }));

test('the workbench shows the golden lens margins, sink statistics and greedy continuation of stories260K on WebGPU', async ({ page }) => {
  page.on('pageerror', (e) => console.log(`[page error] ${e.message}`));
  const golden = referencePrompt(PROMPT);
  const lens = new Lens(golden);
  const good = await firstTokenAfter(PROMPT, GOOD);
  const bad = await firstTokenAfter(PROMPT, BAD);
  expect(good.promptIds, 'the tokenizer reproduces the golden prompt ids').toEqual(golden.input_ids);
  const T = golden.n_prompt;

  await page.goto('/');
  const badge = page.getByTestId('backend-badge');
  await expect(badge).toBeVisible({ timeout: 120_000 });
  await expect(badge).toHaveAttribute('data-kind', 'webgpu');
  await expect(badge).toContainText(/WebGPU/);
  await expect(badge).toContainText(/swiftshader/i);
  await expect(badge).not.toContainText(/CPU backend/);
  await expect(page.getByTestId('model-info')).toContainText('stories260K');

  await analyseWith(page, { prompt: PROMPT, good: GOOD, bad: BAD });
  await expect(page.getByTestId('margin-heatmap')).toBeVisible();
  // Positions are numbered above the columns (the tokens under them are not their positions).
  await expect(page.getByTestId('margin-heatmap')).toHaveAttribute('data-col-indices', /^0 /);

  // The page resolved the futures to the same first tokens as the tokenizer here, and shows the prompt's tokens.
  await expect(page.getByTestId('good-resolved')).toHaveAttribute('data-first-ids', String(good.id));
  await expect(page.getByTestId('bad-resolved')).toHaveAttribute('data-first-ids', String(bad.id));
  await expect(page.getByTestId('token-strip').locator('li')).toHaveCount(T);
  for (let t = 0; t < T; t++) await expect(page.getByTestId(`token-${t}`)).toHaveAttribute('data-id', String(golden.input_ids[t]));

  // Every cell of the lens-margin table equals log_softmax(W_U · RMSNorm(h))[good] − [bad] from the reference residuals.
  await page.getByTestId('show-tables').check();
  let worst = 0;
  for (let l = 0; l <= lens.L; l++) {
    for (let t = 0; t < T; t++) {
      const shown = parseShown(await page.getByTestId(`margin-cell-${l}-${t}`).textContent());
      const want = lens.margin(l, t, good.id, bad.id);
      worst = Math.max(worst, Math.abs(shown - want));
      expect(Math.abs(shown - want), `margin layer ${l}, position ${t}: shown ${shown}, reference ${want}`).toBeLessThanOrEqual(TOL);
    }
  }
  console.log(`lens margin table: ${(lens.L + 1) * T} cells, max |shown − reference| = ${worst.toExponential(2)}`);
  for (let t = 0; t < T; t++) {
    expect(Math.abs(parseShown(await page.getByTestId(`final-margin-${t}`).textContent()) - lens.margin(lens.L, t, good.id, bad.id))).toBeLessThanOrEqual(TOL);
  }

  // Hover readout at (layer 3, last token): margin and the lens's top tokens with log-probs.
  const [hl, ht] = [3, T - 1];
  await hoverCell(page, 'margin-heatmap', hl, ht);
  const readout = page.getByTestId('margin-readout');
  await expect(readout).toHaveAttribute('data-layer', String(hl));
  await expect(readout).toHaveAttribute('data-position', String(ht));
  expect(Math.abs(parseShown(await page.getByTestId('readout-margin').textContent()) - lens.margin(hl, ht, good.id, bad.id))).toBeLessThanOrEqual(TOL);
  const lp = lens.logProbs(hl, ht);
  const order = Array.from(lp.keys()).sort((a, b) => lp[b] - lp[a]);
  for (let i = 0; i < 3; i++) {
    const row = page.getByTestId(`readout-top-${i}`);
    await expect(row, `top-${i} token of the lens at layer ${hl}`).toHaveAttribute('data-id', String(order[i]));
    expect(Math.abs(parseShown(await row.locator('td').nth(1).textContent()) - lp[order[i]])).toBeLessThanOrEqual(TOL);
  }

  // Exports: the JSON grid is the reference grid; the CSV has a row per layer; the PNG is a PNG.
  const view = page.getByTestId('margin-view');
  const saved = async (name: string) => {
    const [dl] = await Promise.all([page.waitForEvent('download'), view.getByRole('button', { name, exact: true }).click()]);
    return fs.readFileSync(await dl.path());
  };
  const exported = JSON.parse((await saved('JSON')).toString('utf8')) as { ids: number[]; lensMargin: number[][] };
  expect(exported.ids).toEqual(golden.input_ids);
  for (let l = 0; l <= lens.L; l++) for (const t of [0, 7, T - 1]) expect(Math.abs(exported.lensMargin[l][t] - lens.margin(l, t, good.id, bad.id))).toBeLessThanOrEqual(TOL);
  expect((await saved('CSV')).toString('utf8').trim().split(/\r?\n/)).toHaveLength(lens.L + 2);
  expect((await saved('PNG 2×')).subarray(0, 8)).toEqual(Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]));

  await page.getByTestId('show-tables').uncheck();
  await hoverCell(page, 'margin-heatmap', hl, ht);
  await expect(page.getByTestId(`token-${ht}`)).toHaveClass(/hl/);
  await page.screenshot({ path: `${SHOTS}/margin-heatmap-hover.png`, fullPage: true });

  // Sinks: α₀ of a few heads against the reference attention restricted to the prompt; then one head's pattern.
  await page.getByTestId('tab-sinks').click();
  await page.getByTestId('show-tables').check();
  for (const [l, h] of [[0, 0], [1, 1], [2, 5], [4, 0], [4, 7]]) {
    const shown = parseShown(await page.getByTestId(`alpha0-cell-${l}-${h}`).textContent());
    expect(Math.abs(shown - lens.alpha0(l, h)), `α₀ layer ${l} head ${h}`).toBeLessThanOrEqual(TOL);
  }
  const [pl, ph] = [1, 1];
  await hoverCell(page, 'sink-heatmap', pl, ph);
  await expect(page.getByTestId('sink-readout-alpha0')).toBeVisible();
  // Its columns are labelled once (H0 … H7 under them; no index row above, as the token heatmap has).
  await expect(page.getByTestId('sink-heatmap')).toHaveAttribute('data-col-indices', '');
  expect(Math.abs(parseShown(await page.getByTestId('sink-readout-alpha0').textContent()) - lens.alpha0(pl, ph))).toBeLessThanOrEqual(TOL);
  await page.getByTestId('sink-heatmap').click({ position: await page.getByTestId('sink-heatmap').evaluate((el, [row, col]) => {
    const d = (el as HTMLElement).dataset;
    return { x: Number(d.x0) + (col + 0.5) * Number(d.cellWidth), y: Number(d.y0) + (row + 0.5) * Number(d.cellHeight) };
  }, [pl, ph]) });
  const pattern = page.getByTestId('pattern-view');
  await expect(pattern).toBeVisible({ timeout: 60_000 });
  await expect(pattern).toHaveAttribute('data-layer', String(pl));
  await expect(pattern).toHaveAttribute('data-head', String(ph));
  for (const [i, j] of [[0, 0], [5, 0], [10, 9], [T - 1, 0], [T - 1, T - 1]]) {
    const shown = parseShown(await page.getByTestId(`pattern-cell-${i}-${j}`).textContent());
    expect(Math.abs(shown - lens.attention(pl, ph, i, j)), `pattern L${pl}H${ph} [${i}, ${j}]`).toBeLessThanOrEqual(TOL);
  }
  await page.getByTestId('show-tables').uncheck();
  await hoverCell(page, 'pattern-heatmap', T - 1, 0);
  await page.screenshot({ path: `${SHOTS}/sinks-head-pattern.png`, fullPage: true });

  // Greedy generation of 32 tokens streams the golden continuation.
  await page.getByTestId('tab-generation').click();
  await page.getByTestId('max-new-tokens').fill(String(golden.greedy_ids.length));
  await page.getByTestId('temperature').fill('0');
  await page.getByTestId('generate').click();
  await expect(page.getByTestId('generated-token').first()).toBeVisible({ timeout: 120_000 });
  await expect(page.getByTestId('generation-output')).toHaveAttribute('data-done', 'true', { timeout: 120_000 });
  expect(await page.getByTestId('generated-text').textContent()).toBe(golden.continuation_text);
  const ids = await page.getByTestId('generated-token').evaluateAll((els) => els.map((e) => Number((e as HTMLElement).dataset.id)));
  expect(ids).toEqual(golden.greedy_ids);
  await expect(page.getByTestId('margin-curve').locator('circle')).toHaveCount(golden.greedy_ids.length);
  const [curvePng] = await Promise.all([page.waitForEvent('download'), page.getByTestId('generation-view').getByRole('button', { name: 'PNG 2×', exact: true }).click()]);
  expect(fs.readFileSync(await curvePng.path()).subarray(0, 4)).toEqual(Buffer.from([0x89, 0x50, 0x4e, 0x47]));
  await page.screenshot({ path: `${SHOTS}/generation.png`, fullPage: true });

  await page.getByTestId('tab-norms').click();
  await expect(page.getByTestId('norms-heatmap')).toBeVisible();
  await page.screenshot({ path: `${SHOTS}/residual-norms.png`, fullPage: true });
});

test('Cancel stops a long generation between tokens; the tokens so far are the greedy ones and the app stays usable', async ({ page }) => {
  const golden = referencePrompt(PROMPT);
  await page.goto('/');
  await expect(page.getByTestId('backend-badge')).toBeVisible({ timeout: 120_000 });
  await expect(page.getByTestId('progress')).toBeHidden({ timeout: 120_000 });
  await page.getByTestId('prompt').fill(PROMPT);
  await page.getByTestId('tab-generation').click();
  await page.getByTestId('max-new-tokens').fill('400');
  await page.getByTestId('generate').click();
  await expect(page.getByTestId('generated-token').nth(2)).toBeVisible({ timeout: 120_000 });
  await page.getByTestId('cancel-generate').click();
  await expect(page.getByTestId('generation-output')).toHaveAttribute('data-done', 'true', { timeout: 60_000 });
  await expect(page.getByTestId('generation-stop')).toContainText('cancelled');
  await expect(page.getByTestId('error-banner')).toBeHidden();
  const ids = await page.getByTestId('generated-token').evaluateAll((els) => els.map((e) => Number((e as HTMLElement).dataset.id)));
  expect(ids.length).toBeGreaterThanOrEqual(3);
  expect(ids.length).toBeLessThan(400);
  expect(ids.slice(0, golden.greedy_ids.length)).toEqual(golden.greedy_ids.slice(0, ids.length));
  await expect(page.getByTestId('analyse')).toBeEnabled();
  await expect(page.getByTestId('generate')).toBeEnabled();
});
