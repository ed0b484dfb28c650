import { test, expect } from '@playwright/test';
import * as fs from 'node:fs';
import { open, settled } from './app_page';

/**
 * All heads at once (issue 29): in the Attention sinks view, every head's pattern of one layer as
 * small multiples; pointing at a cell links its query and key tokens and outlines the same cell in
 * every head; clicking a head enlarges it in the one-head pattern, whose numbers are that head's.
 * (The numbers themselves: tests/ui/head_patterns.test.ts against the golden attn_probs.)
 */
const SHOTS = '.artifacts/screenshots';
test.beforeAll(() => fs.mkdirSync(SHOTS, { recursive: true }));

test('All heads: every head of L1 drawn, hover links query and key tokens in every head, click enlarges the head', async ({ page }) => {
  await page.setViewportSize({ width: 1280, height: 800 });
  await open(page);
  await page.getByTestId('analyse').click();
  await settled(page);
  await page.getByTestId('tab-sinks').click();
  await page.getByTestId('all-heads-layer').selectOption('1');
  await page.getByTestId('all-heads-show').click();
  await settled(page);
  const grid = page.getByTestId('head-grid');
  await expect(grid.locator('canvas')).toHaveCount(8); // stories260K: 8 heads
  const T = await page.getByTestId('all-heads-tokens').locator('li').count();
  const tile = page.getByTestId('head-tile-3');
  const px = Number(await tile.getAttribute('data-px'));
  const [q, k] = [T - 1, 1];
  await tile.hover({ position: { x: (k + 0.5) * px, y: (q + 0.5) * px } });
  await expect(page.getByTestId('all-heads-hover')).toContainText(`query ${q} `);
  await expect(page.getByTestId('all-heads-hover')).toContainText(`key ${k} `);
  const tokens = page.getByTestId('all-heads-tokens').locator('li');
  await expect(tokens.nth(q)).toHaveAttribute('data-role', 'query');
  await expect(tokens.nth(k)).toHaveAttribute('data-role', 'key');
  // Every head reads out the same cell.
  for (let h = 0; h < 8; h++) await expect(page.getByTestId(`head-tile-value-${h}`)).toHaveText(/^ \d\.\d{3}$/);
  const v3 = (await page.getByTestId('head-tile-value-3').textContent())!.trim();
  await page.screenshot({ path: `${SHOTS}/all-heads-1280.png`, fullPage: true });
  await tile.click({ position: { x: (k + 0.5) * px, y: (q + 0.5) * px } });
  const one = page.getByTestId('pattern-view');
  await expect(one).toHaveAttribute('data-layer', '1');
  await expect(one).toHaveAttribute('data-head', '3');
  // The enlarged head reads the same value at (q, k).
  const hm = page.getByTestId('pattern-heatmap');
  const g = await hm.evaluate((el) => ({ ...(el as HTMLElement).dataset }));
  await hm.hover({ position: { x: Number(g.x0) + (k + 0.5) * Number(g.cellWidth), y: Number(g.y0) + (q + 0.5) * Number(g.cellHeight) } });
  await expect(page.getByTestId('pattern-readout-value')).toHaveText(/^\d\.\d{4}$/);
  const v4 = Number(await page.getByTestId('pattern-readout-value').textContent());
  expect(Math.abs(v4 - Number(v3)), `A[${q}, ${k}] in the tile (${v3}) and enlarged (${v4})`).toBeLessThanOrEqual(0.0005 + 1e-9);
  await one.screenshot({ path: `${SHOTS}/all-heads-enlarged-1280.png` });
});
