import { test, expect } from '@playwright/test';
import * as fs from 'node:fs';
import { settled } from './app_page';
import { save } from './export_files';
import { withMoeFixture } from './moe_fixture';

/**
 * Routing divergence in the Expert routes tab on mixtral-tiny: with a prompt B of the same token
 * count the divergence map appears (one row per sparse layer, JS within [0, ln 2], Jaccard within
 * [0, 1] in the JSON export; the numbers themselves are checked in tests/moe/route_divergence.test.ts);
 * a prompt B of another length is refused with the reason and the prompt is unchanged.
 */
const SHOTS = '.artifacts/screenshots';

test('mixtral-tiny: routing divergence from prompt B; a prompt B of another length is refused', async ({ page }) => {
  test.setTimeout(150_000);
  fs.mkdirSync(SHOTS, { recursive: true });
  await withMoeFixture(page, 'mixtral', async (load) => {
    await load();
    await page.getByTestId('prompt').fill('Once upon a time there');
    await page.getByTestId('tab-routes').click();
    await page.getByTestId('routes-prompt-b').fill('Twice upon a dog there');
    await page.getByTestId('run-routes').click();
    await settled(page);
    await expect(page.getByTestId('routes-divergence-map')).toBeVisible();
    const json = JSON.parse((await save(page, page.getByTestId('routes-view'), 'JSON')).bytes.toString('utf8')) as { tokens: string[]; divergence: { layer: number; jaccard: number[]; js: number[] }[] };
    expect(json.divergence.map((x) => x.layer)).toEqual([0, 1, 2]);
    for (const x of json.divergence) {
      expect(x.js).toHaveLength(json.tokens.length);
      for (const v of x.js) expect(v >= 0 && v <= Math.LN2).toBe(true);
      for (const v of x.jaccard) expect(v >= 0 && v <= 1).toBe(true);
    }
    expect(json.divergence.some((x) => x.js.some((v) => v > 1e-3))).toBe(true);
    await page.getByTestId('routes-divergence').scrollIntoViewIfNeeded();
    await page.screenshot({ path: `${SHOTS}/routes-divergence.png` });

    await page.getByTestId('routes-prompt-b').fill('Hi');
    await page.getByTestId('run-routes').click();
    await expect(page.getByTestId('error-banner')).toContainText(/prompt B has \d+ tokens, the prompt 13/, { timeout: 60_000 });
    await page.screenshot({ path: `${SHOTS}/routes-divergence-refused.png` });
    await expect(page.getByTestId('prompt')).toHaveValue('Once upon a time there');
  });
});
