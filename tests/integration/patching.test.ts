import * as fs from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CpuBackend } from '../../workers/engine/backend/cpu';
import { Engine } from '../../workers/engine/engine';
import { NodeFiles } from '../../workers/engine/io/node_files';
import { logSoftmaxCpu } from '../../workers/engine/ops/logits.cpu';
import { patchingGrid, type PatchingRequest, type PatchingResult } from '../../workers/engine/studies/patching';
import { sharedPath } from '../shared';
import type { Progress } from '../../workers/engine/progress';

/**
 * Activation patching (DESIGN.md §3; Heimersheim & Nanda arXiv 2404.15255) on stories260K with the
 * Lily/Tom prompt of the golden references and its name swap (21 tokens each).
 */
let e: Engine;
const ref = JSON.parse(fs.readFileSync(sharedPath('models', 'stories260K', 'reference', 'reference.json'), 'utf8')) as { prompts: { name: string; prompt: string; input_ids: number[]; last_prompt_position_logits: number[] }[] };
const lily = ref.prompts.find((p) => p.name === 'lily_tom_ball')!;
const CORRUPT = 'Tom and Lily went to the park. Lily gave the ball to';
const req = (over: Partial<PatchingRequest> = {}): PatchingRequest => ({ clean: lily.prompt, corrupt: CORRUPT, good: { text: ' Tom' }, bad: { text: ' Lily' }, hook: 'resid_pre', ...over });
const grids = new Map<string, PatchingResult>();
async function grid(over: Partial<PatchingRequest> = {}): Promise<PatchingResult> {
  const key = JSON.stringify(over);
  if (!grids.has(key)) grids.set(key, await patchingGrid(e, req(over)));
  return grids.get(key)!;
}

beforeAll(async () => {
  e = await Engine.load(new NodeFiles(sharedPath('models', 'stories260K')), new CpuBackend());
});
afterAll(() => e.dispose());

