import { test, expect, type Page } from '@playwright/test';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { fileURLToPath } from 'node:url';
import LZString from 'lz-string';
import { serveStatic, type StaticServer } from '../tools/static_server';
import { scanBundledModels } from '../tools/bundled_models';
import { SHARED, STORIES, parseShown, readTensors, referencePrompt } from './golden';
import { startMockHub } from '../tools/mock-hub';
import { readNpy, save } from './export_files';
import { runCli } from '../tests/cli_run';
import { analysed as waitAnalysed, settled } from './app_page';
import { CpuBackend } from '../workers/engine/backend/cpu';
import { Engine } from '../workers/engine/engine';
import { NodeFiles } from '../workers/engine/io/node_files';
import { toIntervention } from '../workers/engine/steering/spec';
import { caaVector } from '../workers/engine/studies/vectors';

/**
 * Experiments in a link and a file, on the production build served from a sub-path by a plain
 * static server: a link made here (CAA happy − sad at blocks.3.hook_resid_post, α = 4) opens with
 * its prompt, futures and intervention restored and rerun, with the margins the engine computes in
 * Node; the file the browser saves makes the runner print the browser's margins; damaged links, newer
 * versions and missing models say so and leave a usable app; and once opened, the same link works
 * with the network off (the service worker, app/offline/sw.ts).
 */
const SUB_PATH = '/share/bp/';
const SET = JSON.parse(fs.readFileSync(fileURLToPath(new URL('../public/steering/happy_sad.json', import.meta.url)), 'utf8')) as { positive: string[]; negative: string[] };
const PROMPT = 'The little girl felt very';
const HOOK = 'blocks.3.hook_resid_post';
const ALPHA = 4;
let site: StaticServer;
let vector: number[];
let want: { steered: number; unsteered: number };

test.beforeAll(async () => {
  if (!fs.existsSync('dist/index.html')) throw new Error('dist/ is missing: the e2e project builds it before the tests');
  site = await serveStatic('dist', SUB_PATH);
  const e = await Engine.load(new NodeFiles(STORIES), new CpuBackend());
  try {
    const v = await caaVector(e, { positive: SET.positive, negative: SET.negative, hook: HOOK });
    vector = Array.from(v.vector);
    const req = { prompt: PROMPT, good: { text: ' happy' }, bad: { text: ' sad' } };
    const nPrompt = e.encodePrompt(req).length;
    const add = toIntervention({ hook: HOOK, type: 'add', vector: v.vector, alpha: ALPHA, positions: 'all' }, e.spec, { nPrompt });
    const un = await e.analyse(req), st = await e.analyse({ ...req, interventions: [add] });
    want = { unsteered: un.finalMargin[nPrompt - 1], steered: st.finalMargin[nPrompt - 1] };
  } finally {
    e.dispose();
  }
});
test.afterAll(async () => site?.close());

/** The model dropdown lists the bundled manifest (restoring an experiment once skipped filling it) and shows the restored model. */
async function modelDropdownShowsRestored(page: Page): Promise<void> {
  const bundled = scanBundledModels(fileURLToPath(new URL('../public/models/', import.meta.url))).map((m) => m.name).sort();
  const select = page.getByTestId('model-select');
  await expect(select).toBeEnabled();
  expect((await select.locator('option').allTextContents()).sort()).toEqual(bundled);
  await expect(select).toHaveValue('stories260K');
}

/** An experiment (docs/experiment-format.md) with the CAA vector inline. */
function experiment(over: Record<string, unknown> = {}) {
  return {
    format: 'branchpoint-experiment', version: 1,
    model: { kind: 'bundled', name: 'stories260K' },
    prompt: PROMPT, good: { mode: 'text', value: ' happy' }, bad: { mode: 'text', value: ' sad' },
    vectors: [{ name: 'happy − sad (CAA)', hook: HOOK, model: 'stories260K', dModel: vector.length, provenance: { method: 'caa', position: 'last', positive: SET.positive, negative: SET.negative }, values: vector }],
    interventions: [{ hook: HOOK, type: 'add', dose: ALPHA, vector: 0, positions: 'all' }],
    view: { name: 'margins' },
    ...over,
  };
}
const link = (e: unknown) => `${site.url}#x=${LZString.compressToEncodedURIComponent(JSON.stringify(e))}`;

