import { test, expect } from '@playwright/test';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { SHARED } from './golden';
import { CpuBackend } from '../workers/engine/backend/cpu';
import { Engine } from '../workers/engine/engine';
import { NodeFiles } from '../workers/engine/io/node_files';
import { decisionReportPair } from '../workers/engine/studies/report_pair';
import { open, settled } from './app_page';
import { parseCsv, save, savedFigure } from './export_files';

/**
 * The Compare view on the production build (WebGPU on SwiftShader), with the bundled pair: model A
 * stories260K, model B stories260K-happy-ft (fine-tuned only in block 3's MLP). On an emotional
 * context from its finetune.json the weight diff marks block 3's gate/up/down and nothing else, and
 * the cross-model patching puts the whole change at block 3's mlp_out (r = 1) with r = 0 upstream;
 * the figure exports as one SVG/PNG; a link with model B reopens both models on the Compare view.
 * With model B loaded the Report view builds the decision-point report on both (B − A as the engine
 * computes it on the CPU here), and the Compare view's steering transfer finds the CAA vectors equal
 * (cos = 1 exactly) upstream of block 3.
 */
const SHOTS = '.artifacts/screenshots';
const FT = JSON.parse(fs.readFileSync('public/models/stories260K-happy-ft/finetune.json', 'utf8')) as { held_out_contexts: string[]; target: string; foil: string };
const PROMPT = FT.held_out_contexts.find((c) => c.startsWith('Lucy got a new ball'))!;

