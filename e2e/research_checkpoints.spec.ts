import { test, expect, type Page } from '@playwright/test';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { startMockHub, type MockHub } from '../tools/mock-hub';
import { researchFolder, researchSafetensors, type ResearchStorage } from '../tools/research_storage';
import type { ResearchModel } from '../tools/research_configs';
import { Engine } from '../workers/engine/engine';
import { CpuBackend } from '../workers/engine/backend/cpu';
import { NodeFiles } from '../workers/engine/io/node_files';
import { analyseWith, open, settled } from './app_page';
import { promptOfLength, RESEARCH_FUTURES } from '../tools/research_prompt';
import { runAgentStudy } from './agent_study';

/**
 * Research-size checkpoints (random weights, real configs: tools/research_checkpoints.ts) loaded in
 * Chromium the way a user loads a Hub model — the Hub form with the mock Hub's URL as the endpoint
 * (tools/mock-hub.ts) — and analysed with a prompt of a fixed token count. The lens heatmap's numbers are checked
 * against a plain forward of the same files in Node on the CPU backend (Engine.run, no lens code):
 * the final-layer margins logit_good − logit_bad at every position, and the lens margins of one
 * middle layer recomputed here from its captured residual, the checkpoint's own final norm and
 * embedding rows (tied unembedding), read from the file's bytes. An opt-in last case (BP_RESEARCH_UI=1)
 * runs the agent-action study on Qwen3-0.6B.
 */

const SHOTS = '.artifacts/screenshots';

/** One checkpoint under test: its storage, the Weights chosen in the UI, the prompt's token count and the time allowed (ms). */
interface Case {
  model: ResearchModel;
  storage: ResearchStorage;
  weights: 'f32' | 'f16' | 'q8_0' | 'q4_0';
  tokens: number;
  timeouts: { test: number; load: number; analyse: number };
}

/**
 * The checkpoints under test. SmolLM2-135M as GGUF Q4_0 (the smallest file and the fastest load and
 * analysis on SwiftShader of the storages bench/load.ts measured), float32 elsewhere as the UI's
 * default Weights, with the issue's 64-token prompt. Qwen3-0.6B as BF16 safetensors kept binary16 on
 * the GPU (the load a user of the real checkpoint makes) with a 16-token prompt: on SwiftShader the
 * forward's cost is linear in the tokens and was most of the case (a 64-token analysis 199 s at load
 * 13, 16 tokens 57 s at load 19; docs/performance.md "e2e budget"), and 16 positions still check
 * RoPE, the q/k norms, GQA and the causal mask at every position against the CPU. Its timeouts
 * allow for a 2-core machine shared with other work (the case took 3.2 min here at load 1.7–9.7, 5.1–5.7 min at load 13–20).
 */
const CASES: Case[] = [
  { model: 'smollm2-135m', storage: 'gguf-q4_0', weights: 'f32', tokens: 64, timeouts: { test: 240_000, load: 180_000, analyse: 120_000 } },
  { model: 'qwen3-0.6b', storage: 'bf16', weights: 'f16', tokens: 16, timeouts: { test: 720_000, load: 420_000, analyse: 240_000 } },
];

let hub: MockHub;

test.beforeAll(async () => {
  fs.mkdirSync(SHOTS, { recursive: true });
  hub = await startMockHub({ cors: true, repos: {} });
});
test.afterAll(async () => { await hub?.close(); });

/** Rows r0 … r0+n−1 of a 2-D F16 / BF16 / F32 tensor of a safetensors file, as float64, parsed here. */
function readRows(file: string, name: string, rows: readonly number[]): Float64Array[] {
  const fd = fs.openSync(file, 'r');
  try {
    const len = Buffer.alloc(8);
    fs.readSync(fd, len, 0, 8, 0);
    const n = Number(len.readBigUInt64LE(0));
    const head = Buffer.alloc(n);
    fs.readSync(fd, head, 0, n, 8);
    const t = (JSON.parse(head.toString()) as Record<string, { dtype: string; shape: number[]; data_offsets: [number, number] }>)[name];
    const width = t.shape.length === 2 ? t.shape[1] : t.shape[0], size = t.dtype === 'F32' ? 4 : 2;
    return rows.map((r) => {
      const b = Buffer.alloc(width * size);
      fs.readSync(fd, b, 0, b.length, 8 + n + t.data_offsets[0] + r * width * size);
      return Float64Array.from({ length: width }, (_, i) => {
        if (t.dtype === 'F32') return b.readFloatLE(4 * i);
        const h = b.readUInt16LE(2 * i);
        if (t.dtype === 'BF16') return new Float32Array(new Uint32Array([h << 16]).buffer)[0];
        const e = (h >> 10) & 31, m = h & 1023, s = h & 0x8000 ? -1 : 1;
        return s * (e === 0 ? m * 2 ** -24 : (1 + m / 1024) * 2 ** (e - 15));
      });
    });
  } finally {
    fs.closeSync(fd);
  }
}

/** What the page must show, computed in Node from the same folder. */
interface Expected { text: string; ids: number[]; good: number; bad: number; finalMargin: number[]; midLayer: number; midMargin: number[] }