test('a saved experiment link restores prompt, futures and intervention, reruns them, and the runner reproduces the saved file', async ({ page }) => {
  page.on('pageerror', (e) => console.log(`[page error] ${e.message}`));
  await page.goto(link(experiment()));
  await waitAnalysed(page);
  await expect(page.getByTestId('prompt')).toHaveValue(PROMPT);
  await expect(page.getByTestId('good-future')).toHaveValue(' happy');
  await expect(page.getByTestId('bad-future')).toHaveValue(' sad');
  await expect(page.getByTestId('intervention-list')).toContainText(HOOK);
  await expect(page.getByTestId('experiment-notice')).toBeHidden();
  await modelDropdownShowsRestored(page);
  const steered = parseShown(await page.getByTestId('final-margin-last').textContent());
  const unsteered = parseShown(await page.getByTestId('final-margin-last-unsteered').textContent());
  expect(Math.abs(steered - want.steered), `steered margin ${steered} vs the engine in Node ${want.steered}`).toBeLessThanOrEqual(1e-3);
  expect(Math.abs(unsteered - want.unsteered)).toBeLessThanOrEqual(1e-3);
  expect(want.steered - want.unsteered, 'the vector really moves the margin toward " happy"').toBeGreaterThan(1);

  // The browser's file → the runner: the same final margins as the browser's own export.
  const [dl] = await Promise.all([page.waitForEvent('download'), page.getByTestId('save-experiment').click()]);
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'bp-exp-'));
  const file = path.join(dir, 'experiment.json');
  fs.copyFileSync(await dl.path(), file);
  const [json] = await Promise.all([page.waitForEvent('download'), page.getByTestId('margin-view').getByRole('button', { name: 'JSON', exact: true }).click()]);
  const browser = JSON.parse(fs.readFileSync(await json.path(), 'utf8')) as { finalMargin: number[] };
  const cli = await runCli(['margins', '--experiment', file]);
  expect(cli.code, cli.err).toBe(0);
  const out = JSON.parse(cli.out) as { final_margin: number[] };
  const worst = Math.max(...out.final_margin.map((v, i) => Math.abs(v - browser.finalMargin[i])));
  console.log(`runner vs browser (WebGPU) final margins: max |Δ| = ${worst.toExponential(2)} over ${out.final_margin.length} positions`);
  expect(worst).toBeLessThanOrEqual(1e-5);
  fs.rmSync(dir, { recursive: true, force: true });

  // The link the app keeps in the address bar reopens the same experiment after a reload.
  await expect.poll(() => page.evaluate(() => location.hash.startsWith('#x='))).toBe(true);
  await page.reload();
  await waitAnalysed(page);
  await expect(page.getByTestId('intervention-list')).toContainText(HOOK);
  await modelDropdownShowsRestored(page);
  expect(Math.abs(parseShown(await page.getByTestId('final-margin-last').textContent()) - steered)).toBeLessThanOrEqual(1e-6);
});

test('a damaged link, a newer version and a missing model each say so, and the app stays usable', async ({ page }) => {
  await page.goto(`${site.url}#x=this-is-not-an-experiment`);
  await expect(page.getByTestId('experiment-notice-what')).toHaveText('This link could not be opened', { timeout: 120_000 });
  await expect(page.getByTestId('experiment-notice-why')).toContainText('damaged');
  await expect(page.getByTestId('model-info')).toContainText('stories260K', { timeout: 120_000 });
  await expect(page.getByTestId('analyse')).toBeEnabled();

  await page.goto('about:blank'); // a full load, not a hash change the open app could rewrite
  await page.goto(link(experiment({ version: 99 })));
  await expect(page.getByTestId('experiment-notice-why')).toContainText('newer Branchpoint (format version 99', { timeout: 120_000 });
  await expect(page.getByTestId('analyse')).toBeEnabled({ timeout: 120_000 });

  await page.goto('about:blank'); // a full load, not a hash change the open app could rewrite
  await page.goto(link(experiment({ model: { kind: 'bundled', name: 'nope260K' } })));
  await expect(page.getByTestId('experiment-notice-what')).toHaveText('The experiment\'s model could not be loaded', { timeout: 120_000 });
  await expect(page.getByTestId('experiment-notice-why')).toContainText('nope260K');
  await expect(page.getByTestId('prompt')).toHaveValue(PROMPT);
  await expect(page.getByTestId('model-info')).toContainText('stories260K', { timeout: 120_000 });
  await page.getByTestId('analyse').click();
  await waitAnalysed(page);
});

