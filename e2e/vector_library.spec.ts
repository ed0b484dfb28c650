import { test, expect } from '@playwright/test';
import { buildCaa, open, settled } from './app_page';

/** Issue #9: the vector library table fits its panel at 1280 px (no sideways scroll to reach the export buttons). */
test('at 1280×800 the vector library shows every column, export buttons included, without scrolling sideways', async ({ page }) => {
  await page.setViewportSize({ width: 1280, height: 800 });
  await open(page);
  await buildCaa(page);
  await expect(page.getByTestId('library-row-0')).toBeVisible();
  // Build pressed again with the same set, method and hook: the library keeps one row and says so.
  await page.getByTestId('build-vector').click();
  await settled(page);
  await expect(page.getByTestId('library-duplicate')).toContainText('is in the library already (row 1');
  await expect(page.getByTestId('vector-library').locator('tbody tr')).toHaveCount(1);
  const [scroll, client] = await page.getByTestId('vector-library').locator('xpath=..').evaluate((e) => [e.scrollWidth, e.clientWidth]);
  expect(scroll, 'library table width vs its panel').toBeLessThanOrEqual(client);
});
