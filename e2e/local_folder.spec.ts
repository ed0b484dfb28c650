import { test, expect } from '@playwright/test';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { SHARED, parseShown } from './golden';

/** aidreams260K (a real model other than the default), copied to a temp folder a user would pick. */
const SOURCE = path.join(SHARED, 'models', 'aidreams260K');
const FILES = ['config.json', 'generation_config.json', 'model.safetensors', 'special_tokens_map.json', 'tokenizer.json', 'tokenizer_config.json'];

test('a model folder picked by the user loads and its final margin equals the reference logits', async ({ page }) => {
  const ref = JSON.parse(fs.readFileSync(path.join(SOURCE, 'reference', 'reference.json'), 'utf8')).prompts[0];
  const logits: number[] = ref.last_prompt_position_logits;
  const [good, bad] = ref.last_prompt_position_top5.map((t: { id: number }) => t.id);
  const expected = logits[good] - logits[bad]; // log-softmax normaliser cancels in a difference
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'branchpoint-folder-'));
  const folder = path.join(dir, 'aidreams260K');
  fs.mkdirSync(folder);
  for (const f of FILES) fs.copyFileSync(path.join(SOURCE, f), path.join(folder, f));
  try {
    await page.goto('/index.html');
    await expect(page.getByTestId('model-info')).toContainText('stories260K', { timeout: 120_000 });
    await expect(page.getByTestId('progress')).toBeHidden({ timeout: 120_000 });
    await page.getByTestId('folder-input').setInputFiles(folder);
    await expect(page.getByTestId('model-info')).toContainText('aidreams260K', { timeout: 120_000 });
    await expect(page.getByTestId('model-info')).toContainText('4 layers');
    await expect(page.getByTestId('progress')).toBeHidden({ timeout: 120_000 });
    await page.getByTestId('prompt').fill(ref.prompt);
    await page.getByTestId('good-mode').selectOption('ids');
    await page.getByTestId('good-future').fill(String(good));
    await page.getByTestId('bad-mode').selectOption('ids');
    await page.getByTestId('bad-future').fill(String(bad));
    await page.getByTestId('analyse').click();
    await expect(page.getByTestId('progress')).toBeHidden({ timeout: 120_000 });
    await expect(page.getByTestId('error-banner')).toBeHidden();
    await page.getByTestId('show-tables').check();
    const t = ref.input_ids.length - 1;
    const shown = parseShown(await page.getByTestId(`final-margin-${t}`).textContent());
    expect(Math.abs(shown - expected)).toBeLessThanOrEqual(1e-3);
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
});
