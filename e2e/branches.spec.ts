import { test, expect } from '@playwright/test';
import { execFile } from 'node:child_process';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { promisify } from 'node:util';
import { fileURLToPath } from 'node:url';
import { csvParse } from 'd3';
import { STORIES, referencePrompt } from './golden';
import { open, settled } from './app_page';
import { CpuBackend } from '../workers/engine/backend/cpu';
import { Engine } from '../workers/engine/engine';
import { NodeFiles } from '../workers/engine/io/node_files';

/**
 * The branch explorer and batch studies as a user drives them on the production build (WebGPU on
 * SwiftShader), checked against oracles computed here in Node: greedy decoding by full
 * recomputation (Engine.run from position 0 for every token, no KV cache reuse), the
 * `branchpoint batch` runner's rows, and the `branchpoint flow` runner's recursive flow of a fork point.
 */
const ROOT = fileURLToPath(new URL('..', import.meta.url));
const SHOTS = '.artifacts/screenshots';
const PROMPT = 'Lily and Tom went to the park. Lily gave the ball to';
const N = 12, K = 4;

test.beforeAll(() => fs.mkdirSync(SHOTS, { recursive: true }));

test('fork a stories260K generation at new token 4 to the second alternative: the branch joins the tree with its margin curve, its prefix is not recomputed, and it equals greedy decoding of prompt + prefix + alternative', async ({ page }) => {
  await page.setViewportSize({ width: 1400, height: 1000 });
  await open(page);
  await expect(page.getByTestId('backend-badge')).toHaveAttribute('data-kind', 'webgpu');
  await page.getByTestId('prompt').fill(PROMPT);
  await page.getByTestId('tab-branches').click();
  await page.getByTestId('branch-max-new').fill(String(N));
  await page.getByTestId('branch-start').click();
  await settled(page);
  const T = referencePrompt(PROMPT).n_prompt;
  const trunk = await page.getByTestId('path-token').evaluateAll((els) => els.map((e) => Number((e as HTMLElement).dataset.id)));
  expect(trunk.slice(T)).toEqual(referencePrompt(PROMPT).greedy_ids.slice(0, N));

  await page.locator(`[data-testid="path-token"][data-position="${T + K}"]`).click();
  await expect(page.getByTestId('fork-panel')).toHaveAttribute('data-position', String(T + K));
  await expect(page.getByTestId('fork-panel')).toContainText(`Fork at position ${T + K} (new token ${K})`);
  await expect(page.getByTestId('fork-lens')).toBeVisible();
  const alt = Number(await page.getByTestId('alternative-1').getAttribute('data-id'));
  await page.getByTestId('fork-1').click();
  await settled(page);

  const node = page.getByTestId('tree-node-1');
  await expect(node).toHaveAttribute('data-start', String(T + K));
  await expect(node).toHaveAttribute('data-parent', '0');
  // Only the branch's own positions went through the model: T + K .. T + N − 2.
  await expect(node).toHaveAttribute('data-forwarded', String(N - K - 1));
  await expect(page.getByTestId('tree-edge-1')).toContainText('”');
  const branch = await page.getByTestId('path-token').evaluateAll((els) => els.map((e) => Number((e as HTMLElement).dataset.id)));
  expect(branch.slice(0, T + K)).toEqual(trunk.slice(0, T + K));
  expect(branch[T + K]).toBe(alt);

  const e = await Engine.load(new NodeFiles(STORIES), new CpuBackend());
  /** Greedy decoding of a prefix to T + N tokens by full recomputation (no KV cache). */
  const greedy = async (prefix: number[]) => {
    const seq = [...prefix];
    while (seq.length < T + N) {
      const { logits } = await e.run(seq, { logits: 'last' });
      seq.push(logits.indexOf(Math.max(...logits)));
    }
    return seq;
  };
  try {
    expect(branch).toEqual(await greedy(branch.slice(0, T + K + 1)));
    // Trunk and branch are compared, their margin curves aligned at the fork.
    const curve = page.getByTestId('compare-curve');
    await expect(curve.locator('g.series')).toHaveCount(2);
    await expect(curve.locator('g.series').nth(1).locator('circle[data-x="0"]')).toHaveCount(1);
    await page.screenshot({ path: `${SHOTS}/branches-fork.png`, fullPage: true });

    // Token labels take black or white by their node's luminance (computed, so no CSS rule overrides it).
    const inks = new Set(await page.getByTestId('tree-token').evaluateAll((els) => els.map((el) => getComputedStyle(el).fill)));
    expect([...inks].every((c) => c === 'rgb(0, 0, 0)' || c === 'rgb(255, 255, 255)'), [...inks].join(' ')).toBe(true);

    // Fork points of the branch: the estimate first (this load's speed measured on the trunk and the fork);
    // every new token scored from two continuations per forced token.
    await page.getByTestId('fork-near-ties-only').uncheck();
    await page.getByTestId('fork-samples').fill('32');
    const estimate = page.getByTestId('fork-estimate');
    // it says which branch it scores (the one selected: the fork, node 1)
    await expect(estimate).toContainText(`Scores ${N} tokens of branch node 1 (the one selected above): ${N * 2 * 32} continuations`);
    await expect(estimate).toContainText('ms per token');
    expect(Number(await estimate.getAttribute('data-seconds'))).toBeGreaterThan(0);
    await page.getByTestId('fork-estimate').scrollIntoViewIfNeeded();
    await page.screenshot({ path: `${SHOTS}/branches-fork-estimate.png`, fullPage: true });
    // a long run shows the time left and cancels, keeping what is done
    await page.getByTestId('find-forks').click();
    // one unit with the estimate: continuations, the tokens scored, then (after the first few) the time left
    await expect(page.getByTestId('progress-detail')).toContainText(new RegExp(`of ${N * 2 * 32} continuations · \\d+ of ${N} tokens scored · (about \\d+ s|about \\d+ min|under a second) left`), { timeout: 60_000 });
    await page.getByTestId('progress').screenshot({ path: `${SHOTS}/branches-fork-eta.png` });
    // Cancel lies whole inside the line and the window (a trial found it past the right edge at 1440 px)
    const [line, cancel] = await Promise.all([page.getByTestId('progress').boundingBox(), page.getByTestId('cancel-job').boundingBox()]);
    expect(cancel!.x + cancel!.width, 'Cancel inside the progress line').toBeLessThanOrEqual(line!.x + line!.width);
    expect(cancel!.x + cancel!.width, 'Cancel inside the window').toBeLessThanOrEqual(page.viewportSize()!.width);
    await page.getByTestId('cancel-job').click();
    await settled(page);
    await expect(page.getByTestId('fork-cancelled')).toContainText(new RegExp(`Cancelled: \\d+ of ${N} tokens scored`));
    // cancelled part-way: one x axis for the score and the gap chart over every new token (the trial saw 0–5 above 0–7),
    // a dot per scored token only, and the score line not drawn across the unscored ones
    const xTicks = (id: string) => page.getByTestId(id).locator('.x-tick text').allTextContents();
    expect(await xTicks('fork-score-chart')).toEqual(await xTicks('fork-gap-chart'));
    const scoredNow = Number(/Cancelled: (\d+) of/.exec((await page.getByTestId('fork-cancelled').textContent())!)![1]);
    await expect(page.getByTestId('fork-score-chart').locator('circle')).toHaveCount(scoredNow);
    await page.getByTestId('fork-samples').fill('2');
    await expect(estimate).toContainText(`${N * 2 * 2} continuations`);
    await page.getByTestId('find-forks').click();
    // Pressed low in the view: its progress and then its chart are in the viewport, not above or below it.
    await expect(page.getByTestId('progress')).toBeInViewport();
    await settled(page);
    await expect(page.getByTestId('fork-score-chart')).toBeInViewport({ ratio: 0.9 });
    const rows = page.getByTestId('fork-row');
    await expect(rows).toHaveCount(N);
    for (const s of await rows.evaluateAll((els) => els.map((el) => Number((el as HTMLElement).dataset.score)))) expect(Number.isFinite(s) && s >= 0).toBe(true);
    // the result names its branch, and the score (nats) and the gap (probability) have an axis each
    await expect(page.getByTestId('fork-scored-branch')).toHaveText('Scored: branch node 1.');
    await expect(page.getByTestId('fork-score-chart')).toContainText('fork score (nats)');
    await expect(page.getByTestId('fork-score-chart')).not.toContainText('gap');
    await expect(page.getByTestId('fork-gap-chart')).toContainText('gap (probability)');
    await page.getByTestId('fork-points').scrollIntoViewIfNeeded();
    await page.screenshot({ path: `${SHOTS}/branches-fork-points.png`, fullPage: true });
    await page.screenshot({ path: `${SHOTS}/branches-fork-points-viewport.png` });

    // A fork from a prompt token (position 3 of the trunk): prompt[0..3) + its second alternative, continued to T + N.
    await page.getByTestId('tree-node-0').click();
    await page.locator('[data-testid="path-token"][data-position="3"]').click();
    await expect(page.getByTestId('fork-panel')).toHaveAttribute('data-position', '3');
    const promptAlt = Number(await page.getByTestId('alternative-1').getAttribute('data-id'));
    await page.getByTestId('fork-1').click();
    await settled(page);
    const pnode = page.getByTestId('tree-node-2');
    await expect(pnode).toHaveAttribute('data-start', '3');
    await expect(pnode).toHaveAttribute('data-parent', '0');
    await expect(pnode).toHaveAttribute('data-forwarded', String(T + N - 1 - 3)); // positions 3 .. T + N − 2; 0..2 from the cache
    const pbranch = await page.getByTestId('path-token').evaluateAll((els) => els.map((el) => Number((el as HTMLElement).dataset.id)));
    expect(pbranch.slice(0, 3)).toEqual(trunk.slice(0, 3));
    expect(pbranch[3]).toBe(promptAlt);
    expect(pbranch).toEqual(await greedy(pbranch.slice(0, 4)));

    // The colour legend's end notes never run together: with long futures the high one takes a line of its own.
    await page.getByTestId('good-future').fill(' the little boy with the ball');
    await page.getByTestId('bad-future').fill(' his big sister');
    await page.getByTestId('branch-max-new').fill('2');
    await page.getByTestId('branch-start').click();
    await settled(page);
    const [lo, hi] = await page.getByTestId('branch-legend').locator('.legend-notes span').evaluateAll((els) => els.map((el) => el.getBoundingClientRect().toJSON() as DOMRect));
    expect(lo.bottom <= hi.top || lo.right + 16 <= hi.left, `notes ${JSON.stringify([lo, hi])}`).toBe(true);
    await page.getByTestId('branch-legend').screenshot({ path: `${SHOTS}/branches-legend-long-futures.png` });
  } finally {
    e.dispose();
  }
});

