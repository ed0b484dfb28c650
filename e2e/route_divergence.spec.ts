import { test, expect } from '@playwright/test';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { SHARED } from './golden';
import { open, settled } from './app_page';
import { save } from './export_files';

/**
 * Routing divergence in the Expert routes tab on mixtral-tiny: with a prompt B of the same token
 * count the divergence map appears (one row per sparse layer, JS within [0, ln 2], Jaccard within
 * [0, 1] in the JSON export; the numbers themselves are checked in tests/moe/route_divergence.test.ts);
 * a prompt B of another length is refused with the reason and the prompt is unchanged.
 */
const SOURCE = path.join(SHARED, 'fixtures-moe', 'mixtral-tiny');
const FILES = ['config.json', 'generation_config.json', 'model.safetensors', 'tokenizer.json', 'tokenizer_config.json'];
const SHOTS = '.artifacts/screenshots';

test('mixtral-tiny: routing divergence from prompt B; a prompt B of another length is refused', async ({ page }) => {
  test.setTimeout(150_000);
  fs.mkdirSync(SHOTS, { recursive: true });
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'branchpoint-moe-div-'));
  const folder = path.join(dir, 'mixtral-tiny');
  fs.mkdirSync(folder);
  for (const f of FILES) fs.copyFileSync(path.join(SOURCE, f), path.join(folder, f));
  try {
    await page.setViewportSize({ width: 1280, height: 800 });
    await open(page);
    await page.getByTestId('folder-input').setInputFiles(folder);
    await expect(page.getByTestId('model-info')).toContainText('mixtral-tiny', { timeout: 120_000 });
    await settled(page);
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
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
});
