import { test, expect, type Page } from '@playwright/test';
import * as path from 'node:path';
import { open, analysed, settled, buildCaa } from './app_page';
import { SHARED, parseShown } from './golden';
import { expectClose, readNpy, save, savedCsv, savedFigure } from './export_files';

/**
 * Every other view's exports as a user saves them (exports.spec.ts covers margins, sinks and
 * generation): each SVG parses and carries the values it plots, its PNG is 2× its size, and its CSV
 * holds the numbers the view shows (its data tables, readouts and chart points). Runs are kept cheap
 * on the bundled stories260K: 2 layers × 2 doses, a 4-token window and trunk, 10 batch prompts.
 */
const SHOTS = '.artifacts/screenshots';
const HOOK = 'blocks.3.hook_resid_post';
/** Tables show 4 decimals; the files carry full precision. */
const SHOWN = 5e-5;

/** Numbers of a data table column by its cells' test ids. */
const shownColumn = async (page: Page, ids: string[]) => Promise.all(ids.map(async (id) => parseShown(await page.getByTestId(id).textContent())));
const nums = (xs: readonly string[]) => xs.map(Number);
const range = (n: number) => Array.from({ length: n }, (_, i) => i);

test('one-prompt views (norms, activations, dose–response, window, patching, report, branches) export SVG, PNG and CSV holding the numbers shown', async ({ page }) => {
  await page.setViewportSize({ width: 1400, height: 1000 });
  await open(page);
  await page.getByTestId('show-tables').check();
  await page.getByTestId('analyse').click();
  await analysed(page);

  // Residual norms: one rect per (layer, token) holding ‖h‖; the CSV is the table on screen.
  await page.getByTestId('tab-norms').click();
  const norms = page.getByTestId('norms-view');
  const nf = await savedFigure(page, norms, 'norms', 'rect.cell', ['data-row', 'data-col', 'data-value'], { shots: SHOTS });
  const ncsv = await savedCsv(page, norms);
  const T = ncsv.header.length - 1;
  expect(nf.items).toHaveLength(ncsv.rows.length * T);
  for (const [r, c, v] of nf.items) expectClose([Number(v)], [Number(ncsv.rows[Number(r)][1 + Number(c)])], 1e-5, `norms SVG cell ${r},${c}`);
  for (const l of [0, ncsv.rows.length - 1]) expectClose(nums(ncsv.rows[l].slice(1)), await shownColumn(page, range(T).map((t) => `norm-cell-${l}-${t}`)), SHOWN, `norms CSV row ${l} vs table`);

  // Activations: the heatmap's cells, the CSV and the .npy hold the same [tokens, d_model] values.
  await page.getByTestId('tab-activations').click();
  await page.getByTestId('activations-hook').selectOption(HOOK);
  await page.getByTestId('activations-capture').click();
  await expect(page.getByTestId('activations-heatmap')).toBeVisible({ timeout: 120_000 });
  const acts = page.getByTestId('activations-view');
  const npy = readNpy((await save(page, acts, '.npy')).bytes);
  const [AT, AD] = npy.shape;
  expect(AT).toBe(T);
  const af = await savedFigure(page, acts, 'activations', 'rect.cell', ['data-row', 'data-col', 'data-value'], { shots: SHOTS });
  expect(af.items).toHaveLength(AT * AD);
  expect(af.texts.join(' ')).toContain(HOOK);
  for (const [r, c, v] of af.items) expectClose([Number(v)], [npy.data[Number(r) * AD + Number(c)]], 1e-5, `activations SVG cell ${r},${c} vs .npy`);
  const acsv = await savedCsv(page, acts);
  expectClose(acsv.rows.flatMap((row) => nums(row.slice(1))), Array.from(npy.data), 1e-6, 'activations CSV vs .npy');

  // A CAA vector at HOOK (the happy/sad set), placed as an intervention for the window.
  await buildCaa(page, HOOK);
  await expect(page.getByTestId('library-row-0')).toBeVisible();

  // Dose–response: both charts (margin and KL) are in the file, each point carrying the CSV's value.
  await page.getByTestId('tab-dose').click();
  await page.getByTestId('sweep-vector').selectOption({ index: 1 });
  await page.getByTestId('sweep-layers').fill('1,3');
  await page.getByTestId('sweep-doses').fill('0,8');
  await page.getByTestId('run-sweep').click();
  await settled(page);
  const dose = page.getByTestId('dose-view');
  const dm = await savedFigure(page, dose, 'dose-response', '[data-testid="dose-margin-chart"] g.series circle', ['data-x', 'data-y'], { shots: SHOTS });
  const dk = await savedFigure(page, dose, 'dose-response', '[data-testid="dose-kl-chart"] g.series circle', ['data-x', 'data-y']);
  expect(dm.texts.join(' ')).toContain('KL from the unsteered next-token distribution');
  const dcsv = await savedCsv(page, dose);
  expect(dcsv.header[3]).toContain('steered margin Δ');
  expect(dcsv.rows).toHaveLength(4);
  expectClose(dm.items.map(([x]) => Number(x)), nums(dcsv.rows.map((r) => r[2])), 0, 'dose-response doses');
  expectClose(dm.items.map(([, y]) => Number(y)), nums(dcsv.rows.map((r) => r[3])), 1e-6, 'dose-response margin chart vs CSV');
  expectClose(dk.items.map(([, y]) => Number(y)), nums(dcsv.rows.map((r) => r[4])), 1e-6, 'dose-response KL chart vs CSV');
  expectClose(nums(dcsv.rows.map((r) => r[3])), await shownColumn(page, [0, 1].flatMap((li) => [0, 1].map((di) => `sweep-margin-${li}-${di}`))), SHOWN, 'dose-response CSV vs margin table');
  expectClose(nums(dcsv.rows.map((r) => r[4])), await shownColumn(page, [0, 1].flatMap((li) => [0, 1].map((di) => `sweep-kl-${li}-${di}`))), SHOWN, 'dose-response CSV vs KL table');

  // Intervention window: add α = 6 at HOOK, 4 new tokens; the outcome per k in the chart, CSV and table.
  await page.getByTestId('add-intervention').click();
  await page.getByTestId('editor-hook').selectOption(HOOK);
  await page.getByTestId('editor-type').selectOption('add');
  await page.getByTestId('editor-dose').fill('6');
  await page.getByTestId('tab-window').click();
  await page.getByTestId('window-n').fill('4');
  await page.getByTestId('run-window').click();
  await settled(page);
  const win = page.getByTestId('window-view');
  const wf = await savedFigure(page, win, 'window', '[data-testid="window-chart"] g.series[data-series="steered from step k"] circle', ['data-x', 'data-y'], { shots: SHOTS });
  const wcsv = await savedCsv(page, win);
  const steps = wcsv.rows.filter((r) => r[0] !== 'unsteered');
  expect(steps.length).toBeGreaterThan(1);
  expectClose(wf.items.map(([x]) => Number(x)), nums(steps.map((r) => r[0])), 0, 'window k');
  expectClose(wf.items.map(([, y]) => Number(y)), nums(steps.map((r) => r[1])), 1e-6, 'window chart vs CSV');
  expectClose(nums(steps.map((r) => r[1])), await shownColumn(page, steps.map((_, i) => `window-cell-${i}-0`)), SHOWN, 'window CSV vs table');

  // Patching (README's Lily/Tom pair at resid_pre: the view followed the happy/sad prompt, so pick the example): one rect per (layer, position) plus the whole-layer column.
  await page.getByTestId('tab-patching').click();
  await page.getByTestId('patching-example').click();
  await page.getByTestId('run-patching').click();
  await settled(page);
  const patch = page.getByTestId('patching-view');
  const pf = await savedFigure(page, patch, 'patching', 'rect.cell', ['data-row', 'data-col', 'data-value'], { shots: SHOTS });
  const pcsv = await savedCsv(page, patch);
  expect(pcsv.header[4]).toBe('recovery r');
  const cells = pcsv.rows.filter((r) => r[1] !== 'all'), whole = pcsv.rows.filter((r) => r[1] === 'all');
  const nL = whole.length, nC = cells.length / nL;
  expect(pf.items).toHaveLength(nL * (nC + 1));
  for (const [r, c, v] of pf.items) {
    const [l, p] = [Number(r), Number(c)];
    const want = p === nC ? Number(whole[l][4]) : Number(cells[l * nC + p][4]);
    expectClose([Number(v)], [want], 1e-5, `patching SVG cell ${l},${p} vs CSV`);
  }
  expectClose(nums(cells.slice(0, nC).map((r) => r[4])), await shownColumn(page, range(nC).map((p) => `patching-cell-0-${p}`)), SHOWN, 'patching CSV layer 0 vs table');
  expectClose(nums(whole.map((r) => r[4])), await shownColumn(page, range(nL).map((l) => `patching-cell-${l}-${nC}`)), SHOWN, 'patching CSV whole layers vs table');

  // Decision-point report (one prompt, with the window of the placed intervention): lens and recovery curves.
  await page.getByTestId('tab-report').click();
  await page.getByTestId('run-report').click();
  await settled(page);
  const rep = page.getByTestId('report-view');
  const rv = await savedFigure(page, rep, 'report', '[data-testid="report-panel-visible"] > circle', ['data-x', 'data-y'], { shots: SHOTS });
  const rc = await savedFigure(page, rep, 'report', '[data-testid="report-panel-causal"] > circle', ['data-x', 'data-y']);
  const rcsv = await savedCsv(page, rep);
  const layers = rcsv.rows.filter((r) => r[1] !== '');
  expectClose(rv.items.map(([, y]) => Number(y)), nums(layers.map((r) => r[1])), 1e-6, 'report lens curve vs CSV');
  const causal = layers.filter((r) => r[4] !== '');
  expectClose(rc.items.map(([, y]) => Number(y)), nums(causal.map((r) => r[4])), 1e-6, 'report recovery curve vs CSV');
  expectClose(nums(layers.map((r) => r[1])), await shownColumn(page, layers.map((_, l) => `report-cell-${l}-0`)), SHOWN, 'report CSV vs table');

  // Branches: a 4-token trunk; the tree node's value (final Δ) in the SVG equals the CSV's last margin and the readout.
  await page.getByTestId('tab-branches').click();
  await page.getByTestId('branch-max-new').fill('4');
  await page.getByTestId('branch-start').click();
  await settled(page);
  const br = page.getByTestId('branch-view');
  const bf = await savedFigure(page, br, 'branches', '[data-testid="tree-node-0"]', ['data-value'], { shots: SHOTS });
  const bcsv = await savedCsv(page, br);
  const trunk = bcsv.rows.filter((r) => r[0] === '0');
  expect(trunk).toHaveLength(4);
  expectClose([Number(bf.items[0][0])], [Number(trunk.at(-1)![7])], 1e-6, 'branch tree node 0 final Δ vs CSV');
  // its colour bar spans the tree's diverging scale: ±|final Δ| of the only node
  const treeBar = await savedFigure(page, br, 'branches-scale', 'g.color-scale', ['data-domain']);
  const v = Math.abs(Number(trunk.at(-1)![7]));
  expectClose(treeBar.items[0][0].split(' ').map(Number), [-v, v], 1e-3, 'branch tree colour bar domain');
  const hint = (await br.locator('p.hint').filter({ hasText: 'Selected: node 0' }).textContent()) ?? '';
  expectClose([Number(trunk.at(-1)![7])], [parseShown(/value (\S+)\./.exec(hint)![1])], 5e-4, 'branch CSV vs the value shown');
});

