import { test, expect } from '@playwright/test';
import * as fs from 'node:fs';
import { analyseWith, settled } from './app_page';
import { open } from './app_page';
import { STORIES } from './golden';
import { CpuBackend } from '../workers/engine/backend/cpu';
import { Engine } from '../workers/engine/engine';
import { NodeFiles } from '../workers/engine/io/node_files';
import { flowAttribution, type FlowResult } from '../workers/engine/studies/flow';
import { resolveSpan, spanFaithfulness, type SpanFaithfulnessResult } from '../workers/engine/studies/span_faithfulness';

/**
 * The Attribution view as a user meets it: spans picked on the token strip (the evidence " Tom",
 * the distractor " Lily"), one run, the strip coloured, one number per span, the deletion curve, the
 * direct logit attribution per layer and per head; a screenshot at 1280×800.
 */
test('attribution: spans on the strip get their numbers, with the deletion curve and the DLA panels', async ({ page }) => {
  await page.setViewportSize({ width: 1280, height: 800 });
  await open(page);
  await analyseWith(page, { prompt: 'Lily and Tom went to the park. Lily gave the ball to', good: ' Tom', bad: ' Sue' });
  await page.getByTestId('tab-attribution').click();
  await page.getByTestId('run-attribution').click();
  await expect(page.getByTestId('attribution-strip')).toBeVisible({ timeout: 120_000 });
  await settled(page);
  await page.getByTestId('attr-token-3').click();
  await page.getByTestId('attr-token-4').click({ modifiers: ['Shift'] });
  await page.getByTestId('span-label').fill('evidence: Tom');
  await page.getByTestId('add-span').click();
  await page.getByTestId('attr-token-13').click();
  await page.getByTestId('span-label').fill('distractor: Lily');
  await page.getByTestId('add-span').click();
  await page.getByTestId('run-attribution').click();
  await expect(page.getByTestId('span-bars')).toBeVisible({ timeout: 120_000 });
  await settled(page);
  await expect(page.getByTestId('span-bars')).toContainText('evidence: Tom');
  await expect(page.getByTestId('span-bars')).toContainText('distractor: Lily');
  await expect(page.getByTestId('deletion-curve')).toBeVisible();
  await expect(page.getByTestId('dla-heads')).toBeVisible();
  await expect(page.getByTestId('attribution-legend')).toContainText('toward');
  fs.mkdirSync('.artifacts/screenshots', { recursive: true });
  await page.screenshot({ path: '.artifacts/screenshots/attribution-1280x800.png' });
  await page.getByTestId('attribution-view').screenshot({ path: '.artifacts/screenshots/attribution-view.png' });
});

/** Two tokens in stories260K's vocabulary (" her", " friend") that the span-faithfulness futures open with. */
const SHARED_PREFIX = ' her friend';

/** The distractor study's prompt (public/studies/distractor.*: the template filled with one row of its values). */
function distractorRow(n: number): { prompt: string; good: string; bad: string; b: string; foil: string } {
  const t = JSON.parse(fs.readFileSync('public/studies/distractor.template.json', 'utf8')) as { prompt: string; good: string; bad: string };
  const row = fs.readFileSync('public/studies/distractor.values.jsonl', 'utf8').split('\n').filter(Boolean).map((l) => JSON.parse(l) as Record<string, string | number>).find((r) => r.n === n)!;
  const fill = (s: string) => s.replace(/\{(\w+)\}/g, (_, k: string) => String(row[k]));
  return { prompt: fill(t.prompt), good: fill(t.good), bad: fill(t.bad), b: String(row.b), foil: String(row.foil) };
}

