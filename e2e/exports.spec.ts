import { test, expect } from '@playwright/test';
import * as fs from 'node:fs';
import { parseShown } from './golden';
import { parseCsv, parseSvg, pngSize, save } from './export_files';
import { analyseWith } from './app_page';

/**
 * Print-quality exports as a user saves them: each view's SVG parses and holds the plotted values,
 * its PNGs are 2× and 4× the figure's size, and its CSV round-trips to the numbers on screen.
 */
const PROMPT = 'The little girl saw a dog. Then';
const SHOTS = '.artifacts/screenshots';

test.beforeAll(() => fs.mkdirSync(SHOTS, { recursive: true }));

test('every view saves SVG with its values, PNG at 2× and 4×, and CSV equal to the numbers on screen', async ({ page }) => {
  page.on('pageerror', (e) => console.log(`[page error] ${e.message}`));
  await page.goto('/');
  await expect(page.getByTestId('model-info')).toContainText('stories260K', { timeout: 120_000 });
  await analyseWith(page, { prompt: PROMPT, good: ' he', bad: ' she' });
  await page.getByTestId('show-tables').check();

  // Margin heatmap: one rect per cell holding its value; the CSV equals the on-screen table; PNG sizes.
  const view = page.getByTestId('margin-view');
  const svg = (await save(page, view, 'SVG')).bytes.toString('utf8');
  fs.writeFileSync(`${SHOTS}/export-margins.svg`, svg);
  const parsed = await parseSvg(page, svg, 'rect.cell', ['data-row', 'data-col', 'data-value']);
  expect(parsed.error).toBeNull();
  expect(parsed.images, 'vector only: no embedded bitmaps').toBe(0);
  expect(parsed.texts.join(' ')).toContain('Logit-lens margin');
  expect(parsed.texts.join(' ')).toContain('favours');
  const csv = parseCsv((await save(page, view, 'CSV')).bytes.toString('utf8'));
  expect(csv[0][0]).toMatch(/Δ \(nats\)/);
  const T = csv[0].length - 1, L1 = csv.length - 1;
  expect(parsed.items).toHaveLength(L1 * T);
  for (const [row, col, value] of parsed.items) {
    const [l, t] = [Number(row), Number(col)];
    const fromCsv = Number(csv[1 + l][1 + t]);
    expect(Math.abs(Number(value) - fromCsv), `SVG cell ${l},${t}`).toBeLessThanOrEqual(1e-5 * Math.max(1, Math.abs(fromCsv)));
    const shown = parseShown(await page.getByTestId(`margin-cell-${l}-${t}`).textContent());
    expect(Math.abs(fromCsv - shown), `CSV cell ${l},${t} vs the table on screen`).toBeLessThanOrEqual(5e-5);
  }
  for (const scale of [2, 4]) {
    const { bytes, file } = await save(page, view, `PNG ${scale}×`);
    expect(file).toMatch(new RegExp(`@${scale}x\\.png$`));
    expect(pngSize(bytes)).toEqual({ width: Math.ceil(parsed.width * scale), height: Math.ceil(parsed.height * scale) });
    if (scale === 2) fs.writeFileSync(`${SHOTS}/export-margins@2x.png`, bytes);
  }

  // Sinks: the α₀ grid and the sink-rate bar chart, both vector, in one SVG.
  await page.getByTestId('tab-sinks').click();
  const sinks = page.getByTestId('sink-view');
  const sinkSvg = (await save(page, sinks, 'SVG')).bytes.toString('utf8');
  fs.writeFileSync(`${SHOTS}/export-sinks.svg`, sinkSvg);
  const sp = await parseSvg(page, sinkSvg, 'rect.cell', ['data-row', 'data-col', 'data-value']);
  expect(sp.error).toBeNull();
  for (const [row, col, value] of sp.items) {
    const shown = parseShown(await page.getByTestId(`alpha0-cell-${row}-${col}`).textContent());
    expect(Math.abs(Number(value) - shown)).toBeLessThanOrEqual(5e-5);
  }
  const rates = await page.getByTestId('sink-rate-table').locator('td').allTextContents();
  for (const r of rates) expect(sp.texts, `sink rate ${r} printed on its bar`).toContain(Number(r).toFixed(2));
  const sinkPng = pngSize((await save(page, sinks, 'PNG 2×')).bytes);
  expect(sinkPng).toEqual({ width: Math.ceil(sp.width * 2), height: Math.ceil(sp.height * 2) });

  // Generation: the margin curve's points carry the CSV's margins.
  await page.getByTestId('tab-generation').click();
  await page.getByTestId('max-new-tokens').fill('8');
  await page.getByTestId('generate').click();
  const gen = page.getByTestId('generation-view');
  await expect(gen.getByRole('button', { name: 'SVG', exact: true })).toBeVisible({ timeout: 120_000 });
  await expect(page.getByTestId('progress')).toBeHidden({ timeout: 120_000 });
  const gsvg = (await save(page, gen, 'SVG')).bytes.toString('utf8');
  const gp = await parseSvg(page, gsvg, 'circle', ['data-x', 'data-y']);
  expect(gp.error).toBeNull();
  const gcsv = parseCsv((await save(page, gen, 'CSV')).bytes.toString('utf8'));
  expect(gcsv[0][4]).toContain('margin Δ');
  const margins = gcsv.slice(1).map((r) => Number(r[4]));
  expect(gp.items.map(([, y]) => Number(y))).toEqual(margins);
  const gpng = pngSize((await save(page, gen, 'PNG 4×')).bytes);
  expect(gpng).toEqual({ width: Math.ceil(gp.width * 4), height: Math.ceil(gp.height * 4) });
});
