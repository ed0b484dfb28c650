import { test, expect, type Page } from '@playwright/test';
import * as fs from 'node:fs';
import { fileURLToPath } from 'node:url';
import { STORIES } from './golden';
import { open, settled, buildCaa } from './app_page';
import { CpuBackend } from '../workers/engine/backend/cpu';
import { Engine } from '../workers/engine/engine';
import { NodeFiles } from '../workers/engine/io/node_files';
import { parseLabelledSet } from '../workers/engine/io/prompt_set';
import { probeLayers, type ProbeResult } from '../workers/engine/studies/probe';
import { interventionWindow, type WindowResult } from '../workers/engine/studies/window';
import { toIntervention } from '../workers/engine/steering/spec';
import { caaVector } from '../workers/engine/studies/vectors';

/**
 * The probe curve (shipped example public/probes/he_she.json) and the intervention window (the
 * happy − sad CAA vector of public/steering/happy_sad.json at blocks.3.hook_resid_post, α = 6) in
 * the production build on WebGPU, checked against the engine run here in Node on the CPU backend.
 */
const read = (p: string) => fs.readFileSync(fileURLToPath(new URL(p, import.meta.url)), 'utf8');
const PROBE_SET = parseLabelledSet('he_she.json', read('../public/probes/he_she.json'));
const HAPPY = JSON.parse(read('../public/steering/happy_sad.json')) as { positive: string[]; negative: string[]; suggested: { prompt: string; good: string; bad: string } };
const HOOK = 'blocks.3.hook_resid_post';
const ALPHA = 6;
const N = 8;
const SHOTS = '.artifacts/screenshots';

let probe: ProbeResult;
let win: WindowResult;

test.beforeAll(async () => {
  fs.mkdirSync(SHOTS, { recursive: true });
  const e = await Engine.load(new NodeFiles(STORIES), new CpuBackend());
  try {
    probe = await probeLayers(e, { ...PROBE_SET });
    const v = await caaVector(e, { positive: HAPPY.positive, negative: HAPPY.negative, hook: HOOK });
    const req = { prompt: HAPPY.suggested.prompt, good: { text: HAPPY.suggested.good }, bad: { text: HAPPY.suggested.bad } };
    const iv = toIntervention({ hook: HOOK, type: 'add', vector: v.vector, alpha: ALPHA }, e.spec, { nPrompt: e.encodePrompt(req).length, maxNewTokens: N });
    win = await interventionWindow(e, { ...req, interventions: [iv], maxNewTokens: N });
  } finally {
    e.dispose();
  }
});

/** The y values of a LineChart series, in x order. */
const seriesY = (page: Page, chart: string, name: string) =>
  page.getByTestId(chart).locator(`g.series[data-series="${name}"] circle`).evaluateAll((cs) => cs.map((c) => Number(c.getAttribute('data-y'))));

