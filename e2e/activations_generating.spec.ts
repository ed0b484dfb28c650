import { test, expect } from '@playwright/test';
import * as fs from 'node:fs';
import { open, settled } from './app_page';

/**
 * Activations while generating (issue 29), in the Activations view: the deck's steered story
 * experiment opened, the hook captured at every step without and with its intervention, drawn as
 * step × index, and saved as .npy [steps, width]. (Row s against a full forward:
 * tests/integration/generation_activations.test.ts.) Also the README's screenshot scene (the
 * Generation view of that experiment) at the current tabs, into .artifacts.
 */
const SHOTS = '.artifacts/screenshots';
test.beforeAll(() => fs.mkdirSync(SHOTS, { recursive: true }));

test('capture blocks.3.hook_resid_post at every step of a steered generation: two [6, 64] grids and a .npy of that shape', async ({ page }) => {
  await page.setViewportSize({ width: 1500, height: 1000 });
  await open(page);
  const deck = JSON.parse(fs.readFileSync('public/experiments/deck.json', 'utf8')) as { experiments: { title: string }[] };
  const story = deck.experiments.find((x) => x.title === 'Steered vs unsteered story')!;
  await page.getByTestId('experiment-file').setInputFiles({ name: 'story.json', mimeType: 'application/json', buffer: Buffer.from(JSON.stringify(story)) });
  await expect(page.getByTestId('generation-output-steered')).toHaveAttribute('data-done', 'true', { timeout: 120_000 });
  await settled(page);
  await page.screenshot({ path: `${SHOTS}/readme-generation-1500.png`, fullPage: true });

  await page.setViewportSize({ width: 1280, height: 800 });
  await page.getByTestId('analyse').click();
  await settled(page);
  await page.getByTestId('tab-activations').click();
  await page.getByTestId('activations-hook').selectOption('blocks.3.hook_resid_post');
  await page.getByTestId('gen-capture-max-new').fill('6');
  await page.getByTestId('gen-capture-run').click();
  await settled(page);
  for (const which of ['unsteered', 'steered']) {
    await expect(page.getByTestId(`gen-capture-${which}`)).toHaveAttribute('data-steps', '6');
    await expect(page.getByTestId(`gen-capture-${which}`)).toHaveAttribute('data-width', '64');
  }
  const [dl] = await Promise.all([page.waitForEvent('download'), page.getByTestId('gen-capture-npy-steered').click()]);
  const bytes = fs.readFileSync((await dl.path())!);
  expect(bytes.subarray(1, 6).toString('latin1')).toBe('NUMPY');
  const header = bytes.subarray(10, 10 + bytes.readUInt16LE(8)).toString('latin1');
  expect(header).toMatch(/'descr': '<f4', 'fortran_order': False, 'shape': \(6, 64\)/);
  expect(bytes.length - 10 - bytes.readUInt16LE(8)).toBe(6 * 64 * 4);
  await page.getByTestId('gen-capture').scrollIntoViewIfNeeded();
  await page.screenshot({ path: `${SHOTS}/activations-generating-1280.png` });
});
