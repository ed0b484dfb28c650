import { test, expect, type BrowserContext, type Page } from '@playwright/test';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { startMockHub, type MockHub } from '../tools/mock-hub';
import { CATALOG } from '../workers/engine/io/catalog';
import { bytes, paramCount } from '../app/lib/format';
import { SHARED } from './golden';
import { open } from './app_page';

/**
 * The model picker's curated Hub list and the browser's model cache, in the production build.
 * The mock Hub (tools/mock-hub.ts) serves tiny fixtures under two catalog repo ids — one chat
 * model, one gated — and huggingface.co is routed to it, so nothing leaves the machine.
 */

const CHAT = CATALOG.find((e) => e.repo === 'HuggingFaceTB/SmolLM2-135M-Instruct')!;
const GATED = CATALOG.find((e) => e.repo === 'meta-llama/Llama-3.2-1B-Instruct')!;
const TOKEN = 'hf_e2eSecretToken';
const SHOTS = '.artifacts/screenshots';

let hub: MockHub;
let tmp: string;
/** Bytes of every file the chat repo serves (its top-level files). */
let chatRepoBytes: number;

/** Copies a fixture's top-level files (not reference/) into `dir`, adding a chat template to its tokenizer_config.json. */
function chatFixture(fixture: string, dir: string): string {
  fs.mkdirSync(dir, { recursive: true });
  const src = path.join(SHARED, 'fixtures', fixture);
  for (const name of fs.readdirSync(src)) {
    if (fs.statSync(path.join(src, name)).isFile()) fs.copyFileSync(path.join(src, name), path.join(dir, name));
  }
  const cfgPath = path.join(dir, 'tokenizer_config.json');
  const cfg = JSON.parse(fs.readFileSync(cfgPath, 'utf8')) as Record<string, unknown>;
  cfg.chat_template = '{% for m in messages %}<|{{ m.role }}|>{{ m.content }}\n{% endfor %}{% if add_generation_prompt %}<|assistant|>{% endif %}';
  fs.writeFileSync(cfgPath, JSON.stringify(cfg));
  return dir;
}

function topLevelBytes(dir: string): number {
  return fs.readdirSync(dir).map((n) => fs.statSync(path.join(dir, n))).filter((s) => s.isFile()).reduce((a, s) => a + s.size, 0);
}

test.beforeAll(async () => {
  tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'bp-e2e-catalog-'));
  const chatDir = chatFixture('llama-tiny', path.join(tmp, 'smollm2'));
  chatRepoBytes = topLevelBytes(chatDir);
  hub = await startMockHub({
    cors: true,
    repos: {
      [CHAT.repo]: { revisions: { main: chatDir } },
      [GATED.repo]: { revisions: { main: path.join(SHARED, 'fixtures', 'llama3-tiny') }, token: TOKEN },
    },
  });
  fs.mkdirSync(SHOTS, { recursive: true });
});
test.afterAll(async () => {
  await hub?.close();
  fs.rmSync(tmp, { recursive: true, force: true });
});

test.use({ viewport: { width: 1280, height: 1000 } });

/** Sends every request for huggingface.co (page and workers) to the mock Hub instead. */
async function routeHuggingFaceToMock(context: BrowserContext): Promise<void> {
  await context.route('https://huggingface.co/**', async (route) => {
    const u = new URL(route.request().url());
    await route.fulfill({ response: await route.fetch({ url: hub.url + u.pathname + u.search }) });
  });
}

/** Opens the app, waits for its start-up load (stories260K from /models/), and unfolds the Hub section. */
async function openHubSection(page: Page): Promise<void> {
  await open(page);
  await page.locator('details.hub summary').click();
}

const catalogRow = (page: Page, repo: string) => page.locator(`[data-testid="catalog-row"][data-repo="${repo}"]`);
const requestsFor = (repo: string, from: number) => hub.log.slice(from).filter((r) => r.url.startsWith(`/${repo}/`) || r.url.startsWith(`/_cdn/${repo}/`));
const fullWeightDownloads = (repo: string, from: number) => requestsFor(repo, from).filter((r) => r.url.includes('.safetensors') && r.method === 'GET' && r.status === 200 && r.range === undefined);

