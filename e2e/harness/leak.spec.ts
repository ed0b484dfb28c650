import { test, expect } from '@playwright/test';

/**
 * Issue #8 fault 1: every forward leaked one GPU buffer per layer (154 → 1154 buffers over 100
 * analyses). The WebGPU backend's own counters (buffers created and not destroyed, and their bytes)
 * must be flat across repeated analyse / generate / sweep / patch / patching-grid / branch-tree runs once the pool is warm, and
 * the JS heap (after a forced GC) must not grow with the number of runs.
 */
test('GPU buffers, GPU bytes and the JS heap stay flat over 100 analyse/generate/sweep/patch/patching-grid/branch runs on WebGPU', async ({ page }) => {
  test.setTimeout(300_000);
  page.on('pageerror', (e) => console.log(`[page error] ${e.message}`));
  await page.goto('/e2e/harness/leak.html');
  await page.waitForFunction(() => typeof window.runLeakRounds === 'function');
  const cdp = await page.context().newCDPSession(page);
  const heap = async (): Promise<number> => {
    await cdp.send('HeapProfiler.collectGarbage');
    return (await cdp.send('Runtime.getHeapUsage')).usedSize;
  };
  const warm = await page.evaluate(() => window.runLeakRounds(2)); // fills the buffer pool and compiles the pipelines
  const heap0 = await heap();
  const mid = await page.evaluate(() => window.runLeakRounds(7));
  const heap1 = await heap();
  const end = await page.evaluate(() => window.runLeakRounds(7));
  const heap2 = await heap();
  const runs = warm.runs + mid.runs + end.runs;
  console.log(`GPU buffers after warm-up ${warm.buffers} (${warm.bytes} bytes), after ${warm.runs + mid.runs} runs ${mid.buffers}, after ${runs} runs ${end.buffers} (${end.bytes} bytes)`);
  console.log(`JS heap after warm-up ${(heap0 / 1e6).toFixed(2)} MB, +7 rounds ${(heap1 / 1e6).toFixed(2)} MB, +14 rounds ${(heap2 / 1e6).toFixed(2)} MB`);
  expect(runs).toBeGreaterThanOrEqual(100);
  expect(end.buffers, `GPU buffers after ${runs} runs vs after ${warm.runs + mid.runs}`).toBe(mid.buffers);
  expect(mid.buffers, `GPU buffers after ${warm.runs + mid.runs} runs vs after warm-up`).toBe(warm.buffers);
  expect(end.bytes).toBe(warm.bytes);
  // A leak of one small object per run would grow the heap linearly; allow 1 MB of noise over 100 runs.
  expect(heap2 - heap0, 'JS heap growth over 100 runs (bytes)').toBeLessThan(1e6);
});
