import { test, expect } from '@playwright/test';
import * as fs from 'node:fs';
import { fileURLToPath } from 'node:url';
import { STORIES } from './golden';
import { open, settled, buildCaa } from './app_page';
import { CpuBackend } from '../workers/engine/backend/cpu';
import { Engine } from '../workers/engine/engine';
import { NodeFiles } from '../workers/engine/io/node_files';
import { parseLabelledSet } from '../workers/engine/io/prompt_set';
import { probeUnderIntervention, type ProbeUnderResult } from '../workers/engine/studies/probe_under';
import { toIntervention } from '../workers/engine/steering/spec';
import { caaVector } from '../workers/engine/studies/vectors';

/**
 * The Probes view's "Under an intervention" panel: the he/she probes (public/probes/he_she.json,
 * futures " he" / " she" from the file) read under the happy − sad CAA vector built in the Vectors
 * tab (blocks.3.hook_resid_post, α = 6 from the set), on WebGPU, against the engine on the CPU in
 * Node; picking and running there leaves the experiment (the link) as it was.
 */
const read = (p: string) => fs.readFileSync(fileURLToPath(new URL(p, import.meta.url)), 'utf8');
const SET = parseLabelledSet('he_she.json', read('../public/probes/he_she.json'));
const HAPPY = JSON.parse(read('../public/steering/happy_sad.json')) as { positive: string[]; negative: string[] };
const HOOK = 'blocks.3.hook_resid_post';
const SHOTS = '.artifacts/screenshots';

let want: ProbeUnderResult;

test.beforeAll(async () => {
  fs.mkdirSync(SHOTS, { recursive: true });
  const e = await Engine.load(new NodeFiles(STORIES), new CpuBackend());
  try {
    const v = await caaVector(e, { positive: HAPPY.positive, negative: HAPPY.negative, hook: HOOK });
    const iv = toIntervention({ hook: HOOK, type: 'add', vector: v.vector, alpha: 6 }, e.spec, { nPrompt: 1 });
    want = await probeUnderIntervention(e, { ...SET, good: { text: ' he' }, bad: { text: ' she' }, interventions: () => [iv] });
  } finally {
    e.dispose();
  }
});

test('probes under the happy − sad vector: both columns and the flags as the engine computes them; the experiment unchanged', async ({ page }) => {
  await page.setViewportSize({ width: 1280, height: 800 });
  await open(page);
  await buildCaa(page);
  await page.getByTestId('tab-probe').click();
  await expect(page.getByTestId('probe-under-good')).toHaveValue(' he');
  await expect(page.getByTestId('probe-under-bad')).toHaveValue(' she');
  await expect(page.getByTestId('run-probe-under')).toBeDisabled(); // nothing picked yet, and the panel says so
  await expect(page.getByTestId('probe-under-why')).toContainText('pick an intervention');
  await page.waitForTimeout(500); // the link follows the experiment after 300 ms
  const before = new URL(page.url()).hash;
  const option = page.getByTestId('probe-under-pick').locator('option', { hasText: HOOK });
  await page.getByTestId('probe-under-pick').selectOption({ label: (await option.first().textContent())! });
  await expect(page.getByTestId('probe-under-alpha')).toHaveValue('6');
  await page.getByTestId('run-probe-under').click();
  await settled(page);
  const cell = (i: number, j: number) => page.getByTestId(`probe-under-cell-${i}-${j}`).textContent().then(Number);
  for (let i = 0; i < want.hooks.length; i++) {
    // held-out predictions are signs of scores: WebGPU activations ~1e-5 from the CPU's give the same accuracies (one prompt of slack)
    expect(Math.abs((await cell(i, 0)) - want.accuracy[i])).toBeLessThanOrEqual(1 / 48 + 1e-3);
    expect(Math.abs((await cell(i, 1)) - want.accuracySteered[i])).toBeLessThanOrEqual(1 / 48 + 1e-3);
    expect(Math.abs((await cell(i, 3)) - want.aurocSteered[i])).toBeLessThanOrEqual(0.02);
  }
  console.log(`flags (WebGPU): ${await page.getByTestId('probe-under-flag').getAttribute('data-flags')}; Node CPU: ${want.flag.join(',')}; score shifts ${want.scoreShift.map((s) => s.mean.toFixed(3)).join(' ')}`);
  await expect(page.getByTestId('probe-under-flag')).toHaveAttribute('data-flags', want.flag.map((f) => f ?? '').join(','));
  await expect(page.getByTestId('probe-under-behaviour')).toContainText(`shifts by ${want.behaviourShift.mean >= 0 ? '+' : '−'}`);
  await page.waitForTimeout(500);
  expect(new URL(page.url()).hash).toBe(before);
  await page.getByTestId('probe-under').scrollIntoViewIfNeeded();
  await page.screenshot({ path: `${SHOTS}/probe-under.png` });
  await page.screenshot({ path: `${SHOTS}/probe-under-full.png`, fullPage: true });
});
