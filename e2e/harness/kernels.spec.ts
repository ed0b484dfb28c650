import { test, expect } from '@playwright/test';
import type { KernelReport } from './kernels';

test('every WGSL kernel (both tunings) matches the CPU backend (golden-checked in Vitest) within 1e-4 on awkward shapes, on a real WebGPU adapter', async ({ page }) => {
  test.setTimeout(600_000);
  page.on('console', (m) => { if ((m.type() === 'error' || m.type() === 'warning') && !/status of 404/.test(m.text())) console.log(`[page ${m.type()}] ${m.text()}`); });
  page.on('pageerror', (e) => console.log(`[page error] ${e.message}`));
  await page.goto('/e2e/harness/kernels.html');
  await page.waitForFunction(() => typeof window.runKernelTests === 'function');
  const r: KernelReport = await page.evaluate(() => window.runKernelTests());

  expect(r.adapter, 'WebGPU adapter description').toMatch(/^WebGPU: \S/);
  console.log(`adapter: ${r.adapter}`);
  const ops = new Set(r.cases.map((c) => c.op));
  for (const op of ['embed', 'sliceRows', 'concatRows', 'clone', 'writeRows', 'sliceCols', 'gatherCols', 'linear', 'add', 'act', 'gatedAct', 'softcap', 'rmsNorm', 'layerNorm', 'rope', 'attention', 'logSoftmax', 'topk', 'rowOp', 'rowOp groups', 'sub', 'saeActivation', 'linear f16 w', 'linear fused', 'qkv rope', 'linear vec4 tiled', 'embed f16 table', 'sliceRows f16 table', 'linear split w', 'embed split table', 'sliceRows split table', 'linear quant w', 'linear fused quant w', 'linearBackward', 'linearBackward f16 w', 'linearBackward quant w', 'linearBackward split w', 'linearBackwardSum', 'linearBackwardSum split w', 'rmsNormBackward', 'layerNormBackward', 'actBackward', 'gatedActBackward', 'attentionBackward']) {
    expect(ops.has(op), `op ${op} is tested`).toBe(true);
  }
  console.log(`the adapter's own kernel tuning: ${r.tuning}`);
  for (const op of ['linear', 'linear vec4 tiled', 'linear fused', 'qkv rope', 'linear f16 w', 'linear split w', 'linear quant w', 'linear fused quant w', 'attention', 'logSoftmax', 'rowOp', 'rowOp groups', 'saeActivation']) {
    for (const tuning of ['gpu', 'cpu'] as const) expect(r.cases.some((c) => c.op === op && c.tuning === tuning), `op ${op} is tested with the '${tuning}' kernels`).toBe(true);
  }
  for (const c of r.cases) {
    console.log(`${c.maxErr <= c.tol ? 'ok  ' : 'FAIL'} ${c.tuning} ${c.op.padEnd(21)} ${c.name.padEnd(60)} maxAbs ${c.maxAbs.toExponential(2)} maxErr ${c.maxErr.toExponential(2)}`);
    expect.soft(c.maxErr, `${c.op} ${c.name}`).toBeLessThanOrEqual(c.tol);
  }
  for (const c of r.checks) {
    console.log(`${c.pass ? 'ok  ' : 'FAIL'} ${c.name}${c.detail ? ` — ${c.detail}` : ''}`);
    expect.soft(c.pass, `${c.name}: ${c.detail}`).toBe(true);
  }
});
