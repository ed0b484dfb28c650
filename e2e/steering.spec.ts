import { test, expect, type Page } from '@playwright/test';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { fileURLToPath } from 'node:url';
import { STORIES, parseShown } from './golden';
import { CpuBackend } from '../workers/engine/backend/cpu';
import { Engine } from '../workers/engine/engine';
import type { Analysis, Generation } from '../workers/engine/api';
import { NodeFiles } from '../workers/engine/io/node_files';
import { toIntervention } from '../workers/engine/steering/spec';
import { doseResponse, type SweepResult } from '../workers/engine/studies/sweep';
import { caaVector, type CaaVector } from '../workers/engine/studies/vectors';
import { readNpy, writeNpy } from '../workers/engine/steering/vector_io';
import { settled } from './app_page';

/**
 * Steering through the UI on the production build (WebGPU on SwiftShader), checked against the
 * engine run here in Node on the CPU backend with the same spec: CAA happy − sad from
 * public/steering/happy_sad.json at blocks.3.hook_resid_post (Rimsky et al., arXiv 2312.06681),
 * added with α = 4 at every position of stories260K's run on the set's suggested prompt.
 */
const SET = JSON.parse(fs.readFileSync(fileURLToPath(new URL('../public/steering/happy_sad.json', import.meta.url)), 'utf8')) as {
  positive: string[]; negative: string[]; suggested: { prompt: string; good: string; bad: string };
};
const HOOK = 'blocks.3.hook_resid_post';
const ALPHA = 4;
const MAX_NEW = 24;
const LAYERS = [1, 2, 3];
const DOSES = [-8, -4, 0, 4, 8];
const TOL = 1e-3;
const SHOTS = '.artifacts/screenshots';

/** What the engine computes in Node for the same experiment. */
interface Expected {
  vector: CaaVector;
  nPrompt: number;
  unsteered: Analysis;
  steered: Analysis;
  plain: Generation;
  steeredGen: Generation;
  sweep: SweepResult;
  /** First token id of each of the set's futures after its prompt. */
  futures: { good: number; bad: number };
}
let want: Expected;

test.beforeAll(async () => {
  fs.mkdirSync(SHOTS, { recursive: true });
  const e = await Engine.load(new NodeFiles(STORIES), new CpuBackend());
  try {
    const vector = await caaVector(e, { positive: SET.positive, negative: SET.negative, hook: HOOK });
    const req = { prompt: SET.suggested.prompt, good: { text: SET.suggested.good }, bad: { text: SET.suggested.bad } };
    const nPrompt = e.encodePrompt(req).length;
    const add = toIntervention({ hook: HOOK, type: 'add', vector: vector.vector, alpha: ALPHA, positions: 'all' }, e.spec, { nPrompt, maxNewTokens: MAX_NEW });
    want = {
      vector, nPrompt,
      unsteered: await e.analyse(req),
      steered: await e.analyse({ ...req, interventions: [add] }),
      plain: await e.generate({ ...req, maxNewTokens: MAX_NEW, temperature: 0, seed: 0 }),
      steeredGen: await e.generate({ ...req, maxNewTokens: MAX_NEW, temperature: 0, seed: 0, interventions: [add] }),
      sweep: await doseResponse(e, { ...req, template: { hook: 'blocks.{l}.hook_resid_post', type: 'add', vector: vector.vector }, layers: LAYERS, doses: DOSES }),
      futures: { good: e.resolveFuture(e.encodePrompt(req), req.good, req).firstIds[0], bad: e.resolveFuture(e.encodePrompt(req), req.bad, req).firstIds[0] },
    };
  } finally {
    e.dispose();
  }
});

/** Opens the workbench and waits for stories260K on WebGPU. */
async function openWorkbench(page: Page) {
  page.on('pageerror', (e) => console.log(`[page error] ${e.message}`));
  await page.setViewportSize({ width: 1500, height: 1000 });
  await page.goto('/');
  const badge = page.getByTestId('backend-badge');
  await expect(badge).toBeVisible({ timeout: 120_000 });
  await expect(badge).toHaveAttribute('data-kind', 'webgpu');
  await expect(page.getByTestId('model-info')).toContainText('stories260K');
  await expect(page.getByTestId('progress')).toBeHidden({ timeout: 120_000 });
}

