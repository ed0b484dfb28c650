import { test, expect } from '@playwright/test';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { analysed, analyseWith, buildCaa, open, settled } from './app_page';
import { SHARED } from './golden';
import { hfToGguf } from '../tools/gguf_write';

const ONCE = { prompt: 'Once upon a time', good: ',', bad: ' there' };

test('Q8_0 weights from the load control: the model info names the storage and, on Measure, the logit error against float32, and Analyse works', async ({ page }) => {
  test.setTimeout(240_000);
  await open(page);
  // A float32 analysis and a branch trunk first: the fresh-user trial reloaded as CPU + Q8_0 after one,
  // and the float32 heatmap stayed on screen unmarked, the tree clickable but gone from the worker.
  await buildCaa(page); // (it sets its suggested prompt: the analysis below is of ONCE)
  await page.getByTestId('tab-margins').click();
  await analyseWith(page, ONCE);
  await page.getByTestId('tab-branches').click();
  await page.getByTestId('branch-max-new').fill('4');
  await page.getByTestId('branch-start').click();
  await expect(page.getByTestId('branch-caption')).toBeVisible({ timeout: 60_000 });
  // and a batch (the view's two-row default): its rows were not marked after the reload either
  await page.getByTestId('tab-batch').click();
  await page.getByTestId('run-batch').click();
  await expect(page.getByTestId('batch-status')).toContainText('2 of 2 prompts', { timeout: 60_000 });
  await expect(page.getByTestId('batch-stale')).toHaveCount(0);
  // and a dose–response sweep, whose points could still be loaded into the list after the reload
  await page.getByTestId('tab-dose').click();
  await page.getByTestId('sweep-vector').selectOption({ index: 1 });
  await page.getByTestId('sweep-layers').fill('1');
  await page.getByTestId('sweep-doses').fill('0,4');
  await page.getByTestId('run-sweep').click();
  await settled(page);
  await expect(page.getByTestId('sweep-stale')).toHaveCount(0);
  const loadedAs = await page.getByTestId('backend-badge').getAttribute('data-kind');
  // CPU + Q8_0, as the trial chose (its header went ragged and the logit-error line wrapped mid-formula).
  await page.getByTestId('backend-choice').selectOption('cpu');
  await page.getByTestId('weight-dtype').selectOption('q8_0');
  await page.getByTestId('load-local').click();
  const storage = page.getByTestId('weight-storage');
  await expect(storage).toHaveAttribute('data-dtype', 'q8_0', { timeout: 120_000 });
  await expect(storage).toContainText('Q8_0 linear weights');
  // One line under the badge, Measure included (trials saw it wrap raggedly): a long description gives way, whole in its title.
  const line = page.getByTestId('weight-storage-line');
  expect((await line.boundingBox())!.height, 'the weight-storage line does not wrap').toBeLessThan(30);
  await expect(line.locator('.weights-text')).toHaveAttribute('title', /embeddings, unembedding and norms float32/);
  // the tree went with the float32 model; the heatmap is marked as computed with it
  await expect(page.getByTestId('branch-caption')).toHaveCount(0);
  await page.getByTestId('tab-branches').click();
  await expect(page.getByTestId('branch-dropped')).toContainText('was cleared when stories260K · Q8_0 · CPU was loaded');
  await page.screenshot({ path: '.artifacts/screenshots/quant-reload-branches.png', fullPage: true });
  await page.getByTestId('tab-batch').click();
  await expect(page.getByTestId('batch-stale')).toHaveAttribute('data-stale', 'load');
  await expect(page.getByTestId('batch-stale-load')).toContainText('(stories260K · Q8_0 · CPU is loaded now)');
  await expect(page.getByTestId('batch-stale-figure')).toHaveText('Stale — run the batch again');
  await page.screenshot({ path: '.artifacts/screenshots/quant-reload-batch.png', fullPage: true });
  await page.getByTestId('tab-dose').click();
  await expect(page.getByTestId('sweep-status')).toHaveAttribute('data-stale', 'load');
  await expect(page.getByTestId('sweep-stale')).toHaveText('Stale — run the sweep again');
  await expect(page.getByTestId('sweep-stale-pick')).toContainText('cannot be loaded into the list');
  await page.locator('[data-testid="dose-margin-chart"] g.series circle').first().click();
  await expect(page.getByTestId('no-interventions')).toBeVisible();
  await expect(page.getByTestId('sweep-picked')).toHaveCount(0);
  await page.screenshot({ path: '.artifacts/screenshots/quant-reload-sweep.png', fullPage: true });
  await page.getByTestId('tab-margins').click();
  await expect(page.getByTestId('margin-status')).toHaveAttribute('data-stale', 'load');
  await expect(page.getByTestId('margin-status-load')).toContainText(`computed with stories260K · float32 · ${loadedAs === 'webgpu' ? 'WebGPU' : 'CPU'} (stories260K · Q8_0 · CPU is loaded now)`);
  await expect(page.getByTestId('margin-stale')).toBeVisible();
  await page.screenshot({ path: '.artifacts/screenshots/quant-reload-stale.png', fullPage: true });
  // the load did not run the float32 model: the error is measured when asked for
  await expect(storage).toContainText('not measured yet');
  await page.getByTestId('measure-logit-error').click();
  await expect(page.getByTestId('logit-error')).toBeVisible({ timeout: 120_000 });
  const err = Number(await page.getByTestId('logit-error').getAttribute('data-max-abs'));
  const lines = await page.getByTestId('logit-error').evaluate((el) => el.getBoundingClientRect().height / parseFloat(getComputedStyle(el).lineHeight));
  expect(lines, 'the logit-error line does not wrap').toBeLessThan(1.5);
  console.log(`shown: ${await storage.textContent()}`);
  // quantised for real (float32 agrees within 1e-4), and within the Q8_0 error of stories260K
  // measured against its references on the CPU (≤ 0.25, tests/integration/quant_weights.test.ts)
  expect(err).toBeGreaterThan(1e-3);
  expect(err).toBeLessThan(1);
  await page.getByTestId('analyse').click();
  await analysed(page);
  await expect(page.getByTestId('margin-status')).toBeHidden({ timeout: 120_000 });
  await page.getByTestId('model-status').screenshot({ path: '.artifacts/screenshots/quant-model-info.png' });
});

