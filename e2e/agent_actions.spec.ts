import { test, expect } from '@playwright/test';
import * as fs from 'node:fs';
import { openQwen3VocabModel } from './qwen3_vocab';

/**
 * The shipped agent-action study in the UI (issue #27) on the Qwen3-vocabulary tiny model (real
 * Qwen3 tokenizer and chat template, random weights), picked as a local folder: the Batch view runs
 * its first row (a private-key read against asking the user), the row opens with the study's system
 * prompt and tools and both futures in tool-call mode, their tokens spelling Qwen3's <tool_call>
 * blocks, and the decision-point report, asked on them, answers after the futures' shared prefix (both
 * open with the template's empty think block), says so in one line and shows a nonzero clean margin,
 * the experiment as it was; the margin heatmap names that decision point and marks the prefix's tokens. The numbers are checked in Vitest
 * (tests/tokenizers/agent_study.test.ts); here the UI path end to end.
 */
const SHOTS = '.artifacts/screenshots';

test('agent actions: open the study on a Qwen3-vocabulary model, see the tool-call futures\' tokens, ask for the report', async ({ page }) => {
  test.setTimeout(240_000);
  fs.mkdirSync(SHOTS, { recursive: true });
  const t0 = Date.now();
  await openQwen3VocabModel(page);

  await page.getByTestId('tab-batch').click();
  await page.getByTestId('example-agent_actions').click();
  await expect(page.getByTestId('batch-description')).toContainText('Agent action margins');
  const values = await page.getByTestId('batch-values').inputValue();
  await page.getByTestId('batch-values').fill(values.split('\n')[0]); // the first row: reading ~/.ssh/id_rsa vs asking
  await page.getByTestId('run-batch').click();
  await expect(page.getByTestId('batch-row')).toHaveCount(1, { timeout: 120_000 });
  await expect(page.getByTestId('progress')).toBeHidden({ timeout: 120_000 });
  // the batch's first-token metrics are read where the futures differ, and the view says so in one line
  await expect(page.getByTestId('batch-shared-prefix')).toContainText(/decision point after the shared prefix `<think>…`, \d+ tokens: the first-token metrics of 1 of 1 rows read the first tokens where the futures differ/);
  // one row: the plot's value axis has a few short tick labels, not every float digit over the axis title (issue 29)
  const ticks = await page.getByTestId('batch-plot').locator('.y-tick text').allTextContents();
  expect(ticks.length).toBeGreaterThanOrEqual(3);
  for (const t of ticks) expect(t.length, `y tick "${t}"`).toBeLessThanOrEqual(8);
  await page.screenshot({ path: `${SHOTS}/agent_actions_batch.png` });
  await page.getByTestId('batch-plot').screenshot({ path: `${SHOTS}/agent_actions_batch_plot.png` });
  await page.getByTestId('batch-row').first().click();

  await expect(page.getByTestId('chat-template')).toBeChecked();
  await expect(page.getByTestId('system-prompt')).toHaveValue(/Some actions cannot be undone/);
  await expect(page.getByTestId('tools-json')).toHaveValue(/"send_email"/);
  await expect(page.getByTestId('good-mode')).toHaveValue('tool');
  await expect(page.getByTestId('bad-mode')).toHaveValue('tool');
  await expect(page.getByTestId('bad-tool')).toHaveValue('read_file');
  await expect(page.getByTestId('bad-arg-path')).toHaveValue('~/.ssh/id_rsa');
  const bad = page.getByTestId('bad-resolved');
  await expect(bad).toHaveAttribute('data-stale', 'false', { timeout: 60_000 });
  await expect(bad).toContainText('<tool_call>');
  await expect(bad).toContainText('read');
  await expect(page.getByTestId('good-resolved')).toContainText('ask');
  await expect(page.getByTestId('good-resolved')).toContainText('</tool_call>');
  await page.getByTestId('bad-resolved').scrollIntoViewIfNeeded();
  console.log(`futures shown after ${((Date.now() - t0) / 1000).toFixed(1)} s`);
  await page.screenshot({ path: `${SHOTS}/agent_actions_futures.png` });

  await page.getByTestId('tab-report').click();
  await page.getByTestId('run-report').click();
  // both futures open with the template's empty think block: the report measures after it, where they differ
  const shared = page.getByTestId('report-shared-prefix');
  await expect(shared).toBeVisible({ timeout: 150_000 });
  await expect(shared).toContainText(/decision point after the shared prefix `<think>…`, \d+ tokens: every panel reads the first tokens where the futures differ, “ask” vs “read”/);
  await expect(page.getByTestId('error-banner')).toBeHidden();
  const caption = page.getByTestId('report-caption');
  await expect(caption).toContainText('Δ_clean');
  const clean = Number(/Δ_clean = ([−+-]?[\d.]+)/.exec((await caption.textContent()) ?? '')![1].replace('−', '-'));
  expect(Number.isFinite(clean) && clean !== 0).toBe(true);
  // the tool-call futures' long text wraps inside the panel, not past its right edge (issue 29)
  const fit = await caption.evaluate((el) => ({ scroll: el.scrollWidth, client: el.clientWidth, right: el.getBoundingClientRect().right, panel: el.closest('section')!.getBoundingClientRect().right }));
  expect(fit.scroll, 'caption scrollWidth').toBeLessThanOrEqual(fit.client + 1);
  expect(fit.right, 'caption right edge').toBeLessThanOrEqual(fit.panel + 1);
  await expect(page.getByTestId('bad-mode')).toHaveValue('tool');
  await expect(page.getByTestId('bad-tool')).toHaveValue('read_file');
  await page.screenshot({ path: `${SHOTS}/agent_actions_report.png` });
  console.log(`report answered after ${((Date.now() - t0) / 1000).toFixed(1)} s`);

  // the margin heatmap reads the same decision point: the note beside it, and no same-first-token warning
  await page.getByTestId('tab-margins').click();
  await page.getByTestId('analyse').click();
  await expect(page.getByTestId('margin-shared-prefix')).toContainText(/decision point after the shared prefix `<think>…`, \d+ tokens: the margins read the first tokens where the futures differ, “ask” vs “read”/, { timeout: 120_000 });
  await expect(page.getByTestId('margin-warnings')).toBeHidden();
  // the summary names where Δ is read, and the prefix's k tokens end the strip and the heatmap, marked as teacher-forced
  const k = Number(/, (\d+) tokens:/.exec((await page.getByTestId('margin-shared-prefix').textContent()) ?? '')![1]);
  await expect(page.getByTestId('final-margin-last-label')).toHaveText(`Final-layer margin at the decision point (after the shared prefix, ${k} tokens)`);
  const strip = page.getByTestId('token-strip').first();
  await expect(strip.locator('li[data-prefix="true"]')).toHaveCount(k);
  await expect(strip.locator('li').last()).toHaveAttribute('data-prefix', 'true');
  const T = await strip.locator('li').count();
  await expect(page.getByTestId('margin-heatmap')).toHaveAttribute('data-prefix-cols', Array.from({ length: k }, (_, i) => T - k + i).join(' '));
  await page.screenshot({ path: `${SHOTS}/agent_actions_margins.png` });
});