/** The restored experiment as the margin view shows it: inputs, interventions and the heatmap's numbers. */
async function shown(page: Page) {
  await expect(page.getByTestId('prompt')).toHaveValue(PROMPT);
  await expect(page.getByTestId('good-future')).toHaveValue(' happy');
  await expect(page.getByTestId('bad-future')).toHaveValue(' sad');
  await expect(page.getByTestId('intervention-list')).toContainText(HOOK);
  await page.getByTestId('show-tables').check();
  return {
    steered: parseShown(await page.getByTestId('final-margin-last').textContent()),
    unsteered: parseShown(await page.getByTestId('final-margin-last-unsteered').textContent()),
    cells: await page.getByTestId('margin-table').locator('[data-testid^="margin-cell-"]').allTextContents(),
  };
}

test('offline: once opened, the link reloads and reruns with the network off, from the service worker\'s cache', async ({ page, context }) => {
  page.on('pageerror', (e) => console.log(`[page error] ${e.message}`));
  await page.goto(link(experiment()));
  await waitAnalysed(page);
  const online = await shown(page);
  expect(Math.abs(online.steered - want.steered), `steered margin vs the engine in Node ${want.steered}`).toBeLessThanOrEqual(1e-3);
  expect(Math.abs(online.unsteered - want.unsteered)).toBeLessThanOrEqual(1e-3);
  expect(online.cells.length).toBeGreaterThan(10);
  // The service worker has precached the shell and the bundled model once it is active.
  expect(await page.evaluate(async () => (await navigator.serviceWorker.ready).active?.scriptURL)).toBe(`${site.url}sw.js`);

  await context.setOffline(true);
  site.offline = true;
  const seen = site.log.length;
  try {
    await page.reload();
    await waitAnalysed(page);
    const offline = await shown(page);
    // The reload loaded the model and reran the experiment offline: the same inputs and numbers.
    expect(offline).toEqual(online);
    expect(site.log.slice(seen), 'requests that reached the server while offline').toEqual([]);
  } finally {
    site.offline = false;
    await context.setOffline(false);
  }
});

// These three were missing from the hand-kept list of restorable views (issue 22): saved on them, an experiment reopened on the margin heatmap.
for (const name of ['patching', 'report', 'sae']) {
  test(`an experiment saved on the ${name} view reopens on it (views/registry.ts)`, async ({ page }) => {
    page.on('pageerror', (e) => console.log(`[page error] ${e.message}`));
    await page.goto(link(experiment({ interventions: [], vectors: [], view: { name } })));
    await expect(page.getByTestId(`${name}-view`)).toBeVisible({ timeout: 120_000 });
    await expect(page.getByTestId(`tab-${name}`)).toHaveAttribute('aria-selected', 'true');
    await settled(page);
    await expect(page.getByTestId('margin-view')).toHaveCount(0);
  });
}