/**
 * Loads the folder on the CPU backend, picks the prompt and the futures' first tokens, and computes
 * the final-layer margins (from the logits) and one middle layer's lens margins (from its captured
 * hook_resid_post, RMSNorm with model.norm.weight and the embedding rows of the two tokens, read
 * from `safetensorsDir`'s binary16 file: a GGUF folder's float32 embedding and norms hold the same values).
 */
async function expected(dir: string, safetensorsDir: string, T: number, goodText: string, badText: string): Promise<Expected> {
  const engine = await Engine.load(new NodeFiles(dir), new CpuBackend(), undefined, { contextLength: 256 });
  try {
    const { text, ids } = promptOfLength(engine.prompts, T);
    const p = { prompt: text };
    const good = engine.prompts.resolveFuture(ids, { text: goodText }, p).firstIds[0];
    const bad = engine.prompts.resolveFuture(ids, { text: badText }, p).firstIds[0];
    const L = engine.spec.nLayers, midLayer = Math.floor(L / 2), V = engine.spec.dVocab;
    const hook = `blocks.${midLayer - 1}.hook_resid_post`;
    const { logits, captured } = await engine.run(ids, { capture: [hook] });
    const finalMargin = ids.map((_, t) => logits[t * V + good] - logits[t * V + bad]);
    const file = path.join(safetensorsDir, 'model.safetensors');
    const [wg, wb] = readRows(file, 'model.embed_tokens.weight', [good, bad]);
    const [w] = readRows(file, 'model.norm.weight', [0]);
    const cfg = JSON.parse(fs.readFileSync(path.join(safetensorsDir, 'config.json'), 'utf8')) as { rms_norm_eps: number };
    const h = captured.get(hook)!, D = w.length;
    const midMargin = ids.map((_, t) => {
      const x = h.subarray(t * D, (t + 1) * D);
      const rms = Math.sqrt(x.reduce((s, v) => s + v * v, 0) / D + cfg.rms_norm_eps);
      let m = 0;
      for (let i = 0; i < D; i++) m += (x[i] / rms) * w[i] * (wg[i] - wb[i]);
      return m;
    });
    return { text, ids, good, bad, finalMargin, midLayer, midMargin };
  } finally {
    engine.dispose();
  }
}

/** Every shown value of a table's cells whose test id starts with `prefix`, by test id. */
async function cells(page: Page, prefix: string): Promise<Map<string, number>> {
  const pairs = await page.$$eval(`[data-testid^="${prefix}"]`, (els) => els.map((e) => [e.getAttribute('data-testid')!, e.textContent ?? ''] as const));
  return new Map(pairs.map(([k, v]) => [k, Number(v.replace('−', '-'))]));
}

/** |shown − want| ≤ 2e-3 + 1e-3·|want| (the tables show 4 decimals; WebGPU f32 sums in another order than the CPU). */
function close(shown: number | undefined, want: number): boolean {
  return shown !== undefined && Math.abs(shown - want) <= 2e-3 + 1e-3 * Math.abs(want);
}

for (const c of CASES) {
  const T = c.tokens;
  test(`${c.model} (${c.storage}) loads from the mock Hub in Chromium and its lens heatmap for a ${T}-token prompt equals a CPU forward`, async ({ page }) => {
    test.setTimeout(c.timeouts.test);
    const tStart = Date.now();
    const dir = researchFolder(c.model, c.storage);
    const want = await expected(dir, researchSafetensors(c.model), T, RESEARCH_FUTURES.good, RESEARCH_FUTURES.bad);
    const tExpected = Date.now();
    hub.setRepo(`research/${c.model}`, { revisions: { main: dir } });
    await open(page);
    await page.getByTestId('weight-dtype').selectOption(c.weights);
    const form = page.locator('details.hub');
    if ((await form.getAttribute('open')) === null) await form.locator('summary').click();
    await page.getByTestId('hub-repo').fill(`research/${c.model}`);
    await page.getByTestId('hub-endpoint').fill(hub.url);
    const t0 = Date.now();
    await page.getByTestId('load-hub').click();
    await expect(page.getByTestId('model-info')).toContainText(`research/${c.model}@main`, { timeout: c.timeouts.load });
    await expect(page.getByTestId('progress')).toBeHidden({ timeout: c.timeouts.load });
    const tLoaded = Date.now();
    await expect(page.getByTestId('backend-badge')).toHaveAttribute('data-kind', 'webgpu');
    await analyseWith(page, { prompt: want.text, ...RESEARCH_FUTURES }, { wait: false });
    await expect(page.getByTestId('final-margin-last')).toBeVisible({ timeout: c.timeouts.analyse });
    await settled(page);
    const s = (a: number, b: number) => `${((b - a) / 1e3).toFixed(1)} s`;
    console.log(`${c.model} (${c.storage}, ${c.weights} on WebGPU, ${T} tokens): CPU reference ${s(tStart, tExpected)}, page ${s(tExpected, t0)}, loaded in ${s(t0, tLoaded)}, first heatmap ${s(tLoaded, Date.now())} later; load average ${os.loadavg()[0].toFixed(1)}`);
    await expect(page.getByTestId('margin-heatmap')).toBeVisible();
    await expect(page.getByTestId('token-strip').locator('li')).toHaveCount(T);
    await expect(page.getByTestId('good-resolved')).toHaveAttribute('data-first-ids', String(want.good));
    await expect(page.getByTestId('bad-resolved')).toHaveAttribute('data-first-ids', String(want.bad));
    await page.setViewportSize({ width: 1280, height: 800 });
    await page.screenshot({ path: `${SHOTS}/research-${c.model}.png` });

    await page.getByTestId('show-tables').check();
    const finals = await cells(page, 'final-margin-');
    const grid = await cells(page, `margin-cell-${want.midLayer}-`);
    const bad: string[] = [];
    for (let t = 0; t < T; t++) {
      if (!close(finals.get(`final-margin-${t}`), want.finalMargin[t])) bad.push(`final t=${t}: shown ${finals.get(`final-margin-${t}`)}, CPU ${want.finalMargin[t]}`);
      if (!close(grid.get(`margin-cell-${want.midLayer}-${t}`), want.midMargin[t])) bad.push(`layer ${want.midLayer} t=${t}: shown ${grid.get(`margin-cell-${want.midLayer}-${t}`)}, CPU ${want.midMargin[t]}`);
    }
    expect(bad, 'cells that differ from the CPU forward').toEqual([]);
    // the margins are not all alike (a broken forward that returns one row would pass a single-cell check)
    expect(new Set(want.finalMargin.map((m) => m.toFixed(2))).size).toBeGreaterThan(T / 2);
  });
}

