import { test, expect } from '@playwright/test';
import * as fs from 'node:fs';
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { fileURLToPath } from 'node:url';
import { STORIES } from './golden';

/**
 * The decision-point report for the Lily/Tom name swap, opened in the UI (production build, WebGPU
 * on SwiftShader), agrees with `branchpoint report` run here on the CPU backend: visible row,
 * causal block and positions, and the per-layer curves.
 */
const CLEAN = 'Lily and Tom went to the park. Lily gave the ball to';
const CORRUPT = 'Tom and Lily went to the park. Lily gave the ball to';
const SHOTS = '.artifacts/screenshots';
interface RunnerReport { visible_layer: number | null; visible_token: number | null; causal_layer: number | null; causal_positions: number[]; lens_margin: number[]; max_recovery: number[]; label: string; point_of_no_return: number | null }
let want: RunnerReport;

test.beforeAll(async () => {
  fs.mkdirSync(SHOTS, { recursive: true });
  // The runner as a user runs it (bin/branchpoint.mjs, a child process).
  const bin = fileURLToPath(new URL('../bin/branchpoint.mjs', import.meta.url));
  const { stdout } = await promisify(execFile)(process.execPath, [bin, 'report', '--model', STORIES, '--clean', CLEAN, '--corrupt', CORRUPT, '--good', ' Tom', '--bad', ' Lily'], { maxBuffer: 64 << 20 });
  want = JSON.parse(stdout) as RunnerReport;
});

const num = (s: string | null) => Number((s ?? '').replace('−', '-'));

test('the Lily/Tom decision-point report shows the runner’s visible row, causal block and positions, and says it is one prompt', async ({ page }) => {
  page.on('pageerror', (e) => console.log(`[page error] ${e.message}`));
  await page.setViewportSize({ width: 1280, height: 1000 });
  await page.goto('/');
  await expect(page.getByTestId('model-info')).toContainText('stories260K', { timeout: 120_000 });
  await expect(page.getByTestId('progress')).toBeHidden({ timeout: 120_000 });
  await page.getByTestId('tab-report').click();
  await page.getByTestId('run-report').click();
  await expect(page.getByTestId('progress-detail')).toContainText('stages', { timeout: 60_000 });
  await expect(page.getByTestId('progress')).toBeHidden({ timeout: 120_000 });
  await expect(page.getByTestId('error-banner')).toBeHidden();

  await expect(page.getByTestId('report-label')).toContainText('one prompt');
  await expect(page.getByTestId('report-visible')).toHaveAttribute('data-layer', String(want.visible_layer ?? 'none'));
  await expect(page.getByTestId('report-visible')).toHaveAttribute('data-token', String(want.visible_token ?? 'none'));
  await expect(page.getByTestId('report-causal')).toHaveAttribute('data-layer', String(want.causal_layer ?? 'none'));
  await expect(page.getByTestId('report-causal')).toHaveAttribute('data-positions', want.causal_positions.join(' '));
  await expect(page.getByTestId('report-panel-visible')).toHaveAttribute('data-mark', String(want.visible_layer ?? 'none'));
  await expect(page.getByTestId('report-panel-causal')).toHaveAttribute('data-mark', String(want.causal_layer ?? 'none'));
  await expect(page.getByTestId('report-changeable')).toHaveAttribute('data-point', String(want.point_of_no_return ?? 'none'));
  await page.getByTestId('show-tables').check();
  for (let l = 0; l < want.lens_margin.length; l++) {
    expect(Math.abs(num(await page.getByTestId(`report-cell-${l}-0`).textContent()) - want.lens_margin[l]), `lens row ${l}`).toBeLessThan(2e-3);
    if (l < want.max_recovery.length) expect(Math.abs(num(await page.getByTestId(`report-cell-${l}-1`).textContent()) - want.max_recovery[l]) / Math.max(1, Math.abs(want.max_recovery[l]))).toBeLessThan(2e-2);
  }
  await page.getByTestId('show-tables').uncheck();
  const over = await page.evaluate(() => document.documentElement.scrollWidth - document.documentElement.clientWidth);
  expect(over).toBeLessThanOrEqual(0);
  await page.screenshot({ path: `${SHOTS}/report-lily-tom.png`, fullPage: true });
});