test('the curated list shows every catalog entry with its size and licence, after the local models, and marks gated and chat ones', async ({ page }) => {
  await openHubSection(page);
  const picker = page.locator('section.model-picker');
  // Local models come first: the server's folder select precedes the curated list.
  const order = await picker.evaluate((el) => {
    const select = el.querySelector('[data-testid="model-select"]')!, list = el.querySelector('[data-testid="catalog"]')!;
    return select.compareDocumentPosition(list) & Node.DOCUMENT_POSITION_FOLLOWING;
  });
  expect(order).toBeTruthy();

  const rows = page.getByTestId('catalog-row');
  await expect(rows).toHaveCount(CATALOG.length);
  for (const [i, e] of CATALOG.entries()) {
    const row = rows.nth(i);
    await expect(row).toHaveAttribute('data-repo', e.repo);
    await expect(row).toContainText(e.label);
    await expect(row.getByTestId('catalog-params')).toHaveText(paramCount(e.params));
    await expect(row.getByTestId('catalog-bytes')).toHaveText(`≈ ${bytes(e.approxBytes)}`);
    await expect(row.getByTestId('catalog-licence')).toHaveText(e.licence);
    await expect(row.getByTestId('catalog-gated')).toHaveCount(e.gated ? 1 : 0);
    await expect(row).toHaveAttribute('data-chat', String(e.chat));
  }
  expect(CATALOG.some((e) => e.gated)).toBe(true);
  await page.screenshot({ path: `${SHOTS}/catalog-list.png`, fullPage: true });
});

test('a curated model loads from the Hub into the cache manager at the size the Hub served; Delete empties it and the next load downloads again', async ({ page, context }) => {
  await routeHuggingFaceToMock(context);
  await openHubSection(page);
  await expect(page.getByTestId('cache-empty')).toBeVisible({ timeout: 60_000 });
  await expect(page.getByTestId('cache-total')).toHaveAttribute('data-bytes', '0');

  const from = hub.log.length;
  await catalogRow(page, CHAT.repo).getByTestId('catalog-load').click();
  await expect(page.getByTestId('hub-repo')).toHaveValue(CHAT.repo);
  await expect(page.getByTestId('model-info')).toContainText(`hf.co/${CHAT.repo}@main`, { timeout: 120_000 });
  await expect(page.getByTestId('error-banner')).toBeHidden();
  expect(fullWeightDownloads(CHAT.repo, from).length, 'weights downloaded on the first load').toBeGreaterThan(0);
  // A chat model switches the chat template on.
  await expect(page.getByTestId('chat-template')).toBeChecked();

  // The cache manager lists it (no refresh needed): the sum of the files the mock served.
  const row = page.locator(`[data-testid="cache-row"][data-repo="${CHAT.repo}"]`);
  await expect(row).toHaveAttribute('data-bytes', String(chatRepoBytes), { timeout: 30_000 });
  await expect(row).toHaveAttribute('data-revision', 'main');
  await expect(row).toContainText(`${CHAT.repo}@main`);
  await expect(row.getByTestId('cache-size')).toHaveText(bytes(chatRepoBytes));
  await expect(row.getByTestId('cache-files')).toHaveText(String(fs.readdirSync(path.join(tmp, 'smollm2')).length));
  await expect(row.getByTestId('cache-endpoint')).toHaveCount(0);
  await expect(page.getByTestId('cache-total')).toHaveAttribute('data-bytes', String(chatRepoBytes));
  await expect(page.getByTestId('cache-total')).toContainText(`1 model, ${bytes(chatRepoBytes)}`);
  await page.getByTestId('cache-manager').scrollIntoViewIfNeeded();
  await page.screenshot({ path: `${SHOTS}/catalog-cache-listed.png`, fullPage: true });

  await row.getByTestId('cache-delete').click();
  await expect(page.getByTestId('cache-row')).toHaveCount(0);
  await expect(page.getByTestId('cache-empty')).toBeVisible();
  await expect(page.getByTestId('cache-total')).toHaveAttribute('data-bytes', '0');
  await page.screenshot({ path: `${SHOTS}/catalog-cache-empty.png`, fullPage: true });

  const again = hub.log.length;
  await catalogRow(page, CHAT.repo).getByTestId('catalog-load').click();
  await expect(page.getByTestId('progress')).toBeVisible();
  await expect(page.getByTestId('progress')).toBeHidden({ timeout: 120_000 });
  await expect(page.getByTestId('model-info')).toContainText(`hf.co/${CHAT.repo}@main`);
  expect(hub.log.length, 'the mock Hub\'s request log grows').toBeGreaterThan(again);
  expect(fullWeightDownloads(CHAT.repo, again).length, 'weights downloaded again after the delete').toBeGreaterThan(0);
  await expect(page.locator(`[data-testid="cache-row"][data-repo="${CHAT.repo}"]`)).toHaveAttribute('data-bytes', String(chatRepoBytes));
});

