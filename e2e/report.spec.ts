import { test, expect } from '@playwright/test';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { fileURLToPath } from 'node:url';
import { STORIES } from './golden';
import { open, settled } from './app_page';
import { CpuBackend } from '../workers/engine/backend/cpu';
import { Engine } from '../workers/engine/engine';
import { NodeFiles } from '../workers/engine/io/node_files';
import { probeLayers } from '../workers/engine/studies/probe';

/**
 * The decision-point report for the Lily/Tom name swap, opened in the UI (production build, WebGPU
 * on SwiftShader), agrees with `branchpoint report` run here on the CPU backend: visible row,
 * causal block and positions, per-layer curves; and, with a labelled set (six he/she prompts) and
 * the probe's girl − boy direction switched on from step k, the probe's first row at 95 % and the
 * window's outcome per step and point of no return.
 */
const CLEAN = 'Lily and Tom went to the park. Lily gave the ball to';
/** The Patching view's default corruption (" Tom" replaced: |Δ_clean − Δ_corrupt| = 1.31 nats, lib/patching_prompts.ts). */
const CORRUPT = 'Lily and dad went to the park. Lily gave the ball to';
const SET = { classes: ['girl', 'boy'] as [string, string], positive: ['Tom went to the park. Then', 'Ben found a big red ball. Then', 'Tim saw a little dog. Then'], negative: ['Lily went to the park. Then', 'Sue found a big red ball. Then', 'Mia saw a little dog. Then'] };
const HOOK = 'blocks.3.hook_resid_post';
const ALPHA = -20; // along mean(boy) − mean(girl): toward " Lily"
const N = 5;
const SHOTS = '.artifacts/screenshots';
interface RunnerReport {
  visible_layer: number | null; visible_token: number | null; causal_layer: number | null; causal_positions: number[]; lens_margin: number[]; max_recovery: number[]; label: string;
  point_of_no_return: number | null; first_layer_95: number | null; probe_accuracy: number[] | null; window_outcome: number[] | null; n_prompts: number;
}
let one: RunnerReport;
let full: RunnerReport;

test.beforeAll(async () => {
  fs.mkdirSync(SHOTS, { recursive: true });
  // The probe direction as the Probes view computes it (row 4 = blocks.3.hook_resid_post), here on the CPU.
  const e = await Engine.load(new NodeFiles(STORIES), new CpuBackend());
  const direction = Array.from((await probeLayers(e, SET)).directions[4]);
  e.dispose();
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'bp-report-e2e-'));
  fs.writeFileSync(path.join(dir, 'set.json'), JSON.stringify(SET));
  // The runner as a user runs it (bin/branchpoint.mjs, a child process).
  const bin = fileURLToPath(new URL('../bin/branchpoint.mjs', import.meta.url));
  const run = async (...extra: string[]) => JSON.parse((await promisify(execFile)(process.execPath, [bin, 'report', '--model', STORIES, '--clean', CLEAN, '--corrupt', CORRUPT, '--good', ' Tom', '--bad', ' Lily', ...extra], { maxBuffer: 64 << 20 })).stdout) as RunnerReport;
  one = await run();
  full = await run('--set', path.join(dir, 'set.json'), '--intervention', JSON.stringify({ hook: HOOK, type: 'add', vector: direction, alpha: ALPHA }), '--max-new-tokens', String(N));
  fs.rmSync(dir, { recursive: true, force: true });
});

const num = (s: string | null) => Number((s ?? '').replace('−', '-'));

