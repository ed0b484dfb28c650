import { test, expect, type Page } from '@playwright/test';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { Lens, STORIES, firstTokenAfter, parseShown, referencePrompt } from './golden';

const FILES = ['config.json', 'generation_config.json', 'model.safetensors', 'special_tokens_map.json', 'tokenizer.json', 'tokenizer_config.json'];
const PROMPT = 'Lily and Tom went to the park. Lily gave the ball to';

let root: string;

/** A copy of stories260K's top-level files in root/name, changed by `spoil`. */
function badFolder(name: string, spoil: (dir: string) => void): string {
  const dir = path.join(root, name);
  fs.mkdirSync(dir);
  for (const f of FILES) fs.copyFileSync(path.join(STORIES, f), path.join(dir, f));
  spoil(dir);
  return dir;
}

/** Rewrites model.safetensors with its JSON header changed by `edit` (the data section is kept as is). */
function editHeader(file: string, edit: (header: Record<string, { dtype: string; shape: number[]; data_offsets: [number, number] }>) => void) {
  const bytes = fs.readFileSync(file);
  const n = Number(bytes.readBigUInt64LE(0));
  const header = JSON.parse(bytes.subarray(8, 8 + n).toString('utf8'));
  edit(header);
  let json = JSON.stringify(header);
  json += ' '.repeat((8 - (json.length % 8)) % 8);
  const len = Buffer.alloc(8);
  len.writeBigUInt64LE(BigInt(Buffer.byteLength(json)));
  fs.writeFileSync(file, Buffer.concat([len, Buffer.from(json, 'utf8'), bytes.subarray(8 + n)]));
}

async function loadFolder(page: Page, dir: string) {
  await expect(page.getByTestId('progress')).toBeHidden({ timeout: 120_000 });
  await page.getByTestId('folder-input').setInputFiles(dir);
}

async function expectBanner(page: Page, ...patterns: RegExp[]) {
  const banner = page.getByTestId('error-banner');
  await expect(banner).toBeVisible({ timeout: 120_000 });
  for (const p of patterns) await expect(banner).toContainText(p);
  console.log(`banner: ${(await banner.textContent())?.replace(/\s+/g, ' ')}`);
}

async function analyseAndCheck(page: Page, lens: Lens, good: number, bad: number) {
  await expect(page.getByTestId('analyse')).toBeEnabled({ timeout: 120_000 });
  await page.getByTestId('analyse').click();
  await expect(page.getByTestId('progress')).toBeHidden({ timeout: 120_000 });
  await expect(page.getByTestId('error-banner')).toBeHidden();
  const t = lens.nPrompt - 1;
  expect(Math.abs(parseShown(await page.getByTestId(`margin-cell-${lens.L}-${t}`).textContent()) - lens.margin(lens.L, t, good, bad))).toBeLessThanOrEqual(1e-3);
}

test.beforeAll(() => { root = fs.mkdtempSync(path.join(os.tmpdir(), 'branchpoint-bad-models-')); });
test.afterAll(() => fs.rmSync(root, { recursive: true, force: true }));