test('the saved sink threshold ε and heatmap colour scale are applied on restore, and a new ε is saved in the link', async ({ page }) => {
  page.on('pageerror', (e) => console.log(`[page error] ${e.message}`));
  const view = { name: 'sinks', showTables: true, showDifference: false, sinkEps: 0.1, heatmapScale: 'max' };
  await page.goto(link(experiment({ interventions: [], vectors: [], view })));
  await expect(page.getByTestId('sink-view')).toBeVisible({ timeout: 120_000 });
  await settled(page);
  await expect(page.getByTestId('sink-eps')).toHaveValue('0.1');
  await expect(page.getByTestId('sink-view')).toContainText('α₀ > ε = 0.1');
  // Each layer's sink rate is the fraction of its heads with α₀ > 0.1 (read off the α₀ table).
  const alpha = page.getByTestId('sink-view').locator('[data-testid^="alpha0-cell-"]');
  const cells = await alpha.evaluateAll((els) => els.map((e) => [e.getAttribute('data-testid')!, e.textContent ?? '']));
  const rates = (await page.getByTestId('sink-rate-table').locator('td').allTextContents()).map(Number);
  rates.forEach((rate, l) => {
    const heads = cells.filter(([id]) => id.startsWith(`alpha0-cell-${l}-`)).map(([, t]) => parseShown(t));
    expect(rate, `layer ${l}`).toBeCloseTo(heads.filter((a) => a > 0.1).length / heads.length, 2);
  });

  await page.getByTestId('tab-margins').click();
  await expect(page.getByTestId('heatmap-scale')).toHaveValue('max');
  const margins = (await page.getByTestId('margin-table').locator('[data-testid^="margin-cell-"]').allTextContents()).map(parseShown);
  const max = Math.max(...margins.map(Math.abs));
  await expect(page.getByTestId('margin-scale-note')).toContainText(`scale ±${max.toFixed(2)}: largest |Δ|`);
  await page.getByTestId('heatmap-scale').selectOption('robust');
  await expect(page.getByTestId('margin-scale-note')).toContainText('98th percentile of |Δ|');

  await page.getByTestId('tab-sinks').click();
  await page.getByTestId('sink-eps').fill('0.5');
  await page.getByTestId('sink-eps-apply').click();
  await expect(page.getByTestId('sink-view')).toContainText('α₀ > ε = 0.5', { timeout: 120_000 });
  await expect.poll(() => page.evaluate(() => localStorage.getItem('branchpoint.experiment') ?? '')).toMatch(/"sinkEps": ?0\.5.*"heatmapScale": ?"robust"/s);
});

test('version 2: the activations view\'s hook, the token selection and the colour scale are restored, recaptured, and saved again', async ({ page }) => {
  page.on('pageerror', (e) => console.log(`[page error] ${e.message}`));
  const LILY = 'Lily and Tom went to the park. Lily gave the ball to';
  const golden = referencePrompt(LILY);
  const ref = readTensors(path.join(STORIES, 'reference', `${golden.name}.safetensors`)).get('resid_post')!;
  const [, TP, D] = ref.shape;
  const view = { name: 'activations', heatmapScale: 'max', hook: 'blocks.2.hook_resid_post', selection: { start: 2, end: 5 } };
  await page.goto(link(experiment({ version: 2, prompt: LILY, good: { mode: 'text', value: ' Tom' }, bad: { mode: 'text', value: ' Lily' }, interventions: [], vectors: [], view })));
  await expect(page.getByTestId('activations-heatmap')).toBeVisible({ timeout: 120_000 });
  await settled(page);
  await expect(page.getByTestId('activations-hook')).toHaveValue('blocks.2.hook_resid_post');
  await expect(page.getByTestId('activations-scale')).toHaveValue('max');
  await expect(page.getByTestId('activations-shape')).toContainText(`blocks.2.hook_resid_post: [3 tokens, ${D} values]`);
  await expect(page.getByTestId('activations-shape')).toContainText('tokens 2–4 (the selection on the token strip)');
  await expect(page.getByTestId('activations-shape')).toContainText('largest |value|');
  // The .npy holds exactly the selected rows of the golden resid_post of layer 2.
  const npy = readNpy((await save(page, page.getByTestId('activations-view'), '.npy')).bytes);
  expect(npy.shape).toEqual([3, D]);
  let worst = 0;
  for (let i = 0; i < 3; i++) for (let d = 0; d < D; d++) worst = Math.max(worst, Math.abs(npy.data[i * D + d] - ref.data[(2 * TP + 2 + i) * D + d]));
  expect(worst, 'selected rows vs golden resid_post').toBeLessThanOrEqual(1e-3);

  // A new hook and selection go into the link and local storage, and come back after a reload.
  await page.getByTestId('activations-hook').selectOption('blocks.1.hook_mlp_out');
  await expect.poll(() => page.evaluate(() => localStorage.getItem('branchpoint.experiment') ?? '')).toMatch(/"hook": ?"blocks\.1\.hook_mlp_out"/);
  const stored = JSON.parse(await page.evaluate(() => localStorage.getItem('branchpoint.experiment')!)) as { version: number; view: { selection: unknown } };
  expect(stored.version).toBe(3); // a version-2 link opens, and is saved again in the current version
  expect(stored.view.selection).toEqual({ start: 2, end: 5 });
  await page.reload();
  await expect(page.getByTestId('activations-shape')).toContainText('blocks.1.hook_mlp_out: [3 tokens', { timeout: 120_000 });
  await expect(page.getByTestId('activations-hook')).toHaveValue('blocks.1.hook_mlp_out');
});

