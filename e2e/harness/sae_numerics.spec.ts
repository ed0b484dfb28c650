import { test, expect } from '@playwright/test';

for (const tuning of ['cpu', 'gpu'] as const) {
  test(`both shared SAEs on WebGPU ('${tuning}' kernels): activations and reconstructions match their references within 1e-4 with the reference L0, and the feature clamp equals the hand formula`, async ({ page }) => {
    test.setTimeout(300_000);
    page.on('pageerror', (e) => console.log(`[page error] ${e.message}`));
    await page.goto('/e2e/harness/numerics.html');
    await page.waitForFunction(() => typeof window.runSaeNumerics === 'function');
    const r = await page.evaluate((t) => window.runSaeNumerics(t), tuning);
    expect(r.adapter).toMatch(/^WebGPU: \S/);
    expect(r.tuning).toBe(tuning);
    expect(r.rows.length).toBe(2 * (3 * 4 + 1));
    for (const x of r.rows) {
      console.log(`${x.maxAbs <= x.tol ? 'ok  ' : 'FAIL'} ${x.model.padEnd(9)} ${x.what.padEnd(80)} max |Δ| ${x.maxAbs.toExponential(2)}`);
      expect.soft(x.maxAbs, `${x.model} ${x.what}`).toBeLessThanOrEqual(x.tol);
    }
    for (const l of r.l0) expect.soft(l.got, `L0 per position, ${l.what}`).toEqual(l.want);
  });
}