test('the Lily/Tom decision-point report shows the runner’s visible row, causal block and positions, and says it is one prompt', async ({ page }) => {
  await page.setViewportSize({ width: 1280, height: 1000 });
  await open(page);
  await expect(page.getByTestId('backend-badge')).toHaveAttribute('data-kind', 'webgpu');
  // Patching prompts that are not the experiment's prompt: the report says so, and one click makes them follow it.
  await page.getByTestId('tab-patching').click();
  await page.getByTestId('patching-clean').fill('The little girl felt very');
  await page.getByTestId('tab-report').click();
  await expect(page.getByTestId('report-prompt-mismatch')).toContainText(`The experiment’s prompt is “${CLEAN}”`);
  await page.getByTestId('report-follow-prompt').click();
  await expect(page.getByTestId('report-prompt-mismatch')).toBeHidden();
  await expect(page.getByTestId('report-view')).toContainText(`Clean “${CLEAN}”, corrupted “${CORRUPT}”`);
  await page.getByTestId('run-report').click();
  await expect(page.getByTestId('progress-detail')).toContainText('stages', { timeout: 60_000 });
  await settled(page);
  await expect(page.getByTestId('report-denominator')).toBeHidden();

  await expect(page.getByTestId('report-label')).toContainText('one prompt');
  await expect(page.getByTestId('report-visible')).toHaveAttribute('data-layer', String(one.visible_layer ?? 'none'));
  await expect(page.getByTestId('report-visible')).toHaveAttribute('data-token', String(one.visible_token ?? 'none'));
  if (one.visible_token !== null) await expect(page.getByTestId('report-visible')).toContainText(`from position ${one.visible_token} (token “`);
  await expect(page.getByTestId('report-causal')).toHaveAttribute('data-layer', String(one.causal_layer ?? 'none'));
  await expect(page.getByTestId('report-causal')).toHaveAttribute('data-positions', one.causal_positions.join(' '));
  await expect(page.getByTestId('report-panel-visible')).toHaveAttribute('data-mark', String(one.visible_layer ?? 'none'));
  await expect(page.getByTestId('report-panel-causal')).toHaveAttribute('data-mark', String(one.causal_layer ?? 'none'));
  // not the trivial embed row (the embedding of the differing token swapped back): it is named apart
  expect(one.causal_layer).not.toBe(0);
  await expect(page.getByTestId('report-causal-trivial')).toContainText('the embed row (blocks.0.hook_resid_pre) is left out');
  // One naming in the text, on the figure's axis and in every view (lib/layer_names.ts): residual row r is "embed" (r = 0) or
  // "L{r−1}", the stream after block r − 1 (trials saw 'emb', 'block 0' and 'row N' for the same rows).
  if (one.causal_layer !== null) {
    const short = one.causal_layer === 0 ? 'embed' : `L${one.causal_layer - 1}`;
    await expect(page.getByTestId('report-panel-causal-answer')).toHaveText(`causal from ${short}`);
    await expect(page.getByTestId('report-causal')).toContainText(`${short} · blocks.${one.causal_layer}.hook_resid_pre`);
  }
  await expect(page.getByTestId('report-view')).not.toContainText(/\brow \d/);
  // Its positions list quotes each token as the token strip shows it (a "," token must not read as a separator).
  if (one.causal_positions.length) await expect(page.getByTestId('report-causal')).toContainText(new RegExp(`positions ${one.causal_positions[0]} “[^”]+”`));
  await expect(page.getByTestId('report-figure')).not.toContainText(/\bemb\b/);
  // No intervention placed, no set: the runner prints null, the view says what to do.
  expect([one.point_of_no_return, one.first_layer_95]).toEqual([null, null]);
  await expect(page.getByTestId('report-changeable')).toContainText('place an intervention');
  await expect(page.getByTestId('report-changeable')).not.toContainText('tick'); // 'Changeable' is ticked by default: only the missing intervention is named
  await expect(page.getByTestId('report-probe')).toContainText('Prompt set');
  await page.getByTestId('show-tables').check();
  for (let l = 0; l < one.lens_margin.length; l++) {
    expect(Math.abs(num(await page.getByTestId(`report-cell-${l}-0`).textContent()) - one.lens_margin[l]), `lens row ${l}`).toBeLessThan(2e-3);
    if (l < one.max_recovery.length) expect(Math.abs(num(await page.getByTestId(`report-cell-${l}-1`).textContent()) - one.max_recovery[l]) / Math.max(1, Math.abs(one.max_recovery[l]))).toBeLessThan(2e-2);
  }
  await page.getByTestId('show-tables').uncheck();
  const over = await page.evaluate(() => document.documentElement.scrollWidth - document.documentElement.clientWidth);
  expect(over).toBeLessThanOrEqual(0);
  await page.screenshot({ path: `${SHOTS}/report-lily-tom.png`, fullPage: true });
});

