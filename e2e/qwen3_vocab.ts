import { expect, type Page } from '@playwright/test';
import * as path from 'node:path';
import { makeQwen3VocabModel } from '../tests/tokenizers/qwen3_vocab_model';
import { open, settled } from './app_page';

/**
 * The Qwen3-vocabulary specs' start (one copy): makes the tiny model with Qwen3's real tokenizer and
 * chat template (tests/tokenizers/qwen3_vocab_model.ts, random weights), opens the app at 1280×800
 * on its bundled model, picks the folder as a user would and waits until it is loaded and nothing runs.
 * @returns the model folder (its name is what the Model line shows).
 */
export async function openQwen3VocabModel(page: Page): Promise<string> {
  const folder = makeQwen3VocabModel();
  await page.setViewportSize({ width: 1280, height: 800 });
  await open(page, '/index.html');
  await page.getByTestId('folder-input').setInputFiles(folder);
  await expect(page.getByTestId('model-info')).toContainText(path.basename(folder), { timeout: 120_000 });
  await settled(page);
  return folder;
}
