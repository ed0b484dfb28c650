import { test, expect } from '@playwright/test';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { fileURLToPath } from 'node:url';
import type { NumericsReport } from './numerics';

/** ../shared (or $BRANCHPOINT_SHARED), as vite.config.ts serves it; fails loudly when absent. */
const SHARED = path.resolve(process.env.BRANCHPOINT_SHARED ?? fileURLToPath(new URL('../../../shared', import.meta.url)));
const FIXTURES = path.join(SHARED, 'fixtures');

const TOL = 1e-4;

test('WebGPU engine reproduces the golden logits, residuals, attention and greedy ids of the real models and every registered fixture', async ({ page }) => {
  test.setTimeout(600_000);
  if (!fs.existsSync(FIXTURES)) throw new Error(`golden fixtures not found at ${FIXTURES}: set BRANCHPOINT_SHARED to the shared/ folder`);
  const fixtures = fs.readdirSync(FIXTURES).filter((d) => fs.existsSync(path.join(FIXTURES, d, 'config.json'))).sort();
  expect(fixtures.length, 'fixture folders found').toBeGreaterThan(0);

  // 404s are expected: HttpFiles.has() probes for model.safetensors.index.json
  page.on('console', (m) => { if ((m.type() === 'error' || m.type() === 'warning') && !/status of 404/.test(m.text())) console.log(`[page ${m.type()}] ${m.text()}`); });
  page.on('pageerror', (e) => console.log(`[page error] ${e.message}`));
  await page.goto('/e2e/harness/numerics.html');
  await page.waitForFunction(() => typeof window.runNumerics === 'function');
  const r: NumericsReport = await page.evaluate((f) => window.runNumerics(f), fixtures);

  expect(r.adapter).toMatch(/^WebGPU: \S/);
  console.log(`adapter: ${r.adapter}`);
  for (const s of r.skipped) console.log(`not registered: ${s}`);
  const tested = new Set(r.rows.map((x) => x.model));
  for (const m of ['stories260K', 'aidreams260K']) expect(tested.has(m), `${m} was run`).toBe(true);
  expect(tested.size + r.skipped.length, 'every fixture was run or reported unregistered').toBe(2 + fixtures.length);

  for (const x of r.rows) {
    console.log(`${x.maxAbs <= TOL ? 'ok  ' : 'FAIL'} ${x.model.padEnd(14)} ${x.what.padEnd(62)} max |Δ| ${x.maxAbs.toExponential(2)}`);
    expect.soft(x.maxAbs, `${x.model} ${x.what}`).toBeLessThanOrEqual(TOL);
  }
  for (const g of r.generations) {
    const same = g.got.length === g.want.length && g.got.every((id, i) => id === g.want[i]);
    console.log(`${same ? 'ok  ' : 'FAIL'} ${g.model.padEnd(14)} ${g.what}`);
    expect.soft(g.got, `${g.model} ${g.what}`).toEqual(g.want);
  }
});
