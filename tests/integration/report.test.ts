import * as fs from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CpuBackend } from '../../workers/engine/backend/cpu';
import { Engine } from '../../workers/engine/engine';
import { NodeFiles } from '../../workers/engine/io/node_files';
import { linearCpu } from '../../workers/engine/ops/linear.cpu';
import { logSoftmaxCpu } from '../../workers/engine/ops/logits.cpu';
import { rmsNormCpu } from '../../workers/engine/ops/norm.cpu';
import { patchingGrid } from '../../workers/engine/studies/patching';
import { decisionReport, firstStable, type ReportProgress } from '../../workers/engine/studies/report';
import { readReference, sharedPath } from '../shared';

/** The decision-point report (DESIGN.md §3) on stories260K's Lily/Tom prompt and a small prompt set. */
let e: Engine;
const ref = JSON.parse(fs.readFileSync(sharedPath('models/stories260K/reference/reference.json'), 'utf8')) as { prompts: { name: string; prompt: string; n_prompt: number; n_positions: number }[] };
const lily = ref.prompts.find((p) => p.name === 'lily_tom_ball')!;
const CORRUPT = 'Tom and Lily went to the park. Lily gave the ball to';
const futures = { good: { text: ' Tom' }, bad: { text: ' Lily' } };
beforeAll(async () => {
  e = await Engine.load(new NodeFiles(sharedPath('models', 'stories260K')), new CpuBackend());
});
afterAll(() => e.dispose());