test('the distractor example runs as a batch: one point per n with an interval, and its CSV export equals the runner\'s rows', async ({ page }) => {
  const studies = path.join(ROOT, 'public', 'studies');
  const runner = promisify(execFile)(process.execPath, [path.join(ROOT, 'bin', 'branchpoint.mjs'), 'batch', '--model', STORIES,
    '--template', path.join(studies, 'distractor.template.json'), '--values', path.join(studies, 'distractor.values.jsonl')], { maxBuffer: 64 << 20 });
  await page.setViewportSize({ width: 1280, height: 800 });
  await open(page);
  await expect(page.getByTestId('backend-badge')).toHaveAttribute('data-kind', 'webgpu');
  await page.getByTestId('tab-batch').click();
  await page.getByTestId('example-distractor').click();
  await expect(page.getByTestId('batch-template')).toHaveValue(/distractors/);
  await page.getByTestId('run-batch').click();
  await settled(page);
  const points = page.getByTestId('batch-plot').getByTestId('interval-point');
  await expect(points).toHaveCount(5);
  for (let i = 0; i < 5; i++) {
    const d = await points.nth(i).evaluate((el) => ({ ...(el as SVGElement).dataset }));
    expect(Number(d.x)).toBe(i);
    expect(Number(d.lo)).toBeLessThan(Number(d.mean));
    expect(Number(d.mean)).toBeLessThan(Number(d.hi));
  }
  await page.screenshot({ path: `${SHOTS}/batch-distractor.png`, fullPage: true });
  const [download] = await Promise.all([page.waitForEvent('download'), page.getByTestId('batch-view').getByRole('button', { name: 'CSV' }).click()]);
  const csv = csvParse(fs.readFileSync(await download.path(), 'utf8'));
  const lines = (await runner).stdout.trim().split('\n').map((l) => JSON.parse(l) as Record<string, unknown>);
  const rows = lines.slice(0, -1);
  expect(csv).toHaveLength(rows.length);
  // At 1280×800 the result columns are on screen (before the prompt text); rows the lens never makes visible say so, with a legend.
  for (const m of ['final_margin', 'sequence_margin', 'lens_visible_layer']) {
    const box = await page.getByTestId(`sort-${m}`).boundingBox();
    expect(box && box.x + box.width, `${m} column within the window`).toBeLessThanOrEqual(1280);
  }
  const never = rows.filter((r) => r.lens_visible_layer === null).length;
  if (never) await expect(page.getByTestId('batch-never-legend')).toContainText('never keeps its final sign');
  await expect(page.getByTestId('batch-table').locator('td.never')).toHaveCount(never);
  rows.forEach((want, i) => {
    for (const [k, v] of Object.entries(want)) {
      const got = csv[i][k];
      if (typeof v === 'number') expect(Math.abs(Number(got) - v), `row ${i} ${k}`).toBeLessThanOrEqual(1e-5);
      else expect(got, `row ${i} ${k}`).toBe(v === null ? '' : String(v));
    }
  });
});

