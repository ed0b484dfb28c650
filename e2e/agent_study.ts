import { expect, type Page } from '@playwright/test';

/** How long each stage of the agent-action study may take (ms), each counted from the end of the one before. */
export interface AgentStudyTimeouts {
  /** Run batch → its one row shown and nothing running. */
  batch: number;
  /** Row opened → the bad future's tokens resolved (not stale). */
  futures: number;
  /** Run report → the report's shared-prefix note shown. */
  report: number;
}

/** What runAgentStudy does and where it writes its screenshots. */
export interface AgentStudyOptions {
  /** The screenshot folder (it must exist). */
  shots: string;
  /** The screenshots' name prefix: `<shots>/<name>_batch.png`, `_futures.png`, `_report.png`. */
  name: string;
  timeouts: AgentStudyTimeouts;
  /** Also ask for the decision-point report on the opened row and check it (default false). */
  report?: boolean;
  /**
   * Told as each stage ends: 'batch row' (the row shown), 'futures shown' (both futures' tokens
   * resolved), 'report answered'; `seconds` since runAgentStudy was called.
   */
  onStage?: (stage: string, seconds: number) => void;
}

/**
 * The shipped agent-action study (issue #27, Batch example 'agent_actions') in the UI, on whatever
 * model is loaded — it must use the Qwen3 tokenizer and chat template, as the tool-call futures'
 * tokens are checked to spell Qwen3's <tool_call> blocks. Batch tab → the example → its first row only
 * (reading ~/.ssh/id_rsa vs asking the user) → run → one row, whose first-token metrics the view says
 * are read after the futures' shared prefix (the template's empty think block) → open the row: chat
 * template on, the study's system prompt and tools, both futures in tool-call mode, the bad one
 * read_file on ~/.ssh/id_rsa, and their resolved tokens. With `report`, the Report tab's
 * decision-point report on them: its shared-prefix note ("ask" vs "read"), no error, and a finite
 * nonzero Δ_clean in its caption, which wraps inside its panel, the futures as they were. The one-row
 * Batch plot's value axis has a few short tick labels.
 * Leaves the page on the Report tab (with `report`) or the opened row's Analysis view.
 * @throws the failing Playwright assertion when a stage does not show what it should within its timeout.
 */
export async function runAgentStudy(page: Page, opts: AgentStudyOptions): Promise<void> {
  const t0 = Date.now();
  const stage = (name: string) => opts.onStage?.(name, (Date.now() - t0) / 1000);
  const shot = (what: string) => page.screenshot({ path: `${opts.shots}/${opts.name}_${what}.png` });

  await page.getByTestId('tab-batch').click();
  await page.getByTestId('example-agent_actions').click();
  await expect(page.getByTestId('batch-description')).toContainText('Agent action margins');
  const values = await page.getByTestId('batch-values').inputValue();
  await page.getByTestId('batch-values').fill(values.split('\n')[0]); // the first row: reading ~/.ssh/id_rsa vs asking
  await page.getByTestId('run-batch').click();
  // rows come in as they are done: count them once the batch has finished (a count while it runs sees 1 of any number)
  await expect(page.getByTestId('batch-row').first()).toBeVisible({ timeout: opts.timeouts.batch });
  await expect(page.getByTestId('progress')).toBeHidden({ timeout: opts.timeouts.batch });
  await expect(page.getByTestId('batch-row')).toHaveCount(1);
  stage('batch row');
  // the batch's first-token metrics are read where the futures differ, and the view says so in one line
  await expect(page.getByTestId('batch-shared-prefix')).toContainText(/decision point after the shared prefix `<think>…`, \d+ tokens: the first-token metrics of 1 of 1 rows read the first tokens where the futures differ/);
  // one row: the plot's value axis has a few short tick labels, not every float digit over the axis title (issue 29)
  const ticks = await page.getByTestId('batch-plot').locator('.y-tick text').allTextContents();
  expect(ticks.length).toBeGreaterThanOrEqual(3);
  for (const t of ticks) expect(t.length, `y tick "${t}"`).toBeLessThanOrEqual(8);
  await shot('batch');
  await page.getByTestId('batch-plot').screenshot({ path: `${opts.shots}/${opts.name}_batch_plot.png` });
  await page.getByTestId('batch-row').first().click();

  await expect(page.getByTestId('chat-template')).toBeChecked();
  await expect(page.getByTestId('system-prompt')).toHaveValue(/Some actions cannot be undone/);
  await expect(page.getByTestId('tools-json')).toHaveValue(/"send_email"/);
  await expect(page.getByTestId('good-mode')).toHaveValue('tool');
  await expect(page.getByTestId('bad-mode')).toHaveValue('tool');
  await expect(page.getByTestId('bad-tool')).toHaveValue('read_file');
  await expect(page.getByTestId('bad-arg-path')).toHaveValue('~/.ssh/id_rsa');
  const bad = page.getByTestId('bad-resolved');
  await expect(bad).toHaveAttribute('data-stale', 'false', { timeout: opts.timeouts.futures });
  await expect(bad).toContainText('<tool_call>');
  await expect(bad).toContainText('read');
  await expect(page.getByTestId('good-resolved')).toContainText('ask');
  await expect(page.getByTestId('good-resolved')).toContainText('</tool_call>');
  await bad.scrollIntoViewIfNeeded();
  stage('futures shown');
  await shot('futures');
  if (!opts.report) return;

  await page.getByTestId('tab-report').click();
  await page.getByTestId('run-report').click();
  // both futures open with the template's empty think block: the report measures after it, where they differ
  const shared = page.getByTestId('report-shared-prefix');
  await expect(shared).toBeVisible({ timeout: opts.timeouts.report });
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
  stage('report answered');
  await shot('report');
}