test('with a he/she prompt set and the probe’s direction on from step k: the probe’s first row, the window’s outcome per step and the point of no return agree with the runner', async ({ page }) => {
  await page.setViewportSize({ width: 1280, height: 1000 });
  await open(page);
  await expect(page.getByTestId('backend-badge')).toHaveAttribute('data-kind', 'webgpu');
  // The set, in the Probes view; its direction at blocks.3.hook_resid_post goes to the vector library.
  await page.getByTestId('tab-probe').click();
  await page.getByTestId('probe-positive').fill(SET.positive.join('\n'));
  await page.getByTestId('probe-negative').fill(SET.negative.join('\n'));
  await page.getByTestId('run-probe').click();
  await settled(page);
  await page.getByTestId('probe-direction-row').selectOption('4');
  await page.getByTestId('probe-send-direction').click();
  await page.getByTestId('add-intervention').click();
  await page.getByTestId('editor-hook').selectOption(HOOK);
  await page.getByTestId('editor-type').selectOption('add');
  await page.getByTestId('editor-dose').fill(String(ALPHA));
  const probeVector = await page.getByTestId('editor-vector').locator('option', { hasText: 'probe' }).getAttribute('value');
  await page.getByTestId('editor-vector').selectOption(probeVector!);
  // The report: the window's setup and the set, both in the form.
  await page.getByTestId('tab-report').click();
  await page.getByTestId('report-window-n').fill(String(N));
  await page.getByTestId('report-use-set').check();
  await expect(page.getByTestId('report-set-size')).toContainText('3 “boy” + 3 “girl”');
  await page.getByTestId('run-report').click();
  await settled(page);

  await expect(page.getByTestId('report-label')).toContainText(`${full.n_prompts} prompts`);
  await expect(page.getByTestId('report-visible')).toHaveAttribute('data-layer', String(full.visible_layer ?? 'none'));
  await expect(page.getByTestId('report-causal')).toHaveAttribute('data-layer', String(full.causal_layer ?? 'none'));
  expect(full.first_layer_95).not.toBeNull();
  await expect(page.getByTestId('report-probe')).toHaveAttribute('data-layer', String(full.first_layer_95));
  expect(full.point_of_no_return).not.toBeNull();
  await expect(page.getByTestId('report-changeable')).toHaveAttribute('data-point', String(full.point_of_no_return));
  await expect(page.getByTestId('report-panel-changeable')).toHaveAttribute('data-mark', String(full.point_of_no_return));
  await expect(page.getByTestId('report-extra')).toHaveAttribute('data-mark', String(full.first_layer_95));
  await page.getByTestId('show-tables').check();
  for (let l = 0; l < full.probe_accuracy!.length; l++) expect(Math.abs(num(await page.getByTestId(`report-cell-${l}-2`).textContent()) - full.probe_accuracy![l]), `probe row ${l}`).toBeLessThanOrEqual(1 / 6 + 1e-3);
  for (let k = 0; k < N; k++) expect(Math.abs(num(await page.getByTestId(`report-step-cell-${k}`).textContent()) - full.window_outcome![k]), `outcome k = ${k}`).toBeLessThan(2e-3);
  await page.getByTestId('show-tables').uncheck();
  await page.screenshot({ path: `${SHOTS}/report-set-window.png`, fullPage: true });
});