/** Waits for the running job to end without an error banner. */
/** Builds the CAA vector of the default set at HOOK through the Vectors tab, with the set's prompt and futures. */
async function buildCaa(page: Page) {
  await page.getByTestId('tab-vectors').click();
  await expect(page.getByTestId('set-positive')).toHaveValue(SET.positive.join('\n'));
  await expect(page.getByTestId('set-negative')).toHaveValue(SET.negative.join('\n'));
  await page.getByTestId('use-suggested').click();
  await expect(page.getByTestId('prompt')).toHaveValue(SET.suggested.prompt);
  await expect(page.getByTestId('good-future')).toHaveValue(SET.suggested.good);
  // The chips under the futures follow at once (before any Analyse): the set's futures, tokenized after its prompt.
  for (const which of ['good', 'bad'] as const) {
    const chips = page.getByTestId(`${which}-resolved`);
    await expect(chips).toHaveAttribute('data-stale', 'false');
    await expect(chips).toHaveAttribute('data-first-ids', String(want.futures[which]));
  }
  await page.getByTestId('vector-method').selectOption('caa');
  await page.getByTestId('vector-hook').selectOption(HOOK);
  const before = await page.getByTestId('vector-library').locator('tbody tr[data-d]').count();
  await page.getByTestId('build-vector').click();
  await settled(page);
  await expect(page.getByTestId(`library-row-${before}`)).toBeVisible();
  return before;
}

/** Clicks heatmap cell (row, col) using the geometry the canvas publishes (pointing first, so the readout has settled). */
async function clickCell(page: Page, testId: string, row: number, col: number) {
  const c = page.getByTestId(testId);
  const at = async () => {
    const g = await c.evaluate((el) => ({ ...(el as HTMLElement).dataset }));
    const i = g.rowsUpward === 'true' ? Number(g.rows) - 1 - row : row;
    return { x: Number(g.x0) + (col + 0.5) * Number(g.cellWidth), y: Number(g.y0) + (i + 0.5) * Number(g.cellHeight) };
  };
  await c.hover({ position: await at() });
  await expect(page.getByTestId('margin-readout')).toHaveAttribute('data-position', String(col));
  await c.click({ position: await at() });
}

/** Saves a full-page screenshot after checking that nothing sticks out sideways (columns overlapping, charts wider than their panel). */
async function shot(page: Page, name: string) {
  const over = await page.evaluate(() => document.documentElement.scrollWidth - document.documentElement.clientWidth);
  expect(over, `the page is ${over}px wider than the window`).toBeLessThanOrEqual(0);
  await page.screenshot({ path: `${SHOTS}/${name}.png`, fullPage: true });
}

const shown = async (page: Page, testId: string) => parseShown(await page.getByTestId(testId).textContent());

