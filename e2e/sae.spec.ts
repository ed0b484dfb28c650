import { test, expect } from '@playwright/test';
import { execFileSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { fileURLToPath } from 'node:url';
import { SHARED, STORIES, parseShown } from './golden';

/**
 * The SAE view as a user works it: pick the ReLU SAE folder of ../shared/saes, read the features of
 * the default prompt and futures, and check that every number shown (L0 and MSE per token, the
 * explained variance, the spliced margin, the ablation Δ of the top feature) equals what the
 * runner prints for the same model, SAE and prompt; open the top feature of the last token and
 * check its max-activating tokens against the runner's; then pin it, clamp it from the feature
 * panel, and see the clamp in the intervention list. Last, futures that open with the same two
 * tokens: the features are read again and the attributions at the decision point after them, as
 * the note says.
 */
const ROOT = path.join(path.dirname(fileURLToPath(import.meta.url)), '..');
const SAE = path.join(SHARED, 'saes', 'stories260K-blocks.2.hook_resid_post-relu');
const PROMPT = 'Lily and Tom went to the park. Lily gave the ball to';
const SHOTS = '.artifacts/screenshots';

test('SAE features: the view shows the runner\'s L0, MSE, explained variance, splice cost and ablation Δ, and a feature clamp can be placed', async ({ page }) => {
  // the feature the view will open: the top one at the last token in the golden reference.json
  const ref = JSON.parse(fs.readFileSync(path.join(SAE, 'reference.json'), 'utf8')) as { prompts: { key: string; positions: { top16_indices: number[] }[] }[] };
  const F = ref.prompts.find((p) => p.key === 'lily_tom_ball')!.positions.at(-1)!.top16_indices[0];
  const runner = JSON.parse(execFileSync(process.execPath, [path.join(ROOT, 'bin', 'branchpoint.mjs'), 'sae', '--model', STORIES, '--sae', SAE, '--prompt', PROMPT, '--good', ' Tom', '--bad', ' Lily', '--top-k', '8', '--pin', String(F)], { encoding: 'utf8' }));
  await page.goto('/index.html');
  await expect(page.getByTestId('model-info')).toContainText('stories260K', { timeout: 120_000 });
  await expect(page.getByTestId('progress')).toBeHidden({ timeout: 120_000 });
  await page.getByTestId('tab-sae').click();
  await page.getByTestId('sae-folder-input').setInputFiles(SAE);
  await expect(page.getByTestId('sae-info')).toContainText('standard at blocks.2.hook_resid_post · d_in 64 · d_sae 256', { timeout: 60_000 });
  await page.getByTestId('sae-read').click();
  await expect(page.getByTestId('sae-token-table')).toBeVisible({ timeout: 120_000 });
  await expect(page.getByTestId('error-banner')).toBeHidden();

  const l0 = await page.getByTestId('sae-l0').allTextContents();
  expect(l0.map(Number)).toEqual(runner.l0);
  const mse = (await page.getByTestId('sae-mse').allTextContents()).map(Number);
  mse.forEach((m, t) => expect(Math.abs(m - runner.mse[t])).toBeLessThanOrEqual(1e-4));
  expect(Math.abs(parseShown(await page.getByTestId('sae-ev').textContent()) - runner.explained_variance)).toBeLessThanOrEqual(1e-3);
  expect(Math.abs(parseShown(await page.getByTestId('sae-spliced').textContent()) - runner.margin.spliced)).toBeLessThanOrEqual(2e-3);
  const top = runner.margin.attributions[0];
  const row = page.getByTestId('sae-attribution-row').first();
  await expect(row).toHaveAttribute('data-feature', String(top.feature));
  expect(Math.abs(parseShown(await row.getByTestId('sae-ablation').textContent()) - top.ablation_delta)).toBeLessThanOrEqual(2e-3);
  // Rows past the ablated top ones say their ablation Δ was not measured, and why; the splice change is named by its sign.
  const unmeasured = runner.margin.attributions.filter((a: { ablation_delta?: number | null }) => a.ablation_delta === undefined || a.ablation_delta === null).length;
  await expect(page.getByTestId('sae-ablation').filter({ hasText: 'not measured' })).toHaveCount(unmeasured);
  if (unmeasured) await expect(page.getByTestId('sae-ablation-note')).toContainText(`top ${runner.margin.attributions.length - unmeasured} features by |DLA|`);
  await expect(page.getByTestId('sae-summary')).toContainText(runner.margin.spliced >= runner.margin.clean ? 'splicing the SAE in raises the margin' : 'splicing the SAE in lowers the margin');
  // the first chip of the last token is the runner's top feature there
  const lastChips = page.getByTestId('sae-token-row').last().getByTestId('sae-chip');
  await expect(lastChips.first()).toHaveAttribute('data-feature', String(F));

  await lastChips.first().click();
  await expect(page.getByTestId('sae-feature')).toBeVisible({ timeout: 60_000 });
  await expect(page.getByTestId('sae-feature-lens')).toContainText('Promotes');
  // the feature's max-activating tokens in the prompt: the runner's, in its order, with its values
  const maxChips = page.getByTestId('sae-max-token');
  const want = runner.max_activating[F] as { positions: number[]; values: number[] };
  expect(want.positions.length).toBeGreaterThan(0);
  expect((await maxChips.evaluateAll((els) => els.map((el) => Number(el.getAttribute('data-position')))))).toEqual(want.positions);
  const shownValues = (await maxChips.allTextContents()).map((t) => parseShown(t.split(' ').at(-1)!));
  shownValues.forEach((v, k) => expect(Math.abs(v - want.values[k])).toBeLessThanOrEqual(1e-3));
  await page.getByTestId('sae-pin').click();
  await expect(page.getByTestId('sae-heatmap')).toBeVisible({ timeout: 60_000 });
  await page.getByTestId('sae-clamp-value').fill('5');
  await page.getByTestId('sae-clamp').click();
  await expect(page.getByTestId('intervention-1')).toContainText(`sae_clamp clamp to c = 5 blocks.2.hook_resid_post`);
  await expect(page.getByTestId('intervention-1')).toContainText(`SAE feature ${F}`);
  // feedback beside the buttons (the list is far up the page): what was added, as #n
  await expect(page.getByTestId('sae-placed')).toContainText(`Added #1: clamp feature ${F} to c = 5`);
  await expect(page.getByTestId('sae-placed')).toBeInViewport();
  await page.getByTestId('sae-steer').click();
  await expect(page.getByTestId('sae-placed')).toContainText(`Added #2: steer along W_dec[${F}], α = 4`);
  await expect(page.getByTestId('intervention-2')).toContainText(`SAE feature ${F}`);
  await page.screenshot({ path: `${SHOTS}/sae-placed-viewport.png` });
  await page.getByTestId('intervention-2-delete').click();
  await page.screenshot({ path: `${SHOTS}/sae-view.png`, fullPage: true });
  // the clamp runs in an analysis like any intervention
  await page.getByTestId('analyse').click();
  await expect(page.getByTestId('progress')).toBeHidden({ timeout: 120_000 });
  await expect(page.getByTestId('error-banner')).toBeHidden();
  await expect(page.getByTestId('sae-shared-prefix')).toBeHidden();
  await expect(page.getByTestId('sae-attribution-head')).toContainText('at the decision point (the last prompt token)');

  // futures with a shared prefix: the prompt is read with " her friend" after it and the margin where the futures differ
  await page.getByTestId('good-future').fill(' her friend Tom');
  await page.getByTestId('bad-future').fill(' her friend Lily');
  await page.getByTestId('sae-read').click();
  await expect(page.getByTestId('sae-shared-prefix')).toContainText('decision point after the shared prefix ` her friend`, 2 tokens: the attributions read the first tokens where the futures differ, “·T” vs “·Lily”', { timeout: 120_000 });
  await expect(page.getByTestId('sae-attribution-head')).toHaveText('Which features carry the margin “ her friend Tom” vs “ her friend Lily” at the decision point (after the shared prefix, 2 tokens)');
  await expect(page.getByTestId('progress')).toBeHidden({ timeout: 120_000 });
  await expect(page.getByTestId('sae-token-row')).toHaveCount(runner.l0.length + 2);
  // the spliced margin and the top feature's ablation Δ, measured at the decision point (parseShown throws on a non-number)
  expect(Math.abs(parseShown(await page.getByTestId('sae-spliced').textContent()) - runner.margin.spliced), 'the spliced margin moved').toBeGreaterThan(1e-3);
  parseShown(await page.getByTestId('sae-ablation').first().textContent());
  await page.getByTestId('sae-attribution').scrollIntoViewIfNeeded();
  await page.screenshot({ path: `${SHOTS}/sae-shared-prefix.png` });
});