describe('activation patching grid', () => {
  it('the clean margin is the golden last-position margin of " T" (first token of " Tom") over " Lily"', async () => {
    const r = await grid();
    expect(r.cleanIds).toEqual(lily.input_ids);
    const lp = logSoftmaxCpu(Float32Array.from(lily.last_prompt_position_logits), 512);
    expect(r.good.firstIds).toHaveLength(1);
    expect(r.cleanMargin).toBeCloseTo(lp[r.good.firstIds[0]] - lp[r.bad.firstIds[0]], 4);
    expect(r.cleanMargin).not.toBeCloseTo(r.corruptMargin, 2);
    expect([r.nLayers, r.nCols, r.columns]).toEqual([5, 21, 'position']);
  });

  it('patching every position of resid_pre at layer 0 recovers 1 (denoise) or 0 (noise) within 1e-5; patching nothing gives 0', async () => {
    const d = await grid();
    expect(Math.abs(d.layerRecovery[0] - 1)).toBeLessThanOrEqual(1e-5);
    const n = await grid({ direction: 'noise' });
    expect(Math.abs(n.layerRecovery[0])).toBeLessThanOrEqual(1e-5);
    // Position 0 (BOS) holds equal values in both runs: the patch is a no-op, r = 0 exactly —
    // also in the naive loop, which runs the forward.
    const naive = await grid({ reuse: false });
    for (let l = 0; l < 5; l++) {
      expect(d.recovery[l * 21]).toBe(0);
      expect(naive.recovery[l * 21]).toBe(0);
    }
    // Some cell recovers a real part of the gap (the grid is not all zeros).
    expect(Math.max(...d.recovery)).toBeGreaterThan(0.3);
  });

  it('patching every position of resid_pre at any layer is the source run (r = 1 denoise, 0 noise); a cell where both runs hold equal values is r = 0 without a forward', async () => {
    // its own grid, not the memo: Stryker's per-test coverage credits the code a memoised grid ran to the test that first computed it
    const d = await patchingGrid(e, req()), n = await grid({ direction: 'noise' });
    for (let l = 0; l < 5; l++) {
      expect(Math.abs(d.layerRecovery[l] - 1)).toBeLessThanOrEqual(1e-5);
      expect(Math.abs(n.layerRecovery[l])).toBeLessThanOrEqual(1e-5);
    }
    // Layer 0's resid_pre is the embedding of each token: equal where the two prompts' tokens are equal. Later layers
    // see earlier positions only (causal attention): equal before the first position whose token differs.
    const same = d.cleanIds.map((id, t) => id === d.corruptIds[t]);
    const firstDiff = same.indexOf(false);
    expect(firstDiff).toBeGreaterThan(0);
    same.forEach((eq, t) => { if (eq) expect(d.recovery[t]).toBe(0); else expect(d.recovery[t]).not.toBe(0); });
    for (let l = 1; l < 5; l++) for (let t = 0; t < 21; t++) if (t < firstDiff) expect(d.recovery[l * 21 + t]).toBe(0);
    expect(d.cellsSkipped).toBe(same.filter(Boolean).length + 4 * firstDiff);
  });

  it('the prefix-reuse path equals the naive loop (a full forward per cell) bit for bit, for every hook and both directions', async () => {
    for (const over of [{}, { hook: 'attn_out' as const }, { hook: 'mlp_out' as const, direction: 'noise' as const }, { hook: 'z' as const }]) {
      const fast = await grid(over);
      const slow = await grid({ ...over, reuse: false });
      expect(fast.patchedMargin, JSON.stringify(over)).toEqual(slow.patchedMargin);
      expect(fast.layerRecovery).toEqual(slow.layerRecovery);
      expect(fast.positionsComputed).toBeLessThan(slow.positionsComputed);
    }
  });

  it('per-head z patches of all heads of a layer equal the whole-layer attn_out patch', async () => {
    const z = await grid({ hook: 'z' });
    const a = await grid({ hook: 'attn_out' });
    expect([z.nCols, z.columns]).toEqual([8, 'head']);
    for (let l = 0; l < 5; l++) expect(z.layerRecovery[l]).toBeCloseTo(a.layerRecovery[l], 6);
  });

  it('the sequence metric is the teacher-forced margin of the multi-token " Tom" and matches analyse()', async () => {
    const r = await grid({ metric: 'sequence', hook: 'mlp_out' });
    const clean = await e.analyse({ prompt: lily.prompt, good: { text: ' Tom' }, bad: { text: ' Lily' } });
    const corrupt = await e.analyse({ prompt: CORRUPT, good: { ids: r.good.sequences }, bad: { ids: r.bad.sequences } });
    expect(r.good.sequences[0].length).toBe(2);
    expect(r.cleanMargin).toBeCloseTo(clean.sequenceMargin, 5);
    expect(r.corruptMargin).toBeCloseTo(corrupt.sequenceMargin, 5);
    const naive = await grid({ metric: 'sequence', hook: 'mlp_out', reuse: false });
    expect(r.patchedMargin).toEqual(naive.patchedMargin);
  });

  it('reports progress, stops on cancel, and refuses prompts of different lengths naming both', async () => {
    const progress: Progress[] = [];
    await patchingGrid(e, req({ hook: 'z' }), (p) => progress.push(p));
    expect(progress.map((p) => p.done)).toEqual(Array.from({ length: 45 }, (_, i) => i + 1));
    expect(progress.every((p) => p.total === 45)).toBe(true);
    const ctrl = new AbortController();
    let seen = 0;
    await expect(patchingGrid(e, req(), () => { if (++seen === 3) ctrl.abort(); }, ctrl.signal)).rejects.toThrow(/abort/i);
    expect(seen).toBe(3);
    await expect(patchingGrid(e, req({ corrupt: 'Lily and Tom went to the park. Tom gave the ball to' }))).rejects.toThrow('the clean prompt has 21 tokens and the corrupted prompt 22');
    await expect(patchingGrid(e, req({ corrupt: lily.prompt }))).rejects.toThrow('recovery (Δ_patched − Δ_corrupt)/(Δ_clean − Δ_corrupt) is undefined');
  });

  it('one cell only: that cell of the full grid, NaN elsewhere and in the layer row, one progress event; a negative column counts from the end; cells outside the grid and unknown hook, direction or metric refused', async () => {
    const full = await patchingGrid(e, req({ hook: 'z' }));
    const C = full.nCols, L = full.nLayers;
    for (const [layer, col, at] of [[2, 3, 3], [L - 1, -1, C - 1], [0, 0, 0]]) {
      const progress: Progress[] = [];
      const one = await patchingGrid(e, req({ hook: 'z', only: { layer, col } }), (p) => progress.push(p));
      for (let i = 0; i < L * C; i++) {
        if (i === layer * C + at) expect(one.patchedMargin[i]).toBeCloseTo(full.patchedMargin[i], 5);
        else expect(one.patchedMargin[i]).toBeNaN();
      }
      expect(Array.from(one.layerRecovery).every(Number.isNaN)).toBe(true);
      expect(progress).toEqual([{ done: 1, total: 1 }]);
    }
    for (const layer of [-1, L, 1.5]) await expect(patchingGrid(e, req({ hook: 'z', only: { layer, col: 0 } }))).rejects.toThrow(`patch cell: layer ${layer} is outside 0..${L - 1}`);
    for (const col of [C, -C - 1, 1.5]) await expect(patchingGrid(e, req({ hook: 'z', only: { layer: 0, col } }))).rejects.toThrow(`patch cell: head ${col} is outside the ${C} heads (negative counts from the end)`);
    await expect(patchingGrid(e, req({ only: { layer: 0, col: 21 } }))).rejects.toThrow(`patch cell: position 21 is outside the 21 positions of “${lily.prompt}”`);
    await expect(patchingGrid(e, req({ only: { layer: 0, col: -21 } }))).resolves.toBeDefined();
    await expect(patchingGrid(e, req({ hook: 'foo' as PatchingRequest['hook'] }))).rejects.toThrow('patching hook "foo": use ');
    await expect(patchingGrid(e, req({ direction: 'up' as PatchingRequest['direction'] }))).rejects.toThrow('direction "up": use denoise or noise');
    await expect(patchingGrid(e, req({ metric: 'sum' as PatchingRequest['metric'] }))).rejects.toThrow('metric "sum": use final or sequence');
  });
});
