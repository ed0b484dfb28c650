import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CpuBackend } from '../../workers/engine/backend/cpu';
import { Engine } from '../../workers/engine/engine';
import { NodeFiles } from '../../workers/engine/io/node_files';
import { bootstrapMean, bootstrapStatistic } from '../../workers/engine/analysis/bootstrap';
import { patchingGrid } from '../../workers/engine/studies/patching';
import { decisionReport, firstStable, type ReportResult } from '../../workers/engine/studies/report';
import { pointOfNoReturn } from '../../workers/engine/studies/window';
import { toIntervention } from '../../workers/engine/steering/spec';
import { sharedPath } from '../shared';

/**
 * The decision-point report over a prompt set (DESIGN.md §3): every aggregate is the stated rule
 * applied to the per-prompt numbers (means over prompts, the visible/causal/no-return rules on the
 * mean curve, percentile-bootstrap bands per row with seed + row and intervals of the rule on resampled
 * means: analysis/bootstrap.ts, tested on its own in report_rules and batch tests), and the per-prompt
 * numbers are their definitions (the row maxima of each pair's own patching grid, the sign of the
 * final lens margin). The main prompt's numbers are checked against the golden arrays in report.test.ts.
 */
let e: Engine;
const MAIN = { clean: 'Lily and Tom went to the park. Lily gave the ball to', corrupt: 'Tom and Lily went to the park. Lily gave the ball to' };
const SET = [
  { clean: 'Tom and Lily went to the park. Tom gave the ball to', corrupt: 'Lily and Tom went to the park. Tom gave the ball to' },
  { clean: 'Lily and Tom went to the shop. Lily gave the apple to', corrupt: 'Tom and Lily went to the shop. Lily gave the apple to' },
];
const futures = { good: { text: ' Tom' }, bad: { text: ' Lily' } };
const boot = { resamples: 150, seed: 5 };
const meanOf = (curves: number[][]) => curves[0].map((_, j) => curves.reduce((s, c) => s + c[j], 0) / curves.length);
const bandOf = (curves: number[][]) => {
  const rows = curves[0].map((_, j) => bootstrapMean(curves.map((c) => c[j]), { ...boot, seed: boot.seed + j }));
  return [rows.map((x) => x.lo), rows.map((x) => x.hi)];
};
/** The causal rule: the first block from 1 on with r ≥ 0.5 (block 0's resid_pre is the embeddings: r ≈ 1 there by construction). */
const firstAtHalf = (xs: number[]) => { const i = xs.findIndex((x, l) => l >= 1 && x >= 0.5); return i < 0 ? null : i; };

beforeAll(async () => {
  e = await Engine.load(new NodeFiles(sharedPath('models', 'stories260K')), new CpuBackend());
}, 120_000);
afterAll(() => e.dispose());