test('a gated curated model asks for the access token first, then sends it only in the Authorization header', async ({ page, context }) => {
  await routeHuggingFaceToMock(context);
  await openHubSection(page);

  const from = hub.log.length;
  await catalogRow(page, GATED.repo).getByTestId('catalog-load').click();
  await expect(page.getByTestId('token-needed')).toContainText(`${GATED.label} is gated`);
  await expect(page.getByTestId('hub-repo')).toHaveValue(GATED.repo);
  await expect(page.getByTestId('hub-token')).toBeFocused();
  expect(requestsFor(GATED.repo, from), 'nothing requested before a token is given').toEqual([]);
  await page.screenshot({ path: `${SHOTS}/catalog-gated-token.png`, fullPage: true });

  await page.getByTestId('hub-token').fill(TOKEN);
  await page.getByTestId('load-hub').click();
  await expect(page.getByTestId('model-info')).toContainText(`hf.co/${GATED.repo}@main`, { timeout: 120_000 });
  await expect(page.getByTestId('token-needed')).toBeHidden();
  const resolves = requestsFor(GATED.repo, from).filter((r) => r.url.includes('/resolve/') && r.method !== 'OPTIONS');
  expect(resolves.length).toBeGreaterThan(0);
  expect(resolves.every((r) => r.authorization === `Bearer ${TOKEN}`)).toBe(true);

  // The token is in memory only: not in the URL, web storage, Cache Storage keys or the cache list.
  expect(page.url()).not.toContain(TOKEN);
  const stored = await page.evaluate(async () => {
    const keys: string[] = [];
    for (const name of await caches.keys()) for (const r of await (await caches.open(name)).keys()) keys.push(r.url);
    return JSON.stringify({ local: { ...localStorage }, session: { ...sessionStorage }, keys });
  });
  expect(stored).toContain(GATED.repo);
  expect(stored).not.toContain(TOKEN);
  await expect(page.getByTestId('cache-manager')).not.toContainText(TOKEN);
});

test('a model from a mirror endpoint is listed with that endpoint, apart from the same repo on huggingface.co', async ({ page, context }) => {
  await routeHuggingFaceToMock(context);
  await openHubSection(page);
  await catalogRow(page, CHAT.repo).getByTestId('catalog-load').click();
  await expect(page.getByTestId('model-info')).toContainText(`hf.co/${CHAT.repo}@main`, { timeout: 120_000 });
  await page.getByTestId('hub-endpoint').fill(hub.url);
  await page.getByTestId('load-hub').click();
  await expect(page.getByTestId('model-info')).toContainText(`${new URL(hub.url).host}/${CHAT.repo}@main`, { timeout: 120_000 });

  const rows = page.locator(`[data-testid="cache-row"][data-repo="${CHAT.repo}"]`);
  await expect(rows).toHaveCount(2);
  await expect(page.getByTestId('cache-endpoint')).toHaveCount(1);
  await expect(page.getByTestId('cache-endpoint')).toHaveText(` from ${hub.url}`);
  await expect(page.getByTestId('cache-total')).toHaveAttribute('data-bytes', String(2 * chatRepoBytes));
  await page.getByTestId('cache-manager').screenshot({ path: `${SHOTS}/catalog-cache-mirror.png` });

  // Back on the bundled model and reloaded: the start page offers the last-used cached model (the mirror's) first, labelled, then the other.
  await expect(page.getByTestId('model-select').locator('option:checked')).toHaveText(`${CHAT.repo} (Hub)`); // the dropdown names the loaded model
  await page.getByTestId('model-select').selectOption('stories260K');
  await page.getByTestId('load-local').click();
  await expect(page.getByTestId('model-info')).toContainText('stories260K', { timeout: 120_000 });
  await expect(page.getByTestId('progress')).toBeHidden({ timeout: 120_000 });
  await page.reload();
  await expect(page.getByTestId('model-info')).toContainText('stories260K', { timeout: 120_000 });
  const last = page.getByTestId('cached-offer-last');
  await expect(last).toHaveText(`Last used: ${CHAT.repo}@main`, { timeout: 60_000 });
  await expect(last).toHaveAttribute('title', new RegExp(`from ${hub.url.replace(/[.:/]/g, '\\$&')}$`));
  await expect(last).toHaveClass(/primary/);
  await expect(page.getByTestId('cached-offer').locator('button').first()).toHaveAttribute('data-testid', 'cached-offer-last');
  await expect(page.getByTestId('cached-offer-load')).toHaveCount(1);
  await expect(page.getByTestId('cached-offer-load')).not.toHaveAttribute('title', /from /);
  await page.getByTestId('cached-offer').screenshot({ path: `${SHOTS}/cached-offer-last.png` });
  await last.click();
  await expect(page.getByTestId('model-info')).toContainText(`${new URL(hub.url).host}/${CHAT.repo}@main`, { timeout: 120_000 });
});