test('set views (probes, batch, SAE features) export SVG, PNG and CSV holding the numbers shown', async ({ page }) => {
  await page.setViewportSize({ width: 1400, height: 1000 });
  await open(page);
  await page.getByTestId('show-tables').check();

  // Probes (the shipped he/she set): the accuracy curve, the CSV and the table agree.
  await page.getByTestId('tab-probe').click();
  await page.getByTestId('probe-folds').fill('2');
  await page.getByTestId('run-probe').click();
  await settled(page);
  const probe = page.getByTestId('probe-view');
  const prf = await savedFigure(page, probe, 'probes', '[data-testid="probe-chart"] g.series[data-series="accuracy"] circle', ['data-x', 'data-y'], { shots: SHOTS });
  const prc = await savedCsv(page, probe);
  expect(prc.header[2]).toBe('held-out accuracy');
  expectClose(prf.items.map(([, y]) => Number(y)), nums(prc.rows.map((r) => r[2])), 1e-6, 'probe chart vs CSV');
  expectClose(nums(prc.rows.map((r) => r[2])), await shownColumn(page, prc.rows.map((_, i) => `probe-cell-${i}-0`)), 5e-4, 'probe CSV vs table');

  // Batch (first 10 rows of the distractor example): each plotted mean is the mean of the CSV's y column at that x.
  await page.getByTestId('tab-batch').click();
  await page.getByTestId('example-distractor').click();
  // the example's template and values arrive in one store update: wait on that state (its values file named), not on time
  await expect(page.getByTestId('batch-study-form')).toHaveAttribute('data-values-name', 'distractor.values.jsonl', { timeout: 30_000 });
  await expect(page.getByTestId('batch-template')).toHaveValue(/\{distractors\}/);
  const values = (await page.getByTestId('batch-values').inputValue()).split('\n').slice(0, 10).join('\n');
  await page.getByTestId('batch-values').fill(values);
  await page.getByTestId('run-batch').click();
  await settled(page);
  const batch = page.getByTestId('batch-view');
  const bf = await savedFigure(page, batch, 'batch', '[data-testid="interval-point"]', ['data-x', 'data-mean'], { shots: SHOTS });
  const bcsv = await savedCsv(page, batch);
  expect(bcsv.rows).toHaveLength(10);
  const [xCol, yCol] = [bcsv.header.indexOf(await page.getByTestId('batch-x').inputValue()), bcsv.header.indexOf(await page.getByTestId('batch-y').inputValue())];
  expect(xCol).toBeGreaterThanOrEqual(0);
  expect(yCol).toBeGreaterThanOrEqual(0);
  const xs = [...new Set(bcsv.rows.map((r) => Number(r[xCol])))].sort((a, b) => a - b);
  const means = xs.map((x) => { const ys = bcsv.rows.filter((r) => Number(r[xCol]) === x).map((r) => Number(r[yCol])); return ys.reduce((a, b) => a + b, 0) / ys.length; });
  expectClose(bf.items.map(([, m]) => Number(m)), means, 1e-6, 'batch plotted means vs CSV');

  // SAE features (the ReLU SAE of ../shared/saes): the per-token CSV equals the table; the pinned feature's heatmap cells equal its chips.
  await page.getByTestId('tab-sae').click();
  await page.getByTestId('sae-folder-input').setInputFiles(path.join(SHARED, 'saes', 'stories260K-blocks.2.hook_resid_post-relu'));
  await expect(page.getByTestId('sae-info')).toContainText('d_sae 256', { timeout: 60_000 });
  await page.getByTestId('sae-read').click();
  await expect(page.getByTestId('sae-token-table')).toBeVisible({ timeout: 120_000 });
  await page.getByTestId('sae-token-row').last().getByTestId('sae-chip').first().click();
  await expect(page.getByTestId('sae-feature')).toBeVisible({ timeout: 60_000 });
  await page.getByTestId('sae-pin').click();
  await expect(page.getByTestId('sae-heatmap')).toBeVisible();
  const sae = page.getByTestId('sae-view');
  const sf = await savedFigure(page, sae, 'sae', 'rect.cell', ['data-row', 'data-col', 'data-value'], { shots: SHOTS });
  const scsv = await savedCsv(page, sae);
  expect(nums(scsv.rows.map((r) => r[2]))).toEqual(nums(await page.getByTestId('sae-l0').allTextContents()));
  expectClose(nums(scsv.rows.map((r) => r[3])), nums(await page.getByTestId('sae-mse').allTextContents()), 5e-5, 'SAE CSV MSE vs table');
  expect(sf.items).toHaveLength(scsv.rows.length);
  const chips = await page.getByTestId('sae-max-token').evaluateAll((els) => els.map((el) => [Number(el.getAttribute('data-position')), el.textContent ?? ''] as const));
  expect(chips.length).toBeGreaterThan(0);
  for (const [pos, text] of chips) expectClose([Number(sf.items[pos][2])], [parseShown(text.split(' ').at(-1)!)], 1e-3, `SAE heatmap cell at ${pos} vs its chip`);
});