test('broken model folders and an over-long prompt give clear messages, and the workbench stays usable', async ({ page }) => {
  page.on('pageerror', (e) => console.log(`[page error] ${e.message}`));
  const golden = referencePrompt(PROMPT);
  const lens = new Lens(golden);
  const good = (await firstTokenAfter(PROMPT, ' Tom')).id;
  const bad = (await firstTokenAfter(PROMPT, ' Lily')).id;

  await page.goto('/');
  await expect(page.getByTestId('backend-badge')).toBeVisible({ timeout: 120_000 });
  await page.getByTestId('prompt').fill(PROMPT);
  await page.getByTestId('show-tables').check();
  await analyseAndCheck(page, lens, good, bad);

  const truncated = badFolder('truncated', (d) => {
    const f = path.join(d, 'model.safetensors');
    const b = fs.readFileSync(f);
    fs.writeFileSync(f, b.subarray(0, Math.floor(b.length / 2)));
  });
  const lying = badFolder('lying-offsets', (d) => editHeader(path.join(d, 'model.safetensors'), (h) => {
    const e = h['model.layers.0.self_attn.q_proj.weight'];
    const size = e.data_offsets[1] - e.data_offsets[0];
    e.data_offsets = [fs.statSync(path.join(d, 'model.safetensors')).size, fs.statSync(path.join(d, 'model.safetensors')).size + size];
  }));
  const notAModel = badFolder('not-a-model', (d) => {
    const f = path.join(d, 'config.json');
    fs.writeFileSync(f, JSON.stringify({ ...JSON.parse(fs.readFileSync(f, 'utf8')), model_type: 'not_a_model' }));
  });
  const noTokenizer = badFolder('no-tokenizer', (d) => fs.rmSync(path.join(d, 'tokenizer.json')));

  const cases: [string, RegExp[]][] = [
    [truncated, [/model\.safetensors/, /truncated/]],
    [lying, [/model\.safetensors/, /data_offsets/, /past the end/]],
    [notAModel, [/not_a_model/, /unsupported model_type/, /llama/, /gpt2/, /qwen2/]],
    [noTokenizer, [/tokenizer\.json/, /missing/]],
  ];
  for (const [dir, patterns] of cases) {
    await loadFolder(page, dir);
    await expectBanner(page, new RegExp(path.basename(dir)), ...patterns);
    await expect(page.getByTestId('progress')).toBeHidden();
    // The earlier analysis is still on screen.
    await expect(page.getByTestId('margin-heatmap')).toBeVisible();
    await expect(page.getByTestId(`margin-cell-${lens.L}-0`)).toBeVisible();
  }
  await page.screenshot({ path: '.artifacts/screenshots/bad-model-banner.png', fullPage: true });

  // Another model can be loaded and analysed.
  await page.getByTestId('model-select').selectOption('stories260K');
  await page.getByTestId('load-local').click();
  await expect(page.getByTestId('backend-badge')).toBeVisible({ timeout: 120_000 });
  await expect(page.getByTestId('error-banner')).toBeHidden();
  await analyseAndCheck(page, lens, good, bad);

  // A prompt longer than max_position_embeddings (512 for stories260K).
  // Pressed while scrolled to the data tables at the bottom (a DOM click does not scroll): the banner still shows there.
  await page.getByTestId('prompt').fill('Once upon a time there was a little girl. '.repeat(80));
  await page.evaluate(() => window.scrollTo(0, document.body.scrollHeight));
  await page.getByTestId('analyse').dispatchEvent('click');
  await expectBanner(page, /context/, /512/, /max_position_embeddings/);
  // Said once: in the banner, not again under the prompt or under the futures (trials saw it four times).
  await expect(page.getByText(/longer than the model's context/)).toHaveCount(1);
  await expect(page.getByTestId('prompt-note')).toBeHidden();
  await expect(page.getByTestId('good-unresolved')).toBeHidden();
  // The prompt's tokens and the futures' tokens stay in view while the user shortens it.
  await expect(page.getByTestId('token-511')).toBeAttached();
  await expect(page.getByTestId('tokens-past-context')).toContainText(/\d+ more tokens past the model's 512-token context/);
  await expect(page.getByTestId('good-resolved')).toBeVisible();
  await expect(page.getByTestId('bad-resolved')).toBeVisible();
  expect(await page.evaluate(() => window.scrollY)).toBeGreaterThan(200);
  await expect(page.getByTestId('error-banner')).toBeInViewport({ ratio: 1 });
  await expect(page.getByTestId('margin-heatmap')).toBeVisible();
  await page.screenshot({ path: '.artifacts/screenshots/long-prompt-banner.png', fullPage: true });

  // Still usable: a short prompt analyses again.
  await page.getByTestId('prompt').fill(PROMPT);
  await analyseAndCheck(page, lens, good, bad);
});
