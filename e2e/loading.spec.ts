import { test, expect, type BrowserContext, type Page } from '@playwright/test';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { defaultRepos, llamaTensors, startMockHub, writeSparseModel, type MockHub } from '../tools/mock-hub';
import { open } from './app_page';

/**
 * Loading from the Hugging Face Hub in the production build, against the mock Hub
 * (tools/mock-hub.ts) — nothing leaves the machine: huggingface.co is routed to the mock, and a
 * mirror is the mock's own URL. Checks what a user sees (the model type in the status bar, the
 * error banner) and what the server saw (its request log).
 */

let hub: MockHub;
let tmp: string;

/**
 * A very wide multi-head model (768 KV heads × 128): even at the default 4096-token working
 * context one layer's K (or V) cache is 4096 × 98304 × 4 B = 1.5 GiB, one buffer that cannot be
 * split, over SwiftShader's 1 GiB binding limit. Header-only (embedding and final norm listed).
 */
function wideKvModel(): string {
  const c = {
    model_type: 'llama', hidden_size: 98304, intermediate_size: 1024, num_attention_heads: 768, num_key_value_heads: 768, head_dim: 128,
    num_hidden_layers: 1, vocab_size: 1000, max_position_embeddings: 131072, rms_norm_eps: 1e-5, rope_theta: 10000, hidden_act: 'silu', tie_word_embeddings: true,
  };
  return writeSparseModel(path.join(tmp, 'wide-kv'), c, [
    { name: 'model.embed_tokens.weight', shape: [1000, 98304], dtype: 'BF16' },
    { name: 'model.norm.weight', shape: [98304], dtype: 'BF16' },
  ]);
}

/**
 * 20 layers of a 70B-class Llama (d_model 8192, d_mlp 28672, 8 KV heads × 128, vocab 128256,
 * untied), every tensor listed, BF16 over eight shards: 71.6 GiB of float32 weights, over any
 * budget the browser reports (navigator.deviceMemory: 16 GiB in Chromium 150 on a 24 GB machine;
 * browsers cap it), with every buffer splittable. No tokenizer.json: were it wrongly accepted, the
 * load would stop there instead of downloading the (sparse) weights.
 */
function bigWeightsModel(): string {
  const c = {
    model_type: 'llama', hidden_size: 8192, intermediate_size: 28672, num_attention_heads: 64, num_key_value_heads: 8, head_dim: 128,
    num_hidden_layers: 20, vocab_size: 128256, max_position_embeddings: 131072, rms_norm_eps: 1e-5, rope_theta: 500000, hidden_act: 'silu', tie_word_embeddings: false,
  };
  return writeSparseModel(path.join(tmp, 'big-weights'), c, llamaTensors(c, 'BF16'), 8);
}

test.beforeAll(async () => {
  tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'bp-e2e-hub-'));
  hub = await startMockHub({
    cors: true,
    repos: { ...defaultRepos(), 'big/kv': { revisions: { main: wideKvModel() } }, 'big/weights': { revisions: { main: bigWeightsModel() } } },
  });
});
test.afterAll(async () => {
  await hub?.close();
  fs.rmSync(tmp, { recursive: true, force: true });
});

/** Sends every request for huggingface.co (page and workers) to the mock Hub instead. */
async function routeHuggingFaceToMock(context: BrowserContext): Promise<void> {
  await context.route('https://huggingface.co/**', async (route) => {
    const u = new URL(route.request().url());
    await route.fulfill({ response: await route.fetch({ url: hub.url + u.pathname + u.search }) });
  });
}

/** Opens the app and waits for its start-up load (stories260K from /models/) to finish. */
/** Unfolds the Hub form (a <details>) unless it is open. */
async function openHubForm(page: Page): Promise<void> {
  const form = page.locator('details.hub');
  if ((await form.getAttribute('open')) === null) await form.locator('summary').click();
}

/** Fills the Hub form and submits it. */
async function loadFromHub(page: Page, repo: string, endpoint?: string): Promise<void> {
  await openHubForm(page);
  await page.getByTestId('hub-repo').fill(repo);
  if (endpoint !== undefined) await page.getByTestId('hub-endpoint').fill(endpoint);
  await page.getByTestId('load-hub').click();
}

const weightRequests = (log: MockHub['log']) => log.filter((r) => /\.safetensors(\?|$)/.test(r.url) && r.method === 'GET');

