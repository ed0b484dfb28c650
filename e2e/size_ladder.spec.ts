import { test, expect } from '@playwright/test';
import { open } from './app_page';

test('Will it fit: the load control shows the size ladder of the chosen model per storage, from headers, without loading it', async ({ page }) => {
  await open(page);
  await page.getByTestId('size-ladder').locator('summary').click();
  await page.getByTestId('fit-context').fill('256');
  await page.getByTestId('fit-check').click();
  const table = page.getByTestId('fit-table');
  await expect(table).toBeVisible({ timeout: 30_000 });
  for (const s of ['f32', 'f16', 'q8_0', 'q4_0']) await expect(page.getByTestId(`fit-row-${s}`)).toHaveAttribute('data-fits', 'true');
  // the totals fall down the ladder: float32 > binary16 > Q8_0 > Q4_0 (stories260K's tied embedding stays float32 in the quantised rungs)
  const totals = await Promise.all(['f32', 'f16', 'q8_0', 'q4_0'].map(async (s) => Number(await page.getByTestId(`fit-row-${s}`).getAttribute('data-total'))));
  for (let i = 1; i < 4; i++) expect(totals[i]).toBeLessThan(totals[i - 1]);
  await expect(table.locator('caption')).toContainText('KV cache for 256 tokens');
  await page.setViewportSize({ width: 1280, height: 800 });
  await page.getByTestId('size-ladder').screenshot({ path: 'test-results/size-ladder.png' });
});
