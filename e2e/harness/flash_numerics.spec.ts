import { test, expect } from '@playwright/test';

/**
 * The models per kernel tuning. On Chromium's SwiftShader only its own 'cpu' kernels run here, on
 * all four models (45 s at load average 20 on 2 cores); both tunings run on the Node WebGPU adapter
 * in Vitest (tests/gpu/flash_decoding.test.ts, ~30 s), where the 'gpu' kernels are not emulated
 * 64 lanes at a time on a CPU (2.2 min for two fixtures here).
 */
const MODELS = {
  cpu: ['stories260K', 'llama-tiny', 'mistral-tiny', 'gemma2-tiny'],
} as const;

for (const tuning of ['cpu'] as const) {
  test(`flash-decoding forced on ('${tuning}' kernels): split attention reproduces the golden logits, KV-cache step logits and greedy ids (${MODELS[tuning].join(', ')})`, async ({ page }) => {
    test.setTimeout(600_000);
    page.on('pageerror', (e) => console.log(`[page error] ${e.message}`));
    await page.goto('/e2e/harness/numerics.html');
    await page.waitForFunction(() => typeof window.runFlashNumerics === 'function');
    const models: string[] = [...MODELS[tuning]];
    const r = await page.evaluate(([t, m]) => window.runFlashNumerics(t, m), [tuning, models] as [typeof tuning, string[]]);
    expect(r.adapter).toMatch(/^WebGPU: \S/);
    expect(r.tuning).toBe(tuning);
    expect(r.skipped).toEqual([]);
    expect(Object.keys(r.splits)).toEqual(MODELS[tuning]);
    for (const [model, s] of Object.entries(r.splits)) {
      console.log(`${model.padEnd(14)} split attention ×${s.partial}, combine ×${s.combine}, one-pass ×${s.onePass}`);
      // calls whose keys fit one chunk (a short prompt's prefill) keep the one-pass kernel
      expect.soft(s.partial, `${model}: split attention ran`).toBeGreaterThan(s.onePass);
      expect.soft(s.combine, `${model}: one combine per split call`).toBe(s.partial);
    }
    for (const m of Object.keys(r.splits)) expect(r.rows.some((x) => x.model === m && /KV-cache step logits/.test(x.what)), `${m}: step logits compared`).toBe(true);
    for (const x of r.rows) {
      console.log(`${x.maxAbs <= x.tol ? 'ok  ' : 'FAIL'} ${x.model.padEnd(14)} ${x.what.padEnd(96)} max |Δ| ${x.maxAbs.toExponential(2)}`);
      expect.soft(x.maxAbs, `${x.model} ${x.what}`).toBeLessThanOrEqual(x.tol);
    }
    expect(r.generations.length).toBeGreaterThan(0);
    for (const g of r.generations) expect.soft(g.got, `${g.model} ${g.what}`).toEqual(g.want);
  });
}