test('CAA happy − sad built in the UI steers stories260K: margins, steered vs unsteered text and the dose–response sweep equal the engine’s', async ({ page }) => {
  const T = want.nPrompt;
  await openWorkbench(page);

  // The vector library builds CAA from happy_sad.json; its provenance is shown and its .npy export is the Node vector.
  const row = await buildCaa(page);
  const lib = page.getByTestId(`library-row-${row}`);
  await expect(lib).toHaveAttribute('data-d', '64');
  await expect(lib).toHaveAttribute('data-hook', HOOK);
  await expect(lib).toContainText('caa · last');
  await expect(lib).toContainText('16 / 16');
  await expect(lib).toContainText('stories260K');
  const [dl] = await Promise.all([page.waitForEvent('download'), page.getByTestId(`export-npy-${row}`).click()]);
  const exported = readNpy(new Uint8Array(fs.readFileSync(await dl.path())));
  expect(exported).toHaveLength(64);
  const vecErr = Math.max(...Array.from(exported, (x, i) => Math.abs(x - want.vector.vector[i])));
  console.log(`CAA vector (WebGPU) vs Node CPU: max |Δ| = ${vecErr.toExponential(2)}, ‖v‖ = ${Math.hypot(...want.vector.vector).toFixed(3)}`);
  expect(vecErr).toBeLessThanOrEqual(1e-4);
  await shot(page, 'steering-vectors');

  // Unsteered analysis, then an intervention placed by clicking the heatmap cell (layer 4 = after block 3, last token).
  await page.getByTestId('tab-margins').click();
  await page.getByTestId('analyse').click();
  await settled(page);
  await expect(page.getByTestId('token-strip').locator('li')).toHaveCount(T);
  await clickCell(page, 'margin-heatmap', 4, T - 1);
  const editor = page.getByTestId('intervention-editor');
  await expect(editor).toHaveAttribute('data-n', '1');
  await expect(page.getByTestId('editor-hook')).toHaveValue(HOOK);
  await expect(page.getByTestId('editor-positions')).toHaveValue('explicit');
  await expect(page.getByTestId('editor-position-list')).toHaveValue(String(T - 1));
  await expect(page.getByTestId(`token-${T - 1}`)).toHaveAttribute('data-steered', '1');
  await expect(page.getByTestId('token-0')).not.toHaveAttribute('data-steered', /./);

  // A token range selected on the strip (click, shift-click) places a second one on positions 2–4; delete it again.
  await page.getByTestId('token-2').click();
  await page.getByTestId('token-4').click({ modifiers: ['Shift'] });
  await expect(page.getByTestId('token-selection')).toHaveAttribute('data-start', '2');
  await expect(page.getByTestId('token-selection')).toHaveAttribute('data-end', '5');
  await page.getByTestId('steer-selection').click();
  await expect(page.getByTestId('intervention-2')).toContainText('positions 2–4');
  await expect(page.getByTestId('intervention-2-order')).toContainText('applies after #1 at this hook');
  for (const t of [2, 3, 4]) await expect(page.getByTestId(`token-${t}`)).toHaveAttribute('data-steered', '2');
  await page.getByTestId('intervention-2-delete').click();
  await expect(page.getByTestId('intervention-2')).toHaveCount(0);

  // #1 becomes add α = 4 at all positions, with the CAA vector.
  await page.getByTestId('intervention-1-open').click();
  await page.getByTestId('editor-positions').selectOption('all');
  await page.getByTestId('editor-type').selectOption('add');
  await page.getByTestId('editor-dose').fill(String(ALPHA));
  await expect(page.getByTestId('editor-vector')).toContainText('CAA');
  await expect(page.getByTestId('intervention-1')).toContainText(`add α = ${ALPHA} ${HOOK}`);
  for (let t = 0; t < T; t++) await expect(page.getByTestId(`token-${t}`)).toHaveAttribute('data-steered', '1');

  // (a) Analyse under the intervention: the steered final margin is larger and both equal the engine's.
  await page.getByTestId('analyse').click();
  await settled(page);
  await expect(page.getByTestId('margin-steered-tag')).toContainText('#1');
  const steeredMargin = await shown(page, 'final-margin-last');
  const plainMargin = await shown(page, 'final-margin-last-unsteered');
  console.log(`final margin “${SET.suggested.good}” − “${SET.suggested.bad}”: unsteered ${plainMargin} (Node ${want.unsteered.finalMargin[T - 1].toFixed(4)}), steered ${steeredMargin} (Node ${want.steered.finalMargin[T - 1].toFixed(4)})`);
  expect(steeredMargin).toBeGreaterThan(plainMargin);
  expect(Math.abs(steeredMargin - want.steered.finalMargin[T - 1])).toBeLessThanOrEqual(TOL);
  expect(Math.abs(plainMargin - want.unsteered.finalMargin[T - 1])).toBeLessThanOrEqual(TOL);
  expect(Math.abs((await shown(page, 'sequence-margin')) - want.steered.sequenceMargin)).toBeLessThanOrEqual(TOL);
  // Nothing steered is hidden: row 4 (after block 3) is marked, and every cell of it.
  const heat = page.getByTestId('margin-heatmap');
  await expect(heat).toHaveAttribute('data-marked-rows', '4');
  await expect(heat).toHaveAttribute('data-marked-cells', Array.from({ length: T }, (_, t) => `4:${t}`).join(' '));
  await shot(page, 'steering-heatmap');
  // The difference toggle shows steered − unsteered, cell by cell, against the engine's.
  await page.getByTestId('show-difference').check();
  await page.getByTestId('show-tables').check();
  for (const [l, t] of [[5, T - 1], [4, 3], [3, T - 1], [0, 0]]) {
    const d = want.steered.lensMargin[l * T + t] - want.unsteered.lensMargin[l * T + t];
    expect(Math.abs((await shown(page, `margin-cell-${l}-${t}`)) - d), `difference at layer ${l}, position ${t}`).toBeLessThanOrEqual(TOL);
  }
  await page.getByTestId('show-tables').uncheck();
  await shot(page, 'steering-heatmap-difference');
  await page.getByTestId('show-difference').uncheck();

  // (b, c) Greedy generation, same seed, with and without: texts side by side, two margin curves.
  await page.getByTestId('tab-generation').click();
  await page.getByTestId('max-new-tokens').fill(String(MAX_NEW));
  await page.getByTestId('temperature').fill('0');
  await page.getByTestId('seed').fill('0');
  await page.getByTestId('generate').click();
  await expect(page.getByTestId('generation-output')).toHaveAttribute('data-done', 'true', { timeout: 120_000 });
  await settled(page);
  const steeredText = await page.getByTestId('generated-text-steered').textContent();
  const plainText = await page.getByTestId('generated-text').textContent();
  console.log(`unsteered: “${plainText}”\nsteered:   “${steeredText}”`);
  expect(plainText).toBe(want.plain.text);
  expect(steeredText).toBe(want.steeredGen.text);
  expect(steeredText).not.toBe(plainText);
  const ids = await page.getByTestId('generated-token-steered').evaluateAll((els) => els.map((e) => Number((e as HTMLElement).dataset.id)));
  expect(ids).toEqual(want.steeredGen.ids);
  const diverge = want.plain.ids.findIndex((id, i) => id !== want.steeredGen.ids[i]);
  await expect(page.getByTestId('divergence')).toHaveAttribute('data-step', String(diverge));
  await expect(page.getByTestId('divergence-mark-steered')).toHaveText(want.steeredGen.tokens[diverge]);
  const curve = page.getByTestId('margin-curve');
  await expect(curve.locator('g.series')).toHaveCount(2);
  await expect(curve.locator('g.series[data-series="steered Δ"] circle')).toHaveCount(want.steeredGen.ids.length);
  await expect(curve.locator('g.series[data-series="unsteered Δ"] circle')).toHaveCount(want.plain.ids.length);
  await expect(page.getByTestId('margin-curve-legend-0')).toContainText('unsteered');
  await expect(page.getByTestId('margin-curve-legend-1')).toContainText('steered');
  const curveYs = await curve.locator('g.series[data-series="steered Δ"] circle').evaluateAll((els) => els.map((e) => Number((e as SVGElement).dataset.y)));
  curveYs.forEach((y, k) => expect(Math.abs(y - want.steeredGen.margins[k]), `steered margin at step ${k}`).toBeLessThanOrEqual(TOL));
  expect(Math.abs(curveYs[0] - want.steered.finalMargin[T - 1])).toBeLessThanOrEqual(TOL);
  // Every steered token is marked (α at all positions, every step: each token comes from a steered pass).
  await expect(page.getByTestId('generated-token-steered').and(page.locator('[data-steered="1"]'))).toHaveCount(want.steeredGen.ids.length);
  await shot(page, 'steering-generation');

  // (d) Dose–response for layers 1–3 × five doses: margins rise with α at layer 3 and equal the Node sweep.
  await page.getByTestId('tab-dose').click();
  await page.getByTestId('sweep-layers').fill(LAYERS.join(','));
  await page.getByTestId('sweep-doses').fill(DOSES.join(','));
  await page.getByTestId('sweep-type').selectOption('add');
  await page.getByTestId('run-sweep').click();
  await settled(page);
  await page.getByTestId('show-tables').check();
  let worst = 0;
  for (let li = 0; li < LAYERS.length; li++) {
    for (let di = 0; di < DOSES.length; di++) {
      const m = await shown(page, `sweep-margin-${li}-${di}`);
      const kl = await shown(page, `sweep-kl-${li}-${di}`);
      worst = Math.max(worst, Math.abs(m - want.sweep.margin[li][di]));
      expect(Math.abs(m - want.sweep.margin[li][di]), `margin, layer ${LAYERS[li]}, α ${DOSES[di]}`).toBeLessThanOrEqual(TOL);
      expect(Math.abs(kl - want.sweep.kl[li][di]), `KL, layer ${LAYERS[li]}, α ${DOSES[di]}`).toBeLessThanOrEqual(TOL);
    }
  }
  console.log(`sweep: ${LAYERS.length}×${DOSES.length} cells, max |margin − Node| = ${worst.toExponential(2)}`);
  const layer3 = await Promise.all(DOSES.map((_, di) => shown(page, `sweep-margin-${LAYERS.indexOf(3)}-${di}`)));
  for (let di = 1; di < DOSES.length; di++) expect(layer3[di], `layer 3 margin rises from α ${DOSES[di - 1]} to ${DOSES[di]}`).toBeGreaterThan(layer3[di - 1]);
  await expect(page.getByTestId('dose-margin-chart').locator('g.series')).toHaveCount(LAYERS.length);
  await expect(page.getByTestId('dose-kl-chart').locator('g.series')).toHaveCount(LAYERS.length);
  await page.getByTestId('show-tables').uncheck();
  // The sweep ran without #1 (add α = 4 at HOOK), and says so. Clicking the point (layer 3, α = 8)
  // replaces #1 rather than adding α = 8 on top of it: an analysis under the list then gives the margin the sweep measured.
  await expect(page.getByTestId('sweep-others')).toContainText('1 other intervention is on in the list; this sweep ran without it');
  await page.getByTestId('dose-margin-chart').locator(`g.series[data-series="L3"] circle[data-x="8"]`).click();
  await expect(page.getByTestId('sweep-picked')).toContainText(`Replaced #1: add α = 8 at ${HOOK}`);
  await expect(page.getByTestId('sweep-picked')).toHaveAttribute('data-replaced', 'true');
  await expect(page.getByTestId('intervention-editor')).toHaveAttribute('data-n', '1');
  await expect(page.getByTestId('intervention-2')).toHaveCount(0);
  await expect(page.getByTestId('editor-hook')).toHaveValue(HOOK);
  await expect(page.getByTestId('editor-dose')).toHaveValue('8');
  await expect(page.getByTestId('sweep-others')).toHaveCount(0);
  await shot(page, 'steering-dose-response');
  await page.getByTestId('tab-margins').click();
  await page.getByTestId('analyse').click();
  await settled(page);
  const picked = await shown(page, 'final-margin-last');
  const measured = want.sweep.margin[LAYERS.indexOf(3)][DOSES.indexOf(8)];
  console.log(`final margin under the picked point: ${picked} (sweep at layer 3, α = 8: ${measured.toFixed(4)})`);
  expect(Math.abs(picked - measured)).toBeLessThanOrEqual(TOL);
  await page.getByTestId('tab-dose').click();

  // Cancel stops a long sweep between forward passes: no error, the finished sweep stays on display.
  await page.getByTestId('sweep-layers').fill('all');
  await page.getByTestId('sweep-doses').fill(Array.from({ length: 60 }, (_, i) => i - 30).join(','));
  await page.getByTestId('run-sweep').click();
  await expect(page.getByTestId('progress-detail')).toContainText(/[1-9]\d* of 300 forward passes/, { timeout: 60_000 });
  await expect(page.locator('progress')).toHaveCount(1);
  await shot(page, 'steering-sweep-progress');
  await page.getByTestId('cancel-job').click();
  await settled(page);
  await expect(page.getByTestId('dose-margin-chart').locator('g.series')).toHaveCount(LAYERS.length);
  await expect(page.getByTestId('run-sweep')).toBeEnabled();
});