test('probe curve of the he/she example: chance at the embeddings, separable at the last layer, as the engine computes it', async ({ page }) => {
  await page.setViewportSize({ width: 1500, height: 1000 });
  await open(page);
  await expect(page.getByTestId('backend-badge')).toHaveAttribute('data-kind', 'webgpu');
  await page.getByTestId('tab-probe').click();
  await expect(page.getByTestId('probe-positive')).toHaveValue(PROBE_SET.positive.join('\n'));
  await expect(page.getByTestId('probe-class-1')).toHaveValue('boy');
  await page.getByTestId('run-probe').click();
  await settled(page);
  const acc = await seriesY(page, 'probe-chart', 'accuracy');
  console.log(`probe accuracy per layer (WebGPU): ${acc.map((a) => a.toFixed(3)).join(' ')}; Node CPU: ${probe.accuracy.map((a) => a.toFixed(3)).join(' ')}`);
  expect(acc).toHaveLength(6);
  expect(acc[0]).toBe(0.5);
  expect(acc[5]).toBeGreaterThanOrEqual(0.9);
  // Held-out predictions are signs of scores, so activations ~1e-5 apart from the CPU's give the same accuracies.
  acc.forEach((a, i) => expect(Math.abs(a - probe.accuracy[i])).toBeLessThanOrEqual(1 / 48 + 1e-9));
  await expect(page.getByTestId('probe-first-95')).toHaveAttribute('data-row', String(probe.firstLayer95));
  // The row is named as every view names residual rows (lib/layer_names.ts): embed, L0 = after block 0, …
  await expect(page.getByTestId('probe-first-95')).toContainText(probe.firstLayer95 === 0 ? 'embed' : `L${probe.firstLayer95 - 1} · blocks.${probe.firstLayer95 - 1}.hook_resid_post`);
  const control = await seriesY(page, 'probe-chart', 'control accuracy');
  for (const c of control) expect(Math.abs(c - 0.5)).toBeLessThan(0.2);
  await expect(page.getByTestId('probe-chart').locator('g.x-mark')).toHaveAttribute('data-x', String(probe.firstLayer95));
  await page.getByTestId('probe-send-direction').click();
  await expect(page.getByTestId('probe-sent')).toContainText(probe.hooks[probe.firstLayer95]);
  await page.screenshot({ path: `${SHOTS}/probes.png`, fullPage: true });
});

test('intervention window of the happy − sad vector: outcome per start step and the point of no return, as the engine computes them', async ({ page }) => {
  await page.setViewportSize({ width: 1500, height: 1000 });
  await open(page);
  await expect(page.getByTestId('backend-badge')).toHaveAttribute('data-kind', 'webgpu');
  // The CAA vector, built in the Vectors tab with the set's suggested prompt and futures.
  await buildCaa(page, HOOK);
  // One intervention: add α = 6 of it at blocks.3.hook_resid_post, every position.
  await page.getByTestId('add-intervention').click();
  await page.getByTestId('editor-hook').selectOption(HOOK);
  await page.getByTestId('editor-type').selectOption('add');
  await page.getByLabel('Dose α', { exact: true }).fill(String(ALPHA)); // the field is found by its visible label (a screen reader's name)
  await expect(page.getByTestId('editor-vector')).toContainText('CAA');
  await page.getByTestId('tab-window').click();
  await page.getByTestId('window-n').fill(String(N));
  await page.getByTestId('run-window').click();
  await settled(page);
  const outcome = await seriesY(page, 'window-chart', 'steered from step k');
  console.log(`window outcome per k (WebGPU): ${outcome.map((o) => o.toFixed(3)).join(' ')}; Node CPU: ${win.outcome.map((o) => o.toFixed(3)).join(' ')}; point of no return ${win.pointOfNoReturn}`);
  expect(outcome).toHaveLength(N);
  outcome.forEach((o, k) => expect(Math.abs(o - win.outcome[k])).toBeLessThanOrEqual(1e-3));
  expect(win.pointOfNoReturn).not.toBeNull();
  await expect(page.getByTestId('window-ponr')).toHaveText(`k = ${win.pointOfNoReturn}`);
  await expect(page.getByTestId('window-chart').locator('g.x-mark')).toHaveAttribute('data-x', String(win.pointOfNoReturn));
  await expect(page.getByTestId('window-picked-text')).toHaveText(win.variants[win.pointOfNoReturn!].tokens.join(''));
  await expect(page.getByTestId('window-unsteered-text')).toHaveText(win.unsteered.tokens.join(''));
  // Clicking k = 0 shows the continuation steered throughout.
  await page.getByTestId('window-chart').locator('g.series[data-series="steered from step k"] circle').first().click();
  await expect(page.getByTestId('window-picked')).toHaveText('0');
  await expect(page.getByTestId('window-picked-text')).toHaveText(win.variants[0].tokens.join(''));
  await page.screenshot({ path: `${SHOTS}/intervention-window.png`, fullPage: true });
});