/**
 * The agent-action study (issue #27) on Qwen3-0.6B, opt-in: BP_RESEARCH_UI=1 runs it, default CI
 * skips it. The checkpoint (random weights, the real config, BF16 safetensors, Qwen3's real tokenizer
 * and chat template) loads from the mock Hub as the cases above do, by default on the browser's CPU
 * backend in float32 (SwiftShader WebGPU is far too slow for a 0.6B forward over the study's ~400
 * tokens; BP_RESEARCH_UI_BACKEND=webgpu picks WebGPU, with the binary16 weights of the case above),
 * then runs e2e/agent_study.ts's steps up to the futures' tokens; BP_RESEARCH_UI_REPORT=1 asks for
 * the decision-point report as well (about 13 min on the CPU backend of a quiet 2-core machine, over
 * 20 min at load 10). Stage
 * times and the load average are logged; docs/performance.md keeps a measurement.
 */
test('qwen3-0.6b (bf16) loads from the mock Hub in Chromium and runs the agent-action study up to its tool-call futures\' tokens (opt-in: BP_RESEARCH_UI=1)', async ({ page }) => {
  test.skip(process.env.BP_RESEARCH_UI !== '1', 'opt-in: a 0.6B forward over the study\'s ~400 tokens takes minutes; set BP_RESEARCH_UI=1 to run it');
  const backend = process.env.BP_RESEARCH_UI_BACKEND ?? 'cpu';
  if (backend !== 'cpu' && backend !== 'webgpu') throw new Error(`BP_RESEARCH_UI_BACKEND is ${backend}: it is cpu (the default) or webgpu`);
  const report = process.env.BP_RESEARCH_UI_REPORT === '1';
  test.setTimeout(report ? 3_600_000 : 900_000);
  const model: ResearchModel = 'qwen3-0.6b';
  const dir = researchFolder(model, 'bf16');
  hub.setRepo(`research/${model}`, { revisions: { main: dir } });
  const t0 = Date.now();
  const log = (stage: string) => console.log(`${model} agent study (${backend}): ${stage} after ${((Date.now() - t0) / 1e3).toFixed(1)} s; load average ${os.loadavg()[0].toFixed(2)}`);
  await page.setViewportSize({ width: 1280, height: 800 });
  await open(page);
  await page.getByTestId('backend-choice').selectOption(backend);
  await page.getByTestId('weight-dtype').selectOption(backend === 'cpu' ? 'f32' : 'f16');
  const form = page.locator('details.hub');
  if ((await form.getAttribute('open')) === null) await form.locator('summary').click();
  await page.getByTestId('hub-repo').fill(`research/${model}`);
  await page.getByTestId('hub-endpoint').fill(hub.url);
  await page.getByTestId('load-hub').click();
  await expect(page.getByTestId('model-info')).toContainText(`research/${model}@main`, { timeout: 420_000 });
  await expect(page.getByTestId('progress')).toBeHidden({ timeout: 420_000 });
  await expect(page.getByTestId('error-banner')).toBeHidden();
  await expect(page.getByTestId('backend-badge')).toHaveAttribute('data-kind', backend);
  log('loaded');
  await runAgentStudy(page, {
    shots: SHOTS,
    name: `research-${model}-agent`,
    timeouts: { batch: 360_000, futures: 180_000, report: 2_700_000 }, // the report: still at 1 of 2 stages after 20 min at load 10–13 (docs/performance.md)
    report,
    onStage: (stage) => log(stage),
  });
});
