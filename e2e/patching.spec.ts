import { test, expect } from '@playwright/test';
import * as fs from 'node:fs';
import { STORIES, referencePrompt } from './golden';
import { CpuBackend } from '../workers/engine/backend/cpu';
import { Engine } from '../workers/engine/engine';
import { NodeFiles } from '../workers/engine/io/node_files';
import { logSoftmaxCpu } from '../workers/engine/ops/logits.cpu';
import { patchingGrid, type PatchingResult } from '../workers/engine/studies/patching';
import { attributionPatching } from '../workers/engine/studies/atp';
import { open, settled } from './app_page';

/**
 * The Lily/Tom name-swap patching heatmap through the UI on the production build (WebGPU on
 * SwiftShader): the clean margin equals the golden logits' margin, and the recovery grid equals the
 * engine's grid computed here in Node on the CPU backend. A click opens that patch as an intervention.
 * Attribution patching beside it: Spearman's ρ and the flagged cells equal the engine's in Node.
 */
const CLEAN = 'Lily and Tom went to the park. Lily gave the ball to';
const CORRUPT = 'Tom and Lily went to the park. Lily gave the ball to';
const SHOTS = '.artifacts/screenshots';
const TOL = 2e-3;
let want: PatchingResult;
let goldenClean: number;

test.beforeAll(async () => {
  fs.mkdirSync(SHOTS, { recursive: true });
  const e = await Engine.load(new NodeFiles(STORIES), new CpuBackend());
  try {
    want = await patchingGrid(e, { clean: CLEAN, corrupt: CORRUPT, good: { text: ' Tom' }, bad: { text: ' Lily' }, hook: 'resid_pre' });
  } finally {
    e.dispose();
  }
  const g = referencePrompt(CLEAN) as unknown as { last_prompt_position_logits: number[] };
  const lp = logSoftmaxCpu(Float32Array.from(g.last_prompt_position_logits), 512);
  goldenClean = lp[want.good.firstIds[0]] - lp[want.bad.firstIds[0]];
});

const num = (s: string | null) => Number((s ?? '').replace('−', '-').replace('+', ''));

test('Lily/Tom name swap: the resid_pre recovery heatmap is computed and shown, equals the engine’s, and a cell opens as a patch intervention', async ({ page }) => {
  page.on('pageerror', (e) => console.log(`[page error] ${e.message}`));
  await page.setViewportSize({ width: 1280, height: 900 });
  await page.goto('/');
  await expect(page.getByTestId('model-info')).toContainText('stories260K', { timeout: 120_000 });
  await settled(page);
  await page.getByTestId('tab-patching').click();
  await expect(page.getByTestId('patching-clean')).toHaveValue(CLEAN);
  // The default corruption replaces " Tom" (lib/patching_prompts.ts: a large Δ_clean − Δ_corrupt); the name swap is typed below.
  await expect(page.getByTestId('patching-corrupt')).toHaveValue('Lily and dad went to the park. Lily gave the ball to');
  await expect(page.getByTestId('patching-lengths')).toHaveAttribute('data-corrupt', '21');

  // A corruption of another length is refused before running, naming both lengths.
  await page.getByTestId('patching-corrupt').fill('Lily and Tom went to the park. Tom gave the ball to');
  await expect(page.getByTestId('patching-lengths')).toContainText('The clean prompt has 21 tokens and the corrupted prompt 22');
  await expect(page.getByTestId('run-patching')).toBeDisabled();
  await page.getByTestId('patching-corrupt').fill(CORRUPT);
  await expect(page.getByTestId('patching-lengths')).toContainText('Both prompts have 21 tokens');

  await page.getByTestId('run-patching').click();
  await expect(page.getByTestId('progress-detail')).toContainText('patched runs', { timeout: 60_000 });
  await settled(page);
  const caption = page.getByTestId('patching-caption');
  await expect(caption).toHaveAttribute('data-direction', 'denoise');
  expect(Math.abs(num(await page.getByTestId('patching-clean-margin').textContent()) - goldenClean)).toBeLessThan(TOL);
  expect(Math.abs(num(await page.getByTestId('patching-corrupt-margin').textContent()) - want.corruptMargin)).toBeLessThan(TOL);
  // The name swap barely moves the margin on stories260K: the small-denominator warning states it and the threshold.
  const denominator = page.getByTestId('patching-denominator');
  await expect(denominator).toContainText('below the 0.5 nats');
  expect(Math.abs(Number(await denominator.getAttribute('data-denominator')) - (want.cleanMargin - want.corruptMargin))).toBeLessThan(TOL);

  await page.getByTestId('show-tables').check();
  const C = want.nCols;
  for (let l = 0; l < want.nLayers; l++) {
    for (const c of [0, 1, 3, 13, C - 1]) {
      const got = num(await page.getByTestId(`patching-cell-${l}-${c}`).textContent());
      expect(Math.abs(got - want.recovery[l * C + c]), `layer ${l}, position ${c}`).toBeLessThan(TOL * 20);
    }
    expect(Math.abs(num(await page.getByTestId(`patching-cell-${l}-${C}`).textContent()) - want.layerRecovery[l])).toBeLessThan(TOL * 20);
  }
  // Every position of layer 0 patched: the clean run again (r = 1).
  expect(Math.abs(num(await page.getByTestId(`patching-cell-0-${C}`).textContent()) - 1)).toBeLessThan(1e-3);
  await page.getByTestId('show-tables').uncheck();
  const over = await page.evaluate(() => document.documentElement.scrollWidth - document.documentElement.clientWidth);
  expect(over).toBeLessThanOrEqual(0);
  await page.screenshot({ path: `${SHOTS}/patching-lily-tom.png`, fullPage: true });

  // Click the cell with the largest recovery at the last layer: it becomes a patch intervention on the corrupted prompt.
  let best = 0;
  for (let c = 0; c < C; c++) if (want.recovery[4 * C + c] > want.recovery[4 * C + best]) best = c;
  const map = page.getByTestId('patching-heatmap');
  const g = await map.evaluate((el) => ({ ...(el as HTMLElement).dataset }));
  expect(g.colIndices!.split(' ').at(-1), 'the whole-layer column is headed "all", not a position index').toBe('all');
  const at = { x: Number(g.x0) + (best + 0.5) * Number(g.cellWidth), y: Number(g.y0) + (Number(g.rows) - 1 - 4 + 0.5) * Number(g.cellHeight) };
  await map.hover({ position: at });
  await expect(page.getByTestId('patching-readout')).toHaveAttribute('data-col', String(best));
  await map.click({ position: at });
  await expect(page.getByTestId('patching-opened')).toContainText(`patch blocks.4.hook_resid_pre (position ${best}) from the clean prompt`);
  await expect(page.getByTestId('prompt')).toHaveValue(CORRUPT);
  await expect(page.getByTestId('patching-clean')).toHaveValue(CLEAN);
  await expect(page.getByTestId('editor-hook')).toHaveValue('blocks.4.hook_resid_pre');
  await page.screenshot({ path: `${SHOTS}/patching-opened.png`, fullPage: true });
});

