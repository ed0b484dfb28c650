import { test, expect, type Page } from '@playwright/test';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { open, analysed } from './app_page';
import { STORIES, readTensors, referencePrompt } from './golden';
import { readNpy } from './export_files';

/**
 * Any hook, inspectable: the activations view captures a hook for the analysed prompt and saves it as
 * .npy; the files read back (parsed here, independently of the app's writer) to the golden
 * resid_post of stories260K (reference/README.md: resid_post [n_layers, n_positions, d_model]).
 */
const PROMPT = 'Lily and Tom went to the park. Lily gave the ball to';

async function save(page: Page, testId: string): Promise<Buffer> {
  const [dl] = await Promise.all([page.waitForEvent('download'), page.getByTestId(testId).click()]);
  return fs.readFileSync(await dl.path());
}

test('a captured hook and the whole residual stream save as .npy that read back to the golden resid_post', async ({ page }) => {
  const golden = referencePrompt(PROMPT);
  const ref = readTensors(path.join(STORIES, 'reference', `${golden.name}.safetensors`)).get('resid_post')!;
  const [L, TP, D] = ref.shape;
  const T = golden.n_prompt;
  /** Largest |npy[l, t, :] − resid_post[l, t, :]| over the prompt positions. */
  const worst = (data: Float32Array, layers: number[]) => {
    let w = 0;
    layers.forEach((l, i) => {
      for (let t = 0; t < T; t++) for (let d = 0; d < D; d++) w = Math.max(w, Math.abs(data[(i * T + t) * D + d] - ref.data[(l * TP + t) * D + d]));
    });
    return w;
  };

  await page.setViewportSize({ width: 1280, height: 800 });
  await open(page);
  await page.getByTestId('prompt').fill(PROMPT);
  await page.getByTestId('analyse').click();
  await analysed(page);
  await page.getByTestId('tab-activations').click();
  await page.getByTestId('activations-hook').selectOption('blocks.2.hook_resid_post');
  await page.getByTestId('activations-capture').click();
  await expect(page.getByTestId('activations-heatmap')).toBeVisible({ timeout: 120_000 });
  await expect(page.getByTestId('activations-shape')).toContainText(`blocks.2.hook_resid_post: [${T} tokens, ${D} values]`);
  fs.mkdirSync('.artifacts/screenshots', { recursive: true });
  await page.getByTestId('activations-view').screenshot({ path: '.artifacts/screenshots/activations-1280x800.png' });

  const one = readNpy(await save(page, 'activations-npy'));
  expect(one.shape).toEqual([T, D]);
  const w2 = worst(one.data, [2]);
  console.log(`blocks.2.hook_resid_post .npy vs golden: max |Δ| = ${w2.toExponential(2)}`);
  expect(w2).toBeLessThanOrEqual(1e-3);

  // The CSV of the same capture holds the same numbers.
  const [csvDl] = await Promise.all([page.waitForEvent('download'), page.getByTestId('activations-view').getByRole('button', { name: 'CSV', exact: true }).click()]);
  const csv = fs.readFileSync(await csvDl.path(), 'utf8').trim().split(/\r?\n/).slice(1).map((line) => line.split(',').slice(1).map(Number));
  expect(csv).toHaveLength(T);
  expect(Math.max(...csv.flatMap((row, t) => row.map((v, d) => Math.abs(v - one.data[t * D + d]))))).toBeLessThanOrEqual(1e-6);

  const all = readNpy(await save(page, 'activations-resid-npy'));
  expect(all.shape).toEqual([L, T, D]);
  const wAll = worst(all.data, Array.from({ length: L }, (_, l) => l));
  console.log(`resid_post [${L}, ${T}, ${D}] .npy vs golden: max |Δ| = ${wAll.toExponential(2)}`);
  expect(wAll).toBeLessThanOrEqual(1e-3);
});