test('a folder holding model.gguf (Q4_0) and tokenizer.json opens: the model info names the GGUF storage, and Analyse works', async ({ page }) => {
  test.setTimeout(240_000);
  const src = path.join(SHARED, 'models', 'stories260K');
  const folder = path.join(fs.mkdtempSync(path.join(os.tmpdir(), 'branchpoint-gguf-')), 'stories260K-q4');
  fs.mkdirSync(folder);
  fs.writeFileSync(path.join(folder, 'model.gguf'), hfToGguf(src, 'q4_0'));
  for (const f of ['tokenizer.json', 'tokenizer_config.json']) fs.copyFileSync(path.join(src, f), path.join(folder, f));
  try {
    await open(page);
    await page.getByTestId('folder-input').setInputFiles(folder);
    const storage = page.getByTestId('weight-storage');
    await expect(storage).toHaveAttribute('data-dtype', 'q4_0', { timeout: 120_000 });
    // 5 layers × q, k, v, o, gate, up in Q4_0; down_proj (rows of 172, not whole blocks), norms and the embedding F32
    await expect(storage).toContainText('GGUF tensors');
    await expect(storage).toContainText('Q4_0 ×30');
    await expect(storage).toContainText('no float32 weights to compare with');
    await expect(page.getByTestId('model-info')).toContainText('5 layers');
    await analyseWith(page, ONCE);
  } finally {
    fs.rmSync(path.dirname(folder), { recursive: true, force: true });
  }
});
