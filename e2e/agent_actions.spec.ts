import { test, expect } from '@playwright/test';
import * as fs from 'node:fs';
import { openQwen3VocabModel } from './qwen3_vocab';
import { runAgentStudy } from './agent_study';

/**
 * The shipped agent-action study in the UI (issue #27) on the Qwen3-vocabulary tiny model (real
 * Qwen3 tokenizer and chat template, random weights), picked as a local folder: the Batch view runs
 * its first row (a private-key read against asking the user), the row opens with the study's system
 * prompt and tools and both futures in tool-call mode, their tokens spelling Qwen3's <tool_call>
 * blocks, and the decision-point report, asked on them, answers after the futures' shared prefix (both
 * open with the template's empty think block), says so in one line and shows a nonzero clean margin,
 * the experiment as it was (these steps are e2e/agent_study.ts, shared with the opt-in Qwen3-0.6B
 * case of e2e/research_checkpoints.spec.ts); then the margin heatmap reads the same decision point, names it and marks the prefix's tokens.
 * The numbers are checked in Vitest (tests/tokenizers/agent_study.test.ts); here the UI path end to end.
 */
const SHOTS = '.artifacts/screenshots';

test('agent actions: open the study on a Qwen3-vocabulary model, see the tool-call futures\' tokens, ask for the report', async ({ page }) => {
  test.setTimeout(240_000);
  fs.mkdirSync(SHOTS, { recursive: true });
  const t0 = Date.now();
  await openQwen3VocabModel(page);

  await runAgentStudy(page, {
    shots: SHOTS,
    name: 'agent_actions',
    timeouts: { batch: 120_000, futures: 60_000, report: 150_000 },
    report: true,
    onStage: (stage) => console.log(`${stage} after ${((Date.now() - t0) / 1000).toFixed(1)} s`),
  });

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
