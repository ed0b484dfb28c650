import { test, expect } from '@playwright/test';
import * as fs from 'node:fs';
import { STORIES } from './golden';
import { open, settled } from './app_page';
import { parseCsv, pngSize, save } from './export_files';
import { CpuBackend } from '../workers/engine/backend/cpu';
import { Engine } from '../workers/engine/engine';
import { NodeFiles } from '../workers/engine/io/node_files';
import { parseBehaviourSet } from '../workers/engine/io/behaviour_set';
import { mechanismsStudy, type Behaviour } from '../workers/engine/studies/mechanisms';

/**
 * The Mechanisms view on the production build (WebGPU on SwiftShader): the shipped happy/sad (A) and
 * he/she (B) sets load with their futures, the study runs (patching off, to keep the spec short;
 * the patching curves are checked in Vitest), each block gets a verdict, and the JSON and CSV
 * exports carry the numbers the engine computes in Node on the CPU (within float32 tolerance).
 * Set A's futures are typed over as " very happy" / " very sad": they share the prefix " very", so
 * its margins are read at the decision point after it (the note says so, set B's has none) and the
 * cross-steering margins checked against the engine's are the ones measured there.
 */
const SHOTS = '.artifacts/screenshots';
const DOSE = 4;

/** Set A's futures as the spec types them: one shared token, then the set's own happy / sad. */
const A_FUTURES = { good: ' very happy', bad: ' very sad' };

const behaviour = (file: string, futures?: { good: string; bad: string }): Behaviour => {
  const s = parseBehaviourSet(file, fs.readFileSync(`public/${file}`, 'utf8'));
  const f = futures ?? s.futures!;
  return { name: s.name, positive: s.positive, negative: s.negative, good: { text: f.good }, bad: { text: f.bad } };
};

test('Mechanisms: happy/sad vs he/she, a verdict per block, exported as JSON and CSV with the engine\'s numbers', async ({ page }) => {
  const e = await Engine.load(new NodeFiles(STORIES), new CpuBackend());
  const want = await mechanismsStudy(e, { a: behaviour('steering/happy_sad.json', A_FUTURES), b: behaviour('probes/he_she.json'), dose: DOSE, causal: false });
  e.dispose();

  await page.setViewportSize({ width: 1280, height: 800 });
  await open(page);
  await page.getByTestId('tab-mechanisms').click();
  const view = page.getByTestId('mechanisms-view');
  await expect(page.getByTestId('mech-counts-a')).toContainText('16 positive, 16 negative');
  await expect(page.getByTestId('mech-counts-b')).toContainText('24 positive, 24 negative');
  await expect(page.getByTestId('mech-good-a')).toHaveValue(' happy');
  await expect(page.getByTestId('mech-bad-b')).toHaveValue(' she');
  await page.getByTestId('mech-good-a').fill(A_FUTURES.good);
  await page.getByTestId('mech-bad-a').fill(A_FUTURES.bad);
  await page.getByTestId('mech-causal').uncheck();
  await page.getByTestId('mech-dose').fill(String(DOSE));
  await page.getByTestId('run-mechanisms').click();
  await expect(page.getByTestId('mech-caption')).toBeVisible({ timeout: 120_000 });
  await settled(page);
  for (let l = 0; l < 5; l++) await expect(page.getByTestId(`mech-verdict-${l}`)).toHaveAttribute('data-kind', want.verdict[l].kind);
  await expect(page.getByTestId('mech-causal-line')).toContainText('not computed');
  await expect(page.getByTestId('mech-shared-prefix-a')).toContainText('decision point after the shared prefix ` very`, 1 token: set A\'s margins read the first tokens where the futures differ, “·happy” vs “·sa”');
  await expect(page.getByTestId('mech-shared-prefix-b')).toBeHidden();
  await page.getByTestId('mech-verdicts').scrollIntoViewIfNeeded();
  await page.screenshot({ path: `${SHOTS}/mechanisms-1280x800.png` });
  await page.screenshot({ path: `${SHOTS}/mechanisms-full.png`, fullPage: true });

  const json = JSON.parse((await save(page, view, 'JSON')).bytes.toString('utf8')) as { cosCaa: number[]; crossSteer: Record<string, { mean: number }[]>; naturalCorr: number[]; dose: number };
  expect(json.dose).toBe(DOSE);
  for (let l = 0; l < 5; l++) {
    expect(Math.abs(json.cosCaa[l] - want.cosCaa[l]!), `cos_caa ${l}`).toBeLessThan(1e-3);
    expect(Math.abs(json.naturalCorr[l] - want.naturalCorr[l]!), `natural r ${l}`).toBeLessThan(1e-2);
    for (const k of ['aOnA', 'aOnB', 'bOnB', 'bOnA'] as const) expect(Math.abs(json.crossSteer[k][l].mean - want.crossSteer[k][l].mean), `${k} ${l}`).toBeLessThan(1e-2);
  }
  const png = await save(page, view, 'PNG 2×');
  expect(pngSize(png.bytes).width).toBeGreaterThan(1000);
  fs.writeFileSync(`${SHOTS}/mechanisms-figure.png`, png.bytes);
  const csv = parseCsv((await save(page, view, 'CSV')).bytes.toString('utf8'));
  expect(csv[0].slice(0, 4)).toEqual(['block', 'hook', 'cos_caa', 'cos_probe']);
  expect(csv.slice(1).map((r) => r[0])).toEqual(['L0', 'L1', 'L2', 'L3', 'L4']);
  expect(csv.slice(1).map((r) => r[csv[0].indexOf('verdict')])).toEqual(want.verdict.map((v) => v.kind));
});