test('a Hub model loads in the worker, and after a reload loads again offline from Cache Storage', async ({ page, context }) => {
  page.on('pageerror', (e) => console.log(`[page error] ${e.message}`));
  await routeHuggingFaceToMock(context);
  await open(page);
  const from = hub.log.length;
  await loadFromHub(page, 'fixtures/qwen3-tiny');
  await expect(page.getByTestId('model-info')).toContainText('hf.co/fixtures/qwen3-tiny@main', { timeout: 120_000 });
  await expect(page.getByTestId('model-info')).toContainText('qwen3');
  await expect(page.getByTestId('error-banner')).toBeHidden();
  const first = hub.log.slice(from);
  expect(first.some((r) => r.url === '/fixtures/qwen3-tiny/resolve/main/config.json')).toBe(true);
  expect(weightRequests(first).some((r) => r.status === 200 && r.range === undefined)).toBe(true);

  // A reload restores the last experiment (hash and local storage: its Hub model, online); open the
  // page without either, so it opens on the bundled model and the cached load below is the only Hub load.
  await page.evaluate(() => localStorage.clear());
  await page.goto(page.url().split('#')[0]);
  await expect(page.getByTestId('model-info')).toContainText('stories260K', { timeout: 120_000 });
  await expect(page.getByTestId('progress')).toBeHidden({ timeout: 120_000 });
  const seen = hub.log.length;
  await context.setOffline(true);
  // The start page offers the cached model; one click loads it with the network off.
  await expect(page.getByTestId('cached-offer')).toContainText('fixtures/qwen3-tiny@main');
  await page.getByTestId('cached-offer-load').filter({ hasText: 'fixtures/qwen3-tiny@main' }).click();
  await expect(page.getByTestId('model-info')).toContainText('hf.co/fixtures/qwen3-tiny@main', { timeout: 120_000 });
  await expect(page.getByTestId('model-info')).toContainText('qwen3');
  await expect(page.getByTestId('error-banner')).toBeHidden();
  expect(hub.log.slice(seen), 'requests the mock Hub saw during the cached load').toEqual([]);
  await context.setOffline(false);
});

/** True when every weight request since `from` read a header range only (and there were some). */
function onlyHeadersRead(from: number): void {
  const weights = weightRequests(hub.log.slice(from));
  expect(weights.length).toBeGreaterThan(0);
  expect(weights.every((r) => r.range !== undefined && r.bytes <= 4096), JSON.stringify(weights)).toBe(true);
}

test('a buffer over the adapter\'s binding limit is refused before the weights are downloaded, naming the limit', async ({ page, context }) => {
  await routeHuggingFaceToMock(context);
  await open(page);
  await expect(page.getByTestId('backend-badge')).toHaveAttribute('data-kind', 'webgpu');
  const from = hub.log.length;
  await loadFromHub(page, 'big/kv');
  await expect(page.getByTestId('error-banner')).toBeVisible({ timeout: 120_000 });
  const why = page.getByTestId('error-why');
  await expect(why).toContainText('the K (or V) cache of one layer for 4096 tokens is 1.5 GiB');
  await expect(why).toContainText(/larger than maxStorageBufferBindingSize 1 GiB of this GPU \(.*swiftshader/i);
  onlyHeadersRead(from);
});

test('weights over the memory budget are refused before download, itemised, with the KV cache sized for the working context', async ({ page, context }) => {
  await routeHuggingFaceToMock(context);
  await open(page);
  const from = hub.log.length;
  await loadFromHub(page, 'big/weights');
  await expect(page.getByTestId('error-banner')).toBeVisible({ timeout: 120_000 });
  const why = page.getByTestId('error-why');
  await expect(why).toContainText('of GPU memory (weights 71.6 GiB as f32, KV cache 640 MiB for 4096 tokens (of max_position_embeddings 131072), activations');
  await expect(why).toContainText(/\); this GPU \(.*swiftshader.*\) allows \d+ GiB/i);
  onlyHeadersRead(from);
  // refused before the worker freed anything: the model loaded before is still loaded and shown
  await expect(page.getByTestId('model-info')).toContainText('stories260K');
  await expect(page.getByTestId('backend-badge')).not.toContainText('no model loaded');
});

test('a mirror endpoint (HF_ENDPOINT-style base URL) serves the same layout', async ({ page }) => {
  await open(page);
  const from = hub.log.length;
  await loadFromHub(page, 'models/stories260K', hub.url);
  const host = new URL(hub.url).host;
  await expect(page.getByTestId('model-info')).toContainText(`${host}/models/stories260K@main`, { timeout: 120_000 });
  await expect(page.getByTestId('model-info')).toContainText('llama');
  expect(hub.log.slice(from).some((r) => r.url === '/models/stories260K/resolve/main/model.safetensors')).toBe(true);
});