describe('decision-point report over a prompt set', () => {
  let r: ReportResult;
  it('visible and causal: curves are the means over prompts, bands and intervals the bootstrap of the per-prompt curves', async () => {
    r = await decisionReport(e, { ...MAIN, ...futures, set: SET, bootstrap: boot });
    expect(r.nPrompts).toBe(3);
    expect(r.causal.skipped).toBe(0);
    // per prompt: the sign of the final lens margin, the rule on the aligned curve, each block's max over positions of r
    for (const [i, p] of [MAIN, ...SET].entries()) {
      const n = r.prompts[i];
      expect(n.finalSign).toBe(n.lensLast[5] >= 0 ? 1 : -1);
      expect(n.visibleLayer).toBe(firstStable(n.lensLast.map((x) => x * n.finalSign), 0.1));
      const a = await e.analyse({ prompt: p.clean, ...futures }); // final-layer margins per position: golden-checked in analyse_reference
      expect(n.visibleToken).toBe(firstStable(Array.from(a.finalMargin, (x) => x * n.finalSign), 0.1));
      const g = await patchingGrid(e, { ...p, ...futures, hook: 'resid_pre' });
      const rows = Array.from({ length: 5 }, (_, l) => Array.from(g.recovery.subarray(l * g.nCols, (l + 1) * g.nCols)));
      expect(n.maxRecovery).toEqual(rows.map((row) => Math.max(...row)));
      expect(n.causalLayer).toBe(firstAtHalf(n.maxRecovery!));
      if (n.causalLayer !== null) expect(n.causalPositions).toEqual(rows[n.causalLayer].flatMap((x, t) => (x >= 0.5 ? [t] : [])));
    }
    expect(r.prompts.some((n) => n.visibleToken !== null)).toBe(true); // a prompt whose rule names a position
    const aligned = r.prompts.map((n) => n.lensLast.map((x) => x * n.finalSign));
    const recov = r.prompts.map((n) => n.maxRecovery!);
    r.visible.curve.forEach((v, l) => expect(v).toBeCloseTo(meanOf(aligned)[l], 12));
    expect(r.visible.layer).toBe(firstStable(meanOf(aligned), 0.1));
    expect(r.visible.token).toBe(r.prompts[0].visibleToken);
    expect(r.visible.band).toEqual(bandOf(aligned));
    expect(r.visible.interval).toEqual(bootstrapStatistic(aligned, (c) => firstStable(c, 0.1), boot).interval);
    r.causal.curve.forEach((v, l) => expect(v).toBeCloseTo(meanOf(recov)[l], 12));
    expect(r.causal.layer).toBe(firstAtHalf(meanOf(recov)));
    expect(r.causal.positions).toEqual(r.prompts[0].causalPositions);
    expect(r.causal.band).toEqual(bandOf(recov));
    expect(r.causal.interval).toEqual(bootstrapStatistic(recov, firstAtHalf, boot).interval);
    expect([r.probe, r.changeable]).toEqual([null, null]);
    // the patching grid shown is the main pair's, not the last prompt's
    const mainGrid = await patchingGrid(e, { ...MAIN, ...futures, hook: 'resid_pre' });
    expect(r.patching.recovery).toEqual(mainGrid.recovery);
  }, 300_000);

  it('one prompt with a corruption plus lens-only prompts: the causal panel is that prompt’s own numbers, no band, skipped counted', async () => {
    const lensOnly = [{ clean: SET[0].clean, corrupt: null }, { clean: SET[1].clean, corrupt: null }];
    const one = await decisionReport(e, { ...MAIN, ...futures, set: lensOnly, bootstrap: boot });
    expect(one.causal.skipped).toBe(2);
    expect(one.causal.curve).toEqual(one.prompts[0].maxRecovery);
    expect([one.causal.layer, one.causal.band, one.causal.interval]).toEqual([one.prompts[0].causalLayer, null, null]);
    expect(one.visible.band).not.toBeNull(); // the lens part is still a set of three
    for (const n of one.prompts.slice(1)) expect([n.maxRecovery, n.causalLayer, n.causalPositions, n.window]).toEqual([null, null, [], null]);
    // the main pair must be patchable: a corruption of another token length is an error (a set prompt's is skipped)
    await expect(decisionReport(e, { clean: MAIN.clean, corrupt: 'Lily and Tom went to the park. Tom gave the ball to', ...futures })).rejects.toThrow('the clean prompt has 21 tokens and the corrupted prompt 22');
  }, 300_000);

  it('the intervention window over a set: a prompt it does not fit is skipped and counted; the main prompt’s failure is an error', async () => {
    const N = 2;
    const v = Array.from({ length: 64 }, (_, i) => (i === 5 ? 1 : 0));
    const interventions = (p: { prompt: string; nPrompt: number }) => {
      if (p.prompt === SET[1].clean) throw new Error('does not fit this prompt');
      return [toIntervention({ hook: 'blocks.3.hook_resid_post', type: 'add', vector: v, alpha: 8 }, e.spec, { nPrompt: p.nPrompt, maxNewTokens: N })];
    };
    const w = await decisionReport(e, { ...MAIN, ...futures, set: SET, bootstrap: boot, window: { interventions, maxNewTokens: N } });
    const c = w.changeable!;
    expect(w.prompts.map((n) => n.window === null)).toEqual([false, false, true]);
    expect([c.skipped, c.ks, c.maxNewTokens]).toEqual([1, [0, 1], N]);
    const ws = w.prompts.slice(0, 2).map((n) => n.window!);
    const curves = ws.map((x) => x.outcome.map((o) => o * Math.sign(x.unsteered)));
    c.outcome.forEach((o, k) => expect(o).toBeCloseTo(meanOf(curves)[k], 12));
    expect(c.unsteered).toBeCloseTo((Math.abs(ws[0].unsteered) + Math.abs(ws[1].unsteered)) / 2, 12);
    expect(c.pointOfNoReturn).toBe(pointOfNoReturn([0, 1], meanOf(curves), c.unsteered));
    expect(c.band).toEqual(bandOf(curves));
    expect(c.interval).toEqual(bootstrapStatistic(curves, (x) => pointOfNoReturn([0, 1], x, 1), boot).interval);
    const failsOnMain = (p: { prompt: string; nPrompt: number }) => (p.prompt === MAIN.clean ? interventions({ ...p, prompt: SET[1].clean }) : interventions(p));
    await expect(decisionReport(e, { ...MAIN, ...futures, set: SET, window: { interventions: failsOnMain, maxNewTokens: N } })).rejects.toThrow('does not fit this prompt');
  }, 300_000);

  it('a main pair with no causal block (no block ≥ 1 reaches r = 0.5) in a set whose mean curve has one: the set’s layer is the rule on the mean curve, the positions stay the main pair’s (none)', async () => {
    // Found by scanning pairs on stories260K: block 0 recovers the clean run at the differing token
    // (r ≈ 0.98), blocks 1–4 only partly (max r 0.45, 0.42, 0.38, 0.34); the set pair reaches 0.5 from block 2 on average.
    const main = { clean: 'Sue had a ball. It was very', corrupt: 'Sue had a toy. It was very' };
    const set = [{ clean: 'Once upon a time, a girl lived in a big house. Every day, it', corrupt: 'Once upon a time, a boy lived in a big house. Every day, it' }];
    const fut = { good: { text: ' was' }, bad: { text: ' had' } };
    const r = await decisionReport(e, { ...main, ...fut, set, bootstrap: boot });
    const grids = [];
    for (const p of [main, ...set]) grids.push(await patchingGrid(e, { ...p, ...fut, hook: 'resid_pre' })); // one job at a time: the engine has one KV cache
    const rows = grids.map((g) => Array.from({ length: 5 }, (_, l) => Array.from(g.recovery.subarray(l * g.nCols, (l + 1) * g.nCols))));
    const maxima = rows.map((rs) => rs.map((row) => Math.max(...row)));
    expect(r.prompts.map((n) => n.maxRecovery)).toEqual(maxima);
    expect(firstAtHalf(maxima[0])).toBeNull();
    expect(rows[0][0].some((x) => x >= 0.5)).toBe(true); // block 0 has positions with r ≥ 0.5, which the rule leaves out
    expect([r.prompts[0].causalLayer, r.prompts[0].causalPositions]).toEqual([null, []]);
    const mean = firstAtHalf(meanOf(maxima));
    expect(mean).not.toBeNull();
    expect([r.causal.layer, r.causal.positions]).toEqual([mean, []]);
  }, 300_000);

  it('a labelled set without a progress callback: the probe panel is computed', async () => {
    const labelled = { positive: ['Tom went to the park. Then', 'Ben found a big red ball. Then'], negative: ['Lily went to the park. Then', 'Sue found a big red ball. Then'] };
    const w = await decisionReport(e, { ...MAIN, ...futures, labelled, bootstrap: boot });
    expect([w.nPrompts, w.probe!.nPositive, w.probe!.nNegative, w.probe!.folds, w.probe!.accuracy.length]).toEqual([5, 2, 2, 2, 6]);
  }, 300_000);
});
