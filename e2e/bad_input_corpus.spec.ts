import { test, expect, type Page } from '@playwright/test';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { CASES } from '../tests/corpus/cases';
import { CORPUS_PROMPT } from '../tests/corpus/inputs';
import { modelFiles } from '../tests/hardening/model_variants';
import { analyseWith } from './app_page';

/**
 * The bad-input corpus (tests/corpus/cases.ts) through the UI: every case marked `ui` — model
 * folders picked by the user, and prompts/futures typed into the editor — must show the same
 * message the runner gives (the case's pattern) in the error banner, and the workbench must stay
 * usable (a good folder loads and analyses at the end). One page for all cases.
 */
const ui = CASES.filter((c) => c.ui);

async function banner(page: Page, re: RegExp, id: string): Promise<void> {
  const b = page.getByTestId('error-banner');
  await expect(b, id).toBeVisible({ timeout: 60_000 });
  await expect(b, id).toContainText(re);
}

/** Analyse pressed on a corpus case, without waiting: the case may fail. */
const analyse = (page: Page, prompt: string, good: string, bad: string) => analyseWith(page, { prompt, good, bad }, { wait: false });

test(`${ui.length} corpus cases through the UI give the runner's messages, and the workbench stays usable`, async ({ page }) => {
  test.setTimeout(240_000);
  const root = fs.mkdtempSync(path.join(os.tmpdir(), 'branchpoint-corpus-'));
  try {
    await page.goto('/index.html');
    await expect(page.getByTestId('model-info')).toContainText('stories260K', { timeout: 120_000 });
    const inputs = ui.map((c) => ({ c, input: c.input() }));
    // prompts and futures on the bundled model first
    for (const { c, input } of inputs) {
      if (input.kind !== 'analyse' || !('error' in c.expect)) continue;
      await analyse(page, input.prompt, input.good, input.bad);
      await banner(page, c.expect.error, c.id);
    }
    // then model folders, each picked as a user would
    for (const [i, { c, input }] of inputs.entries()) {
      if (input.kind !== 'model' || !('error' in c.expect)) continue;
      const dir = path.join(root, `case${i}`);
      fs.mkdirSync(dir);
      for (const [f, b] of input.files) fs.writeFileSync(path.join(dir, f), b);
      await expect(page.getByTestId('progress')).toBeHidden({ timeout: 60_000 });
      await page.getByTestId('folder-input').setInputFiles(dir);
      const b = page.getByTestId('error-banner');
      // a model that loads but cannot run (non-finite activations) fails at Analyse
      await expect(b.or(page.getByTestId('model-info').filter({ hasText: `case${i}` }))).toBeVisible({ timeout: 60_000 });
      if (!(await b.isVisible())) await analyse(page, CORPUS_PROMPT.prompt, CORPUS_PROMPT.good.text, CORPUS_PROMPT.bad.text);
      await banner(page, c.expect.error, c.id);
    }
    // still usable: a good folder (stories260K's own files) loads and analyses
    const good = path.join(root, 'stories-good');
    fs.mkdirSync(good);
    for (const [f, b] of modelFiles()) fs.writeFileSync(path.join(good, f), b);
    await expect(page.getByTestId('progress')).toBeHidden({ timeout: 60_000 });
    await page.getByTestId('folder-input').setInputFiles(good);
    await expect(page.getByTestId('model-info')).toContainText('stories-good', { timeout: 120_000 });
    await analyse(page, CORPUS_PROMPT.prompt, CORPUS_PROMPT.good.text, CORPUS_PROMPT.bad.text);
    await expect(page.getByTestId('final-margin-last')).toBeVisible({ timeout: 120_000 });
    await expect(page.getByTestId('error-banner')).toBeHidden();
  } finally {
    fs.rmSync(root, { recursive: true, force: true });
  }
});

test('a character split over byte tokens: the strip shows the bytes (<0xE2> <0x9D>) and the token that completes it (❤)', async ({ page }) => {
  await page.goto('/index.html');
  await expect(page.getByTestId('model-info')).toContainText('stories260K', { timeout: 120_000 });
  await page.getByTestId('prompt').fill('I ❤ you');
  const strip = page.getByTestId('token-strip');
  await expect(strip.locator('[data-byte]')).toHaveText(['<0xE2>', '<0x9D>']);
  const texts = await strip.locator('.txt').allTextContents();
  const at = texts.indexOf('<0xE2>');
  expect(texts.slice(at, at + 3)).toEqual(['<0xE2>', '<0x9D>', '❤']);
  await strip.screenshot({ path: '.artifacts/screenshots/token-strip-bytes.png' });
});
