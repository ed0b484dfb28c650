import { test, expect } from '@playwright/test';

/** The MoE fixtures' sparse experts on Chromium's WebGPU (SwiftShader), both kernel tunings: e2e/harness/moe_numerics.ts. */
for (const tuning of ['cpu', 'gpu'] as const) {
  test(`MoE fixtures on WebGPU ('${tuning}' kernels): logits and router logits against HF, logits against the CPU backend, the KV-cache continuation`, async ({ page }) => {
    test.setTimeout(180_000);
    page.on('pageerror', (e) => console.log(`[page error] ${e.message}`));
    await page.goto('/e2e/harness/numerics.html');
    await page.waitForFunction(() => typeof window.runMoeNumerics === 'function');
    const r = await page.evaluate((t) => window.runMoeNumerics(t), tuning);
    expect(r.adapter).toMatch(/^WebGPU: \S/);
    expect(r.tuning).toBe(tuning);
    expect(r.rows.length).toBe(3 * 3 * 4);
    for (const x of r.rows) {
      console.log(`${x.maxAbs <= x.tol ? 'ok  ' : 'FAIL'} ${x.model.padEnd(15)} ${x.what.padEnd(84)} max |Δ| ${x.maxAbs.toExponential(2)}`);
      expect.soft(x.maxAbs, `${x.model} ${x.what}`).toBeLessThanOrEqual(x.tol);
    }
  });
}