test('the distractor study’s prompt: the evidence and distractor spans with the engine’s numbers, the deletion curve, and each span’s faithfulness', async ({ page }) => {
  const d = distractorRow(1);
  const e = await Engine.load(new NodeFiles(STORIES), new CpuBackend());
  // the same spans with futures that open with the same two tokens: read at the decision point after them
  const prefixed = { good: `${SHARED_PREFIX}${d.good}`, bad: `${SHARED_PREFIX}${d.bad}` };
  let want: FlowResult, wantSpans: SpanFaithfulnessResult, wantPrefixed: SpanFaithfulnessResult;
  try {
    const tokens = e.tokenStrings(e.encodePrompt({ prompt: d.prompt }));
    const spans = [resolveSpan({ label: 'evidence', text: ` ${d.b}` }, tokens, 'e2e'), resolveSpan({ label: 'distractor', text: ` ${d.foil}` }, tokens, 'e2e')];
    want = await flowAttribution(e, { prompt: d.prompt, good: { text: d.good }, bad: { text: d.bad }, spans });
    wantSpans = await spanFaithfulness(e, { rows: [{ prompt: d.prompt, spans }], good: d.good, bad: d.bad, methods: ['flow', 'grad_x_input'] });
    wantPrefixed = await spanFaithfulness(e, { rows: [{ prompt: d.prompt, spans }], ...prefixed, methods: ['flow', 'grad_x_input'] });
  } finally {
    e.dispose();
  }
  await page.setViewportSize({ width: 1280, height: 800 });
  await open(page);
  await analyseWith(page, { prompt: d.prompt, good: d.good, bad: d.bad });
  await page.getByTestId('tab-attribution').click();
  await page.getByTestId('run-attribution').click();
  await expect(page.getByTestId('attribution-strip')).toBeVisible({ timeout: 120_000 });
  await settled(page);
  for (const s of want.spans) {
    await page.getByTestId(`attr-token-${s.start}`).click();
    if (s.end - s.start > 1) await page.getByTestId(`attr-token-${s.end - 1}`).click({ modifiers: ['Shift'] });
    await page.getByTestId('span-label').fill(s.label);
    await page.getByTestId('add-span').click();
  }
  await page.getByTestId('run-attribution').click();
  await expect(page.getByTestId('span-bars')).toBeVisible({ timeout: 120_000 });
  await settled(page);
  const bars = page.getByTestId('span-bars');
  for (const s of want.spans) {
    await expect(bars).toContainText(s.label);
    const shown = await bars.locator('text').evaluateAll((els) => els.map((x) => x.textContent ?? ''));
    const at = shown.findIndex((t) => t.startsWith(s.label));
    expect(Math.abs(Number(shown[at + 1].replace('−', '-').replace('+', '')) - s.value), `span ${s.label}`).toBeLessThan(2e-3);
  }
  await expect(page.getByTestId('deletion-curve')).toBeVisible();
  // the spans' own faithfulness, two methods, equal to the engine's in Node
  await page.getByTestId('run-span-faithfulness').click();
  await expect(page.getByTestId('span-faithfulness-table')).toBeVisible({ timeout: 120_000 });
  await settled(page);
  for (const [mi, s] of wantSpans.summary.entries()) {
    for (let j = 0; j < 2; j++) expect(Math.abs(Number(await page.getByTestId(`span-value-${s.method}-${j}`).getAttribute('data-mean')) - s.values[j].mean), `${s.method} span ${j}`).toBeLessThan(2e-3);
    expect(Math.abs(Number(await page.getByTestId(`span-deletion-area-${s.method}`).getAttribute('data-mean')) - wantSpans.summary[mi].deletionArea.mean)).toBeLessThan(2e-3);
  }
  await expect(page.getByTestId('span-deletion-curve')).toBeVisible();
  await page.screenshot({ path: '.artifacts/screenshots/attribution-distractor-1280x800.png' });
  await page.getByTestId('span-faithfulness').scrollIntoViewIfNeeded();
  await page.screenshot({ path: '.artifacts/screenshots/attribution-span-faithfulness.png' });
  await expect(page.getByTestId('span-shared-prefix')).toBeHidden();

  // futures with a shared prefix: the curves are read where they differ, the note says so, the numbers are the engine's there
  await page.getByTestId('good-future').fill(prefixed.good);
  await page.getByTestId('bad-future').fill(prefixed.bad);
  await page.getByTestId('run-span-faithfulness').click();
  await expect(page.getByTestId('span-shared-prefix')).toContainText(`decision point after the shared prefix \`${SHARED_PREFIX}\`, 2 tokens: the curves of 1 of 1 prompts read the first tokens where the futures differ`, { timeout: 120_000 });
  await settled(page);
  for (const s of wantPrefixed.summary) {
    for (let j = 0; j < 2; j++) expect(Math.abs(Number(await page.getByTestId(`span-value-${s.method}-${j}`).getAttribute('data-mean')) - s.values[j].mean), `${s.method} span ${j} at the decision point`).toBeLessThan(2e-3);
  }
  await page.getByTestId('span-shared-prefix').scrollIntoViewIfNeeded();
  await page.screenshot({ path: '.artifacts/screenshots/attribution-span-shared-prefix.png' });
});