test('Compare: load model B, weight diff marks block 3\'s MLP, cross-model patching finds it, the figure exports, a link reopens both', async ({ page }) => {
  await page.setViewportSize({ width: 1280, height: 800 });
  await open(page);
  await page.getByTestId('prompt').fill(PROMPT);
  await page.getByTestId('good-future').fill(FT.target);
  await page.getByTestId('bad-future').fill(' sad');
  await page.getByTestId('tab-compare').click();
  const view = page.getByTestId('compare-view');
  await expect(page.getByTestId('compare-need-b')).toBeVisible();
  await expect(page.getByTestId('b-model-select')).toHaveValue('stories260K-happy-ft');
  await page.getByTestId('b-load-local').click();
  await expect(page.getByTestId('model-b-badge')).toHaveAttribute('data-status', 'ready', { timeout: 120_000 });
  await expect(page.getByTestId('model-b-badge')).toContainText('stories260K-happy-ft');
  await settled(page);
  await page.getByTestId('run-compare').click();
  await expect(page.getByTestId('compare-caption')).toBeVisible({ timeout: 240_000 });
  await settled(page);

  // weight diff: block 3's MLP marked, everything else exactly 0
  await expect(page.getByTestId('compare-weights-changed')).toHaveText(/Weights differ only in: block 3 gate, block 3 up, block 3 down; every other module is exactly 0/);
  await expect(page.getByTestId('compare-weights')).toHaveAttribute('data-marked', 'L3 gate, L3 up, L3 down');
  await expect(page.getByTestId('compare-globals')).toContainText('embed 0 (identical)');
  // cross-model patching, B into A: the change enters at block 3's mlp_out
  await expect(page.getByTestId('compare-patch-summary')).toContainText('the first patch that carries the change (B’s decision in A’s run) is mlp_out of block 3 (r = 1.0000)');
  await expect(page.getByTestId('compare-mismatch')).toHaveCount(0);
  await page.screenshot({ path: `${SHOTS}/compare-1280x800.png` });
  await page.screenshot({ path: `${SHOTS}/compare-full.png`, fullPage: true });
  await page.getByTestId('compare-weights').screenshot({ path: `${SHOTS}/compare-weights.png` });
  await page.getByTestId('compare-lens-diff').screenshot({ path: `${SHOTS}/compare-lens-diff.png` });
  await page.getByTestId('compare-patch').screenshot({ path: `${SHOTS}/compare-patch.png` });

  // CSV: every cell of every grid
  const csv = parseCsv((await save(page, view, 'CSV')).bytes.toString('utf8'));
  expect(csv[0]).toEqual(['grid', 'row', 'column', 'value']);
  const weights = csv.filter((r) => r[0].startsWith('Weight diff'));
  expect(weights.length).toBeGreaterThanOrEqual(5 * 9);
  for (const [, row, col, v] of weights) {
    if (row === 'L3' && ['gate', 'up', 'down'].includes(col)) expect(Number(v), `${row} ${col}`).toBeGreaterThan(0);
    else expect(Number(v), `${row} ${col}`).toBe(0);
  }
  const patch = csv.filter((r) => r[0].startsWith('Cross-model patching, B into A: recovery per hook'));
  const r = (row: string, col: string) => Number(patch.find((x) => x[1] === row && x[2] === col)![3]);
  expect(Math.abs(r('L3', 'mlp_out') - 1)).toBeLessThan(1e-4);
  for (const row of ['L0', 'L1', 'L2']) for (const col of ['resid_pre', 'attn_out', 'mlp_out', 'z (all heads)']) expect(Math.abs(r(row, col)), `${row} ${col}`).toBeLessThan(1e-6);
  expect(Math.abs(r('L3', 'attn_out'))).toBeLessThan(1e-6);

  // one figure: weight diff, lens A / B / B − A, sinks and patching panels in one SVG (and the PNG of it)
  const fig = await savedFigure(page, view, 'compare', 'g.heatmap', ['data-rows', 'data-cols'], { shots: SHOTS });
  expect(fig.items.length).toBeGreaterThanOrEqual(8);
  expect(fig.texts.join(' ')).toContain('Weight diff');
  expect(fig.texts.join(' ')).toContain('Cross-model patching, B into A');
  const json = JSON.parse((await save(page, view, 'JSON')).bytes.toString('utf8')) as { weight_diff: Record<string, unknown>; cross_patch: Record<string, number[]> };
  expect((json.weight_diff.gate as number[])[3]).toBeGreaterThan(0);
  expect(Math.abs(json.cross_patch.mlp_out[3] - 1)).toBeLessThan(1e-4);

  // the link carries model B and reopens both, on the Compare view, rerun
  await expect.poll(() => page.evaluate(() => localStorage.getItem('branchpoint.experiment') ?? '')).toContain('"modelB"');
  const url = page.url();
  expect(url).toContain('#x=');
  const page2 = await page.context().newPage();
  await page2.evaluate(() => localStorage.clear()).catch(() => undefined);
  await open(page2, url);
  await expect(page2.getByTestId('model-b-badge')).toHaveAttribute('data-status', 'ready', { timeout: 120_000 });
  await expect(page2.getByTestId('compare-view')).toBeVisible();
  await expect(page2.getByTestId('compare-weights-changed')).toContainText('block 3 gate, block 3 up, block 3 down', { timeout: 240_000 });
  await expect(page2.getByTestId('prompt')).toHaveValue(PROMPT);
});

test('Compare with a model B of another tokenizer (aidreams260K from a folder): what differs, and each model\'s lens labelled', async ({ page }) => {
  await page.setViewportSize({ width: 1280, height: 800 });
  await open(page);
  await page.getByTestId('prompt').fill(PROMPT);
  await page.getByTestId('good-future').fill(FT.target);
  await page.getByTestId('bad-future').fill(' sad');
  await page.getByTestId('tab-compare').click();
  await page.getByTestId('b-folder-input').setInputFiles(path.join(SHARED, 'models', 'aidreams260K'));
  await expect(page.getByTestId('model-b-badge')).toHaveAttribute('data-status', 'ready', { timeout: 120_000 });
  await expect(page.getByTestId('model-b-badge')).toContainText('aidreams260K');
  await settled(page);
  await page.getByTestId('run-compare').click();
  await expect(page.getByTestId('compare-mismatch')).toBeVisible({ timeout: 120_000 });
  await settled(page);
  await expect(page.getByTestId('compare-mismatch')).toContainText('vocabulary');
  await expect(page.getByTestId('compare-lens-a')).toContainText('model A (stories260K)');
  await expect(page.getByTestId('compare-lens-b')).toContainText('model B (aidreams260K');
  await expect(page.getByTestId('compare-lens-diff')).toHaveCount(0);
  await expect(page.getByTestId('compare-weights')).toHaveCount(0);
  await page.screenshot({ path: `${SHOTS}/compare-mismatch-1280x800.png`, fullPage: true });
});