describe('decision-point report', () => {
  it('one prompt: visible = the rule on the golden lens margins; causal = the first block whose resid_pre patch reaches r ≥ 0.5; labelled one prompt', async () => {
    const progress: ReportProgress[] = [];
    const r = await decisionReport(e, { clean: lily.prompt, corrupt: CORRUPT, ...futures }, (p) => progress.push(p));
    // two stages per prompt (lens, patching) without a window or a labelled set
    expect(progress).toEqual([{ done: 1, total: 2, stage: 'lens 1/1' }, { done: 2, total: 2, stage: 'patching 1/1' }]);
    // Golden lens at the last prompt position: log_softmax(W_U · RMSNorm(h^l)) from the reference arrays.
    const arrays = readReference(sharedPath('models/stories260K/reference/lily_tom_ball.safetensors'));
    const weights = readReference(sharedPath('models/stories260K/model.safetensors'));
    const D = 64, V = 512, t = lily.n_prompt - 1, P = lily.n_positions;
    const [good] = r.patching.good.firstIds, [bad] = r.patching.bad.firstIds;
    const lens = Array.from({ length: 6 }, (_, l) => {
      const h = l === 0 ? arrays.get('embeddings')!.data.subarray(t * D, (t + 1) * D) : arrays.get('resid_post')!.data.subarray(((l - 1) * P + t) * D, ((l - 1) * P + t + 1) * D);
      const lp = logSoftmaxCpu(linearCpu(rmsNormCpu(h, weights.get('model.norm.weight')!.data, 1e-5, 0), weights.get('lm_head.weight')!.data, undefined, 1, D, V), V);
      return lp[good] - lp[bad];
    });
    const sign = Math.sign(lens[5]);
    expect(r.visible.layer).toBe(firstStable(lens.map((x) => x * sign), 0.1));
    r.visible.curve.forEach((v, l) => expect(v).toBeCloseTo(lens[l] * sign, 4));
    expect(r.visible.layer).not.toBeNull();

    const g = await patchingGrid(e, { clean: lily.prompt, corrupt: CORRUPT, ...futures, hook: 'resid_pre' });
    expect(r.patching.recovery).toEqual(g.recovery);
    const rows = Array.from({ length: 5 }, (_, l) => Array.from(g.recovery.subarray(l * g.nCols, (l + 1) * g.nCols)));
    // causal: the first block from 1 on with r ≥ 0.5 somewhere (row 0 is the embeddings: see the next case)
    const causal = rows.findIndex((row, l) => l >= 1 && row.some((x) => x >= 0.5));
    expect(r.causal.layer).toBe(causal < 0 ? null : causal);
    expect(r.causal.positions).toEqual(rows[causal].flatMap((x, i) => (x >= 0.5 ? [i] : [])));
    expect(r.label).toBe('one prompt: no interval (give a prompt set for bootstrap intervals)');
    expect([r.threshold, r.causalRecovery, r.nLayers, r.nPrompts]).toEqual([0.1, 0.5, 5, 1]);
    expect([r.visible.interval, r.causal.interval, r.visible.band]).toEqual([null, null, null]);
  });

  it('causal is not the trivial row: patching the embedding of the token that differs recovers r ≈ 1 by construction, so the rule starts at block 1', async () => {
    // The Patching view's default pair (app/lib/patching_prompts.ts): " Tom" (" T", "om") → " dad" (" d", "ad").
    const clean = 'Lily and Tom went to the park. Lily gave the ball to', corrupt = 'Lily and dad went to the park. Lily gave the ball to';
    const r = await decisionReport(e, { clean, corrupt, ...futures });
    const g = r.patching, T = g.nCols;
    const differ = g.cleanIds.flatMap((id, t) => (id !== g.corruptIds[t] ? [t] : []));
    expect(differ).toEqual([3, 4]);
    expect(r.causal.trivial.positions).toEqual(differ);
    // row 0 = blocks.0.hook_resid_pre = the token embedding: equal tokens give r = 0 exactly, and the
    // differing " T" swapped back gives r ≈ 1 (the artefact the old rule reported as "causal from row 0")
    for (let t = 0; t < T; t++) if (!differ.includes(t)) expect(g.recovery[t]).toBe(0);
    expect(g.recovery[3]).toBeGreaterThan(0.95);
    expect(r.causal.trivial.recovery).toBeCloseTo(Math.max(g.recovery[3], g.recovery[4]), 6);
    // the rule on the measured grid: the earliest block ≥ 1 with some r ≥ 0.5, and where
    const rows = Array.from({ length: g.nLayers }, (_, l) => Array.from(g.recovery.subarray(l * T, (l + 1) * T)));
    const first = rows.findIndex((row, l) => l >= 1 && row.some((x) => x >= 0.5));
    expect(first).toBeGreaterThanOrEqual(1);
    expect(r.causal.layer).toBe(first);
    expect(r.causal.layer).not.toBe(0);
    expect(r.causal.positions).toEqual(rows[first].flatMap((x, t) => (x >= 0.5 ? [t] : [])));
    // on stories260K the name's first token still carries it after block 0: the answer is row 1 at " T"
    expect([r.causal.layer, r.causal.positions]).toEqual([1, [3]]);
    expect(r.prompts[0].causalLayer).toBe(r.causal.layer);
    expect(r.causal.curve[0]).toBeGreaterThan(0.95); // the curve keeps row 0 as measured
  });

  it('a prompt set gives bootstrap intervals around the set’s answers; pairs that cannot be patched are counted, not fatal', async () => {
    const set = [
      { clean: 'Tom and Lily went to the park. Tom gave the ball to', corrupt: 'Lily and Tom went to the park. Tom gave the ball to' },
      { clean: 'Lily and Tom went to the shop. Lily gave the apple to', corrupt: 'Tom and Lily went to the shop. Lily gave the apple to' },
      { clean: 'Lily and Tom went home. Lily gave the toy to', corrupt: 'Lily and Tom went home. Tom gave the toy to' }, // 22 vs 23 tokens
      { clean: 'Tom and Lily played. Tom gave the cat to', corrupt: null },
    ];
    const progress: ReportProgress[] = [];
    const r = await decisionReport(e, { clean: lily.prompt, corrupt: CORRUPT, ...futures, set, bootstrap: { resamples: 200 } }, (p) => progress.push(p));
    expect(progress).toEqual(Array.from({ length: 10 }, (_, i) => ({ done: i + 1, total: 10, stage: `${i % 2 ? 'patching' : 'lens'} ${(i >> 1) + 1}/5` })));
    expect(r.nPrompts).toBe(5);
    expect(r.label).toBe('5 prompts: means with 95 % percentile-bootstrap intervals over prompts (200 resamples)');
    expect(r.causal.skipped).toBe(2);
    expect(r.prompts.map((p) => p.maxRecovery === null)).toEqual([false, false, false, true, true]);
    expect(r.visible.band![0]).toHaveLength(6);
    r.visible.curve.forEach((v, l) => {
      expect(r.visible.band![0][l]).toBeLessThanOrEqual(v + 1e-9);
      expect(r.visible.band![1][l]).toBeGreaterThanOrEqual(v - 1e-9);
    });
    // The aligned curve is the mean of each prompt's lens margin times its own final sign.
    const mean = r.prompts.reduce((s, p) => s + p.lensLast[5] * p.finalSign, 0) / 5;
    expect(r.visible.curve[5]).toBeCloseTo(mean, 6);
    expect(r.visible.curve[5]).toBeGreaterThan(0);
    if (r.visible.layer !== null) expect(r.visible.interval).not.toBeNull();
  });

  it('refuses a negative or NaN threshold; a threshold of 0 is taken: visible is then the first row of the trailing positive run', async () => {
    for (const t of [-0.5, Number.NaN]) {
      await expect(decisionReport(e, { clean: lily.prompt, corrupt: CORRUPT, ...futures, threshold: t })).rejects.toThrow(`threshold ${t}: give |Δ| in nats, ≥ 0`);
    }
    const r = await decisionReport(e, { clean: lily.prompt, corrupt: CORRUPT, ...futures, threshold: 0 });
    expect(r.threshold).toBe(0);
    expect(r.visible.layer).toBe(firstStable(r.visible.curve, 0));
  });
});
