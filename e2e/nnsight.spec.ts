import { test, expect } from '@playwright/test';
import { execFile, execFileSync } from 'node:child_process';
import { promisify } from 'node:util';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { open } from './app_page';

/**
 * The nnsight export and results files in the production build: Export nnsight script downloads a
 * script of the current experiment that compiles (python3) and carries its prompt; Open results…
 * shows a results file the runner writes in the test (`branchpoint results`) in the Opened results
 * view, labelled with the model and where it ran, with its numbers; a bad file is refused with the
 * field and why, and the experiment stays as it was.
 */
const SHOTS = '.artifacts/screenshots';
const CORRUPT = 'The little boy saw a dog. Then';
const PYTHON = '/usr/bin/python3';

test('Export nnsight script, then Open results… from the runner shows its lens, patching, dose–response and window, read-only', async ({ page }) => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'nnsight-e2e-'));
  const resultsFile = path.join(dir, 'results.json');
  // the runner writes the results file while the app loads
  const results = (experiment: string, out: string, more: string[] = []) => promisify(execFile)(process.execPath, ['bin/branchpoint.mjs', 'results', '--experiment', path.join('tests', 'nnsight', 'experiments', experiment), ...more, '--out', out]);
  const runner = Promise.all([
    results('lens.json', resultsFile, ['--corrupt', CORRUPT]),
    results('sweep.json', path.join(dir, 'sweep.json')),
    results('steer.json', path.join(dir, 'steer.json')),
  ]);
  await page.setViewportSize({ width: 1280, height: 800 });
  await open(page);
  const prompt = await page.getByTestId('prompt').inputValue();

  const [dl] = await Promise.all([page.waitForEvent('download'), page.getByTestId('export-nnsight').click()]);
  expect(dl.suggestedFilename()).toMatch(/\.nnsight\.py$/);
  const script = fs.readFileSync(await dl.path(), 'utf8');
  expect(script).toMatch(/^REMOTE = False/m);
  expect(script).toContain(`PROMPT = ${JSON.stringify(prompt)}`);
  // the bundled model is on no Hub under its name: MODEL_ID is its folder in this repository, and the bar says so
  expect(script).toMatch(/^MODEL_ID = "public\/models\/stories260K"/m);
  await expect(page.getByTestId('experiment-notice')).toContainText('MODEL_ID is its HF files in the Branchpoint repository, "public/models/stories260K"');
  if (fs.existsSync(PYTHON)) {
    const file = path.join(dir, 'export.py');
    fs.writeFileSync(file, script);
    execFileSync(PYTHON, ['-m', 'py_compile', file]);
  }

  await runner;
  const written = JSON.parse(fs.readFileSync(resultsFile, 'utf8'));
  await page.getByTestId('results-file').setInputFiles(resultsFile);
  const view = page.getByTestId('results-view');
  await expect(view).toBeVisible();
  await expect(page.getByTestId('results-model')).toHaveText('stories260K');
  await expect(page.getByTestId('results-where')).toHaveText('branchpoint runner');
  await expect(page.getByTestId('results-final-margin')).toHaveText(new RegExp(Math.abs(written.lens.final_margin.at(-1)).toFixed(4)));
  await expect(page.getByTestId('results-lens')).toBeVisible();
  await expect(page.getByTestId('results-patch')).toBeVisible();
  await expect(page.getByTestId('prompt')).toHaveValue(prompt);
  await page.screenshot({ path: `${SHOTS}/results-1280x800.png` });
  await view.screenshot({ path: `${SHOTS}/results-view.png` });

  // the dose–response and window sections of the other two experiments' files
  await page.getByTestId('results-file').setInputFiles(path.join(dir, 'sweep.json'));
  await expect(page.getByTestId('results-sweep')).toBeVisible();
  await page.getByTestId('results-sweep-section').screenshot({ path: `${SHOTS}/results-sweep.png` });
  const steer = JSON.parse(fs.readFileSync(path.join(dir, 'steer.json'), 'utf8'));
  await page.getByTestId('results-file').setInputFiles(path.join(dir, 'steer.json'));
  await expect(page.getByTestId('results-ponr')).toHaveText(steer.window.point_of_no_return === null ? 'none' : `k = ${steer.window.point_of_no_return}`);
  await page.getByTestId('results-window-section').screenshot({ path: `${SHOTS}/results-window.png` });

  // a damaged file: refused with the field and why; the view and the experiment as they were
  const bad = path.join(dir, 'bad.json');
  written.lens.lens_margin[1].pop();
  fs.writeFileSync(bad, JSON.stringify(written));
  await page.getByTestId('results-file').setInputFiles(bad);
  await expect(page.getByTestId('error-banner')).toContainText('bad.json could not be opened as results');
  await expect(page.getByTestId('error-banner')).toContainText('lens.lens_margin[1]: has');
  await expect(page.getByTestId('prompt')).toHaveValue(prompt);
  await expect(page.getByTestId('results-window')).toBeVisible();
});