test('Report on A and B side by side, and steering transfer: B − A as the CPU engine computes it; CAA cosine 1 exactly at L0–L2', async ({ page }) => {
  const CLEAN = PROMPT, CORRUPT = 'Lucy got a new ball. She saw a';
  const [a, b] = [await Engine.load(new NodeFiles(path.join(SHARED, 'models', 'stories260K')), new CpuBackend()), await Engine.load(new NodeFiles(path.join(SHARED, 'models', 'stories260K-happy-ft')), new CpuBackend())];
  const want = await decisionReportPair(a, b, { clean: CLEAN, corrupt: CORRUPT, good: { text: FT.target }, bad: { text: ' sad' } });
  a.dispose(); b.dispose();
  await page.setViewportSize({ width: 1280, height: 800 });
  await open(page);
  await page.getByTestId('prompt').fill(PROMPT);
  await page.getByTestId('good-future').fill(FT.target);
  await page.getByTestId('bad-future').fill(' sad');
  await page.getByTestId('tab-compare').click();
  await page.getByTestId('b-load-local').click();
  await expect(page.getByTestId('model-b-badge')).toHaveAttribute('data-status', 'ready', { timeout: 120_000 });
  await settled(page);
  await page.getByTestId('tab-patching').click();
  await page.getByTestId('patching-clean').fill(CLEAN);
  await page.getByTestId('patching-corrupt').fill(CORRUPT);
  await page.getByTestId('tab-report').click();
  await page.getByTestId('run-report-pair').click();
  await expect(page.getByTestId('report-pair-table')).toBeVisible({ timeout: 120_000 });
  await settled(page);
  const d = want.difference;
  await expect(page.getByTestId('report-pair-visible-diff')).toHaveAttribute('data-value', String(d.visibleLayer.value ?? 'none'));
  await expect(page.getByTestId('report-pair-causal-diff')).toHaveAttribute('data-value', String(d.causalLayer.value ?? 'none'));
  const rowName = (r: number | null) => (r === null ? 'never' : r === 0 ? 'embed' : `L${r - 1}`);
  await expect(page.getByTestId('report-pair-visible-a')).toHaveText(rowName(want.a.visible.layer));
  await expect(page.getByTestId('report-pair-visible-b')).toHaveText(rowName(want.b.visible.layer));
  await expect(page.getByTestId('report-pair-ponr-diff')).toHaveText('not computed');
  await expect(page.getByTestId('report-pair-figure-a')).toBeVisible();
  await expect(page.getByTestId('report-pair-figure-b')).toBeVisible();
  await page.getByTestId('report-pair').scrollIntoViewIfNeeded();
  await page.screenshot({ path: `${SHOTS}/report-pair-1280x800.png` });
  const json = JSON.parse((await save(page, page.getByTestId('report-pair'), 'JSON')).bytes.toString('utf8')) as { difference: { visible_layer: { value: number | null } } };
  expect(json.difference.visible_layer.value).toBe(d.visibleLayer.value);

  // steering transfer on the shipped happy / sad set
  await page.getByTestId('tab-compare').click();
  await page.getByTestId('transfer-set-example').selectOption({ index: 1 });
  await page.getByTestId('transfer-set-load-example').click();
  await page.getByTestId('run-transfer').click();
  await expect(page.getByTestId('transfer-table')).toBeVisible({ timeout: 120_000 });
  await settled(page);
  for (const l of [0, 1, 2]) await expect(page.getByTestId(`transfer-cos-${l}`)).toHaveText('1 (exact)');
  for (const l of [3, 4]) await expect(page.getByTestId(`transfer-cos-${l}`)).not.toHaveText('1 (exact)');
  await page.getByTestId('transfer').scrollIntoViewIfNeeded();
  await page.screenshot({ path: `${SHOTS}/transfer-1280x800.png` });
});