test('a vector of the wrong width, NaN in a vector file and a step window past the generation are refused with clear messages; the app stays usable', async ({ page }) => {
  const T = want.nPrompt;
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'branchpoint-steering-'));
  try {
    await openWorkbench(page);
    const row = await buildCaa(page);

    // A 48-value .npy for a model with d_model = 64.
    const wrong = path.join(dir, 'wrong_width.npy');
    fs.writeFileSync(wrong, writeNpy(Float32Array.from({ length: 48 }, (_, i) => Math.sin(i))));
    await page.getByTestId('vector-file').setInputFiles(wrong);
    const banner = page.getByTestId('error-banner');
    await expect(banner).toBeVisible({ timeout: 60_000 });
    await expect(page.getByTestId('error-what')).toHaveText('Could not import the vector file wrong_width.npy');
    await expect(page.getByTestId('error-why')).toContainText('wrong_width.npy holds a vector of 48 values, but stories260K has d_model = 64');
    console.log(`banner: ${(await banner.textContent())?.replace(/\s+/g, ' ')}`);
    await shot(page, 'steering-bad-vector');
    await expect(page.getByTestId('vector-library').locator('tbody tr[data-d]')).toHaveCount(row + 1);

    // NaN written as JSON null.
    const nan = path.join(dir, 'nan.json');
    fs.writeFileSync(nan, JSON.stringify({ vector: [...Array.from({ length: 63 }, () => 0.5), null] }));
    await page.getByTestId('vector-file').setInputFiles(nan);
    await expect(page.getByTestId('error-why')).toContainText('nan.json: vector[63] is null, not a number (NaN or Infinity written as JSON null?)');

    // An intervention whose step window starts after the last step of a 24-token generation.
    await page.getByTestId('tab-generation').click();
    await page.getByTestId('max-new-tokens').fill(String(MAX_NEW));
    await page.getByTestId('add-intervention').click();
    await page.getByTestId('editor-hook').selectOption(HOOK);
    await page.getByTestId('editor-dose').fill(String(ALPHA));
    await page.getByTestId('editor-steps-on').check();
    await page.getByTestId('editor-steps-start').fill('30');
    await expect(page.getByTestId('intervention-1')).toContainText('steps [30, ∞)');
    await page.getByTestId('generate').click();
    await expect(banner).toBeVisible({ timeout: 60_000 });
    await expect(page.getByTestId('error-what')).toHaveText('Could not generate');
    await expect(page.getByTestId('error-why')).toContainText(`intervention #1: step window starts at step 30, but generation runs steps 0..${MAX_NEW - 1} (max_new_tokens = ${MAX_NEW}): the intervention would never act`);
    await shot(page, 'steering-bad-steps');

    // Still usable: a window inside the generation runs, and steering from step 5 leaves the first 5 tokens as unsteered.
    await page.getByTestId('editor-steps-start').fill('5');
    await page.getByTestId('generate').click();
    await expect(page.getByTestId('generation-output')).toHaveAttribute('data-done', 'true', { timeout: 120_000 });
    await settled(page);
    const late = await page.getByTestId('generated-token-steered').evaluateAll((els) => els.map((e) => Number((e as HTMLElement).dataset.id)));
    expect(late.slice(0, 5)).toEqual(want.plain.ids.slice(0, 5));
    await expect(page.getByTestId('generated-token-steered').and(page.locator('[data-steered]'))).toHaveCount(MAX_NEW - 5);
    await page.getByTestId('tab-margins').click();
    await page.getByTestId('editor-steps-on').uncheck();
    await page.getByTestId('analyse').click();
    await settled(page);
    expect(Math.abs((await shown(page, 'final-margin-last')) - want.steered.finalMargin[T - 1])).toBeLessThanOrEqual(TOL);
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
});