test('an experiment with another prompt: the Patching view starts from it (the corrupted prompt to write), README’s pair one click away', async ({ page }) => {
  await page.setViewportSize({ width: 1280, height: 900 });
  await open(page);
  await page.getByTestId('prompt').fill('The little girl felt very');
  await page.getByTestId('tab-patching').click();
  await expect(page.getByTestId('patching-clean')).toHaveValue('The little girl felt very');
  await expect(page.getByTestId('patching-corrupt')).toHaveValue('The little girl felt very');
  await expect(page.getByTestId('patching-corrupt-needed')).toContainText('still a copy of the clean one');
  await expect(page.getByTestId('run-patching')).toBeDisabled();
  await page.screenshot({ path: `${SHOTS}/patching-follows-experiment.png`, fullPage: true });
  // futures left at other values (the README's steering step): the example sets its own, and says so
  await page.getByTestId('good-future').fill(' happy');
  await page.getByTestId('bad-future').fill(' sad');
  await expect(page.getByTestId('view-interventions')).toContainText('Runs without the interventions of the list');
  await page.getByTestId('patching-example').click();
  await expect(page.getByTestId('good-future')).toHaveValue(' Tom');
  await expect(page.getByTestId('bad-future')).toHaveValue(' Lily');
  await expect(page.getByTestId('patching-example-note')).toContainText('futures set to “ Tom” vs “ Lily” (they were “ happy” vs “ sad”)');
  await expect(page.getByTestId('patching-clean')).toHaveValue(CLEAN);
  await expect(page.getByTestId('patching-corrupt')).toHaveValue('Lily and dad went to the park. Lily gave the ball to');
  await expect(page.getByTestId('patching-corrupt-needed')).toBeHidden();
  await expect(page.getByTestId('run-patching')).toBeEnabled();
});

test('AtP beside exact: the resid_pre estimate with its rank correlation and flagged cells, plain and with AtP*’s attention fix, as the engine computes them', async ({ page }) => {
  const e = await Engine.load(new NodeFiles(STORIES), new CpuBackend());
  const pair = { clean: CLEAN, corrupt: 'Lily and dad went to the park. Lily gave the ball to', good: { text: ' Tom' }, bad: { text: ' Lily' }, hook: 'resid_pre' as const, compareExact: true, threshold: 0.1 };
  let plain, star;
  try {
    plain = await attributionPatching(e, pair);
    star = await attributionPatching(e, { ...pair, correction: 'qk' });
  } finally {
    e.dispose();
  }
  await page.setViewportSize({ width: 1280, height: 800 });
  await open(page);
  await page.getByTestId('tab-patching').click();
  await page.getByTestId('patching-example').click();
  await page.getByTestId('run-patching').click();
  await expect(page.getByTestId('atp-panel')).toBeVisible({ timeout: 60_000 });
  await settled(page);
  for (const [want, fix] of [[plain, false], [star, true]] as const) {
    if (fix) await page.getByTestId('atp-correction').check();
    await page.getByTestId('run-atp').click();
    const caption = page.getByTestId('atp-caption');
    await expect(caption).toContainText(fix ? 'AtP* against exact' : 'AtP against exact', { timeout: 60_000 });
    await settled(page);
    expect(Math.abs(Number(await caption.getAttribute('data-rho')) - want.rankCorrelation!), `Spearman ρ${fix ? ' (AtP*)' : ''}`).toBeLessThan(0.02);
    expect(Math.abs(Number(await caption.getAttribute('data-flagged')) - want.disagreements!.length)).toBeLessThanOrEqual(1);
    await expect(page.getByTestId('atp-heatmap')).toBeVisible();
    await expect(page.getByTestId('atp-exact-heatmap')).toBeVisible();
  }
  await page.getByTestId('atp-panel').scrollIntoViewIfNeeded();
  await page.screenshot({ path: `${SHOTS}/patching-atp-beside-exact.png` });
});