test('SAE feature interventions travel in the link: a Hub SAE is loaded again and its clamp is on; a local one is named and left off', async ({ page }) => {
  page.on('pageerror', (e) => console.log(`[page error] ${e.message}`));
  const hub = await startMockHub({ cors: true, repos: { 'bp-test/saes': { revisions: { main: path.join(SHARED, 'saes') } } } });
  try {
    const LILY = 'Lily and Tom went to the park. Lily gave the ball to';
    const HOOK2 = 'blocks.2.hook_resid_post';
    const saes = [
      { source: { kind: 'hub', repo: 'bp-test/saes', path: 'stories260K-blocks.2.hook_resid_post-relu', revision: 'main', endpoint: hub.url }, hook: HOOK2, label: 'relu SAE' },
      { source: { kind: 'local', name: 'my-sae (local folder)' }, hook: HOOK2, label: 'my-sae (local folder)' },
    ];
    // Clamp every SAE feature the last token uses hardest to a large value: the margin must move.
    const interventions = [
      { hook: HOOK2, type: 'sae_clamp', dose: 50, sae: { index: 0, feature: 45 }, positions: 'all' },
      { hook: HOOK2, type: 'sae_clamp', dose: 5, sae: { index: 1, feature: 3 }, positions: 'all' },
    ];
    await page.goto(link(experiment({ version: 2, prompt: LILY, good: { mode: 'text', value: ' Tom' }, bad: { mode: 'text', value: ' Lily' }, vectors: [], saes, interventions })));
    await waitAnalysed(page);
    await expect(page.getByTestId('intervention-1')).toHaveAttribute('data-enabled', 'true');
    await expect(page.getByTestId('intervention-1')).toContainText('SAE feature 45');
    await expect(page.getByTestId('intervention-2')).toHaveAttribute('data-enabled', 'false');
    await expect(page.getByTestId('experiment-notice-what')).toHaveText('Some SAE feature interventions are switched off');
    await expect(page.getByTestId('experiment-notice-why')).toContainText('#2 (clamp feature 3): the local my-sae (local folder) was opened from this computer\'s files');
    const steered = parseShown(await page.getByTestId('final-margin-last').textContent());
    const unsteered = parseShown(await page.getByTestId('final-margin-last-unsteered').textContent());
    console.log(`clamp f45 = 50 at ${HOOK2}: final margin ${steered} (unsteered ${unsteered})`);
    expect(Math.abs(steered - unsteered), 'the restored clamp changes the margin').toBeGreaterThan(0.05);
    expect(hub.log.some((r) => r.url.includes('stories260K-blocks.2.hook_resid_post-relu/cfg.json')), 'the SAE came from the Hub folder the link names').toBe(true);

    // The link the app writes back names the Hub SAE and the feature again (and never a token).
    await expect.poll(() => page.evaluate(() => localStorage.getItem('branchpoint.experiment') ?? '')).toMatch(/"feature": ?45/);
    const stored = JSON.parse(await page.evaluate(() => localStorage.getItem('branchpoint.experiment')!)) as { saes: { source: { kind: string; repo?: string; path?: string } }[]; interventions: { sae: { index: number; feature: number } | null }[] };
    const i = stored.interventions[0].sae!.index;
    expect(stored.saes[i].source).toMatchObject({ kind: 'hub', repo: 'bp-test/saes', path: 'stories260K-blocks.2.hook_resid_post-relu' });
    expect(stored.interventions[0].sae!.feature).toBe(45);
  } finally {
    await hub.close();
  }
});