test('a fork point’s decision traced back to the prompt’s sentences: the numbers shown equal the runner’s flow for the same input', async ({ page }) => {
  const Kf = 4;
  await page.setViewportSize({ width: 1280, height: 800 });
  await open(page);
  await page.getByTestId('prompt').fill(PROMPT);
  await page.getByTestId('tab-branches').click();
  await page.getByTestId('branch-max-new').fill('8');
  await page.getByTestId('branch-start').click();
  await settled(page);
  const T = referencePrompt(PROMPT).n_prompt;
  const tokens = await page.getByTestId('path-token').evaluateAll((els) => els.map((e) => ({ id: Number((e as HTMLElement).dataset.id) })));
  await page.locator(`[data-testid="path-token"][data-position="${T + Kf}"]`).click();
  const chosen = tokens[T + Kf].id;
  const alt = [0, 1].map((i) => page.getByTestId(`alternative-${i}`));
  const altId = Number(await alt[0].getAttribute('data-id')) === chosen ? Number(await alt[1].getAttribute('data-id')) : Number(await alt[0].getAttribute('data-id'));
  await page.getByTestId('fork-flow-run').click();
  await expect(page.getByTestId('fork-flow-spans')).toBeVisible({ timeout: 60_000 });
  await settled(page);
  const shown = await page.getByTestId('fork-flow-spans').locator('g[data-label]').evaluateAll((els) => els.map((g) => Number((g as SVGGElement).dataset.value)));
  const margin = Number(await page.getByTestId('fork-flow-caption').getAttribute('data-margin'));

  // the runner on the same input: the greedy trunk's first Kf new tokens generated again, the futures the two token texts, the prompt's sentences as spans
  const e = await Engine.load(new NodeFiles(STORIES), new CpuBackend());
  let good: string, bad: string, spans: { label: string; start: number; end: number }[];
  try {
    const ids = e.encodePrompt({ prompt: PROMPT });
    [good, bad] = [chosen, altId].map((id) => e.tokenStrings([id], tokens.slice(0, T + Kf).map((t) => t.id))[0]);
    const strs = e.tokenStrings(ids);
    const dot = strs.findIndex((s) => s.includes('.'));
    spans = [{ label: 'first', start: 1, end: dot + 1 }, { label: 'second', start: dot + 1, end: ids.length }];
  } finally {
    e.dispose();
  }
  const { stdout } = await promisify(execFile)(process.execPath, [path.join(ROOT, 'bin', 'branchpoint.mjs'), 'flow', '--model', STORIES, '--prompt', PROMPT, '--good', good, '--bad', bad, '--generated', String(Kf), '--spans', JSON.stringify(spans)], { maxBuffer: 64 << 20 });
  const want = JSON.parse(stdout) as { spans: { value: number }[]; margin: number; attribution: number[] };
  // the bars: the BOS token's credit, then one per sentence
  expect(shown.length).toBe(3);
  expect(Math.abs(margin - want.margin)).toBeLessThan(2e-3);
  expect(Math.abs(shown[0] - want.attribution[0]), 'BOS').toBeLessThan(2e-3);
  shown.slice(1).forEach((v, i) => expect(Math.abs(v - want.spans[i].value), `sentence ${i + 1}`).toBeLessThan(2e-3));
  await page.getByTestId('fork-flow').scrollIntoViewIfNeeded();
  await page.screenshot({ path: `${SHOTS}/branch-fork-flow.png` });
});
