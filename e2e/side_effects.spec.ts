import { test, expect } from '@playwright/test';
import { SHARED } from './golden';
import { buildCaa, open, settled } from './app_page';
import { parseCsv, save, savedFigure } from './export_files';
import { runCli } from '../tests/cli_run';

/**
 * The Side effects view on the production build (WebGPU on SwiftShader): the happy/sad CAA vector
 * at block 3, reach on the happy/sad set and side effects on the shipped control stories over four
 * doses. The view says the window plainly and shades it; its JSON export equals the command-line
 * runner (CPU) run with the same exported vector, dose by dose; CSV and the figure export.
 */
const SHOTS = '.artifacts/screenshots';

test('Side effects: the happy/sad CAA vector\'s reach, KL and Δll per dose, the window shaded and said, exports equal to the runner', async ({ page }) => {
  await page.setViewportSize({ width: 1280, height: 800 });
  await open(page);
  await buildCaa(page, 'blocks.3.hook_resid_post');
  await page.getByTestId('tab-side-effects').click();
  const view = page.getByTestId('side-effects-view');
  await expect(view).toContainText('(defaults: R = 1 nat, KL ≤ 0.1 nats, a log-likelihood drop ≤ 0.1 nats per token, other sets moved ≤ 0.5 nats)');
  await page.getByTestId('side-layers').fill('3');
  await page.getByTestId('side-doses').fill('nope');
  await expect(page.getByTestId('side-form-error')).toHaveText('doses: "nope" is not a number');
  await expect(page.getByTestId('run-side-effects')).toBeDisabled();
  await page.getByTestId('side-doses').fill('0, 1, 2, 4');
  await page.getByTestId('side-kl').fill('-0.1');
  await expect(page.getByTestId('side-form-error')).toContainText('the KL budget -0.1 is negative: a budget is the most a side effect may cost');
  await expect(page.getByTestId('run-side-effects')).toBeDisabled();
  await page.getByTestId('side-kl').fill('0.1');
  await expect(page.getByTestId('side-futures')).toContainText('32 prompts');
  await page.getByTestId('run-side-effects').click();
  await expect(page.getByTestId('side-caption')).toBeVisible({ timeout: 120_000 });
  await settled(page);
  const said = page.getByTestId('side-window-0');
  await page.getByTestId('side-chart-0').scrollIntoViewIfNeeded();
  await page.screenshot({ path: `${SHOTS}/side-effects-1280x800.png` });
  await page.screenshot({ path: `${SHOTS}/side-effects-full.png`, fullPage: true });

  const json = JSON.parse((await save(page, view, 'JSON')).bytes.toString('utf8')) as {
    doses: number[]; reach: { mean: number }[][]; kl: number[][]; deltaLl: number[][]; window: ([number, number] | null)[]; template: { vector: number[] };
  };
  expect(json.doses).toEqual([0, 1, 2, 4]);
  const cli = await runCli(['side-effects', '--model', `${SHARED}/models/stories260K`, '--intervention', JSON.stringify({ hook: 'blocks.{l}.hook_resid_post', type: 'add', vector: json.template.vector, alpha: 1 }),
    '--layers', '3', '--set', 'public/steering/happy_sad.json', '--control', 'public/control/stories.json', '--doses', '0,1,2,4']);
  expect(cli.code, cli.err).toBe(0);
  const ref = JSON.parse(cli.out) as { reach: number[][]; kl: number[][]; delta_ll: number[][]; window: ([number, number] | null)[] };
  json.doses.forEach((_, d) => {
    expect(Math.abs(json.reach[0][d].mean - ref.reach[0][d]), `reach at dose ${d}`).toBeLessThan(1e-3);
    expect(Math.abs(json.kl[0][d] - ref.kl[0][d]), `KL at dose ${d}`).toBeLessThan(1e-3);
    expect(Math.abs(json.deltaLl[0][d] - ref.delta_ll[0][d]), `Δll at dose ${d}`).toBeLessThan(1e-3);
  });
  expect(json.window).toEqual(ref.window);
  const w = ref.window[0];
  await expect(said).toHaveAttribute('data-window', JSON.stringify(w));
  await expect(said).toHaveText(w ? `Operating window at L3: α from ${w[0]} to ${w[1]}.` : /Operating window at L3: empty: /);
  const band = page.getByTestId('side-chart-0').locator('g.x-band');
  await expect(band).toHaveCount(w ? 1 : 0);

  const csv = parseCsv((await save(page, view, 'CSV')).bytes.toString('utf8'));
  expect(csv[0].slice(0, 3)).toEqual(['hook', 'dose alpha', 'reach: mean Δ change (nats)']);
  expect(csv.slice(1).filter((r) => r.length > 1)).toHaveLength(4);
  expect(Number(csv[2][5])).toBeCloseTo(ref.kl[0][1], 3);
  const fig = await savedFigure(page, view, 'side-effects', 'g.x-band', ['data-from', 'data-to'], { shots: SHOTS });
  expect(fig.items).toEqual(w ? [[String(w[0]), String(w[1])]] : []);
  expect(fig.texts.join(' ')).toContain('operating window');
});
