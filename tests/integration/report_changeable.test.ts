import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CpuBackend } from '../../workers/engine/backend/cpu';
import { Engine } from '../../workers/engine/engine';
import { NodeFiles } from '../../workers/engine/io/node_files';
import type { Intervention } from '../../workers/engine/model/intervention';
import { decisionReport, firstAt95, labelledPairs, type ReportProgress } from '../../workers/engine/studies/report';
import { reportJson } from '../../workers/engine/studies/report_json';
import { probeLayers } from '../../workers/engine/studies/probe';
import { toIntervention } from '../../workers/engine/steering/spec';
import { bootstrapMean, bootstrapStatistic } from '../../workers/engine/analysis/bootstrap';
import { sharedPath } from '../shared';

/**
 * The report's changeable and probe parts (DESIGN.md §3): the window's outcome per start step k is
 * checked against plain generations steered from step k (Engine.generate, no prefix sharing), the
 * point of no return against its rule, and the probe part against the probe's held-out predictions.
 */
let e: Engine;
const CLEAN = 'Lily and Tom went to the park. Lily gave the ball to';
const CORRUPT = 'Tom and Lily went to the park. Lily gave the ball to';
const futures = { good: { text: ' Tom' }, bad: { text: ' Lily' } };
const N = 6;
const HOOK = 'blocks.3.hook_resid_post';
// A small he/she set (public/probes/he_she.json's sentences): 3 per class, paired by index.
const SET = {
  positive: ['Tom went to the park. Then', 'Ben found a big red ball. Then', 'Tim saw a little dog. Then'],
  negative: ['Lily went to the park. Then', 'Sue found a big red ball. Then', 'Mia saw a little dog. Then'],
  classes: ['girl', 'boy'] as [string, string],
};
let girl: Float32Array | undefined; // mean(girl) − mean(boy) at HOOK: steering toward " Lily"
/**
 * The probe's girl direction, computed on first use inside a test (not in beforeAll: Stryker then
 * counts the probe code as covered by the tests that use it, not as "static", run with every test).
 */
async function girlDirection(): Promise<Float32Array> {
  if (!girl) {
    const p = await probeLayers(e, { positive: SET.positive, negative: SET.negative });
    girl = p.directions[4].map((x) => -x); // row 4 = blocks.3.hook_resid_post
  }
  return girl;
}
const iv = (nPrompt: number, alpha = 20): Intervention => toIntervention({ hook: HOOK, type: 'add', vector: girl!, alpha }, e.spec, { nPrompt, maxNewTokens: N });

/** Mean margin over N steps of a generation with the intervention on from step k (k = Infinity: none). */
async function outcomeFrom(prompt: string, k: number): Promise<number> {
  const base = iv(e.encodePrompt({ prompt }).length);
  const interventions = Number.isFinite(k) ? [{ ...base, steps: { start: k, end: Number.POSITIVE_INFINITY } }] : [];
  const g = await e.generate({ prompt, ...futures, maxNewTokens: N, stopAtEos: false, interventions });
  return g.margins.reduce((s, m) => s + m, 0) / N;
}

beforeAll(async () => {
  e = await Engine.load(new NodeFiles(sharedPath('models', 'stories260K')), new CpuBackend());
}, 120_000);
afterAll(() => e.dispose());

describe('decision-point report: changeable and probe', () => {
  it('one prompt: the outcome per k equals generations steered from step k; the point of no return is the last k of opposite sign', async () => {
    await girlDirection();
    const r = await decisionReport(e, { clean: CLEAN, corrupt: CORRUPT, ...futures, window: { interventions: (p) => [iv(p.nPrompt)], maxNewTokens: N } });
    const c = r.changeable!;
    expect(c.ks).toEqual(Array.from({ length: N }, (_, k) => k));
    const unsteered = await outcomeFrom(CLEAN, Infinity);
    expect(c.unsteered).toBeCloseTo(unsteered, 5);
    const want: number[] = [];
    for (const k of c.ks) want.push(await outcomeFrom(CLEAN, k));
    c.outcome.forEach((o, k) => expect(o).toBeCloseTo(want[k], 4));
    const flips = c.ks.filter((k) => Math.sign(want[k]) === -Math.sign(unsteered));
    expect(flips.length).toBeGreaterThan(0); // this vector and dose do flip the outcome early on
    expect(c.pointOfNoReturn).toBe(Math.max(...flips));
    expect([c.band, c.interval]).toEqual([null, null]);
    const j = reportJson(r);
    expect(j.point_of_no_return).toBe(c.pointOfNoReturn);
    expect(j.window_outcome).toEqual(c.outcome);
    expect(j.first_layer_95).toBeNull();
  }, 120_000);

  it('a labelled set: the probe’s first row at 95 % and its held-out accuracy; window outcomes averaged toward each prompt’s unsteered outcome', async () => {
    await girlDirection();
    const progress: ReportProgress[] = [];
    const r = await decisionReport(e, {
      clean: CLEAN, corrupt: CORRUPT, ...futures, labelled: SET, bootstrap: { resamples: 300 },
      window: { interventions: (p) => [iv(p.nPrompt)], maxNewTokens: N },
    }, (p) => progress.push(p));
    expect(r.nPrompts).toBe(7);
    // three stages per prompt (lens, patching, window), then the probes once: 7 · 3 + 1
    const stages = ['lens', 'patching', 'window'];
    expect(progress).toEqual([
      ...Array.from({ length: 21 }, (_, i) => ({ done: i + 1, total: 22, stage: `${stages[i % 3]} ${Math.floor(i / 3) + 1}/7` })),
      { done: 22, total: 22, stage: 'probes' },
    ]);
    expect(r.prompts.slice(1).map((p) => [p.clean, p.corrupt])).toEqual(labelledPairs(SET).map((p) => [p.clean, p.corrupt]));
    // Probe: accuracy per row is the share of held-out predictions that are right (probe.ts on the same set).
    const pr = await probeLayers(e, { positive: SET.positive, negative: SET.negative });
    const pb = r.probe!;
    expect(pb.accuracy).toEqual(pr.accuracy);
    pr.heldOut.forEach((s, row) => expect(pb.accuracy[row]).toBeCloseTo(Array.from(s).filter((v, i) => (v > 0 ? 1 : 0) === (i < 3 ? 1 : 0)).length / 6, 12));
    expect(pb.firstLayer95).toBe(firstAt95(pr.accuracy));
    pb.accuracy.forEach((a, row) => {
      expect(pb.band[0][row]).toBeLessThanOrEqual(a + 1e-12);
      expect(pb.band[1][row]).toBeGreaterThanOrEqual(a - 1e-12);
    });
    expect(pb.interval).not.toBeNull();
    expect(pb.interval![0]).toBeLessThanOrEqual(pb.interval![1]);
    // Band and interval: the bootstrap (analysis/bootstrap.ts) of each example's 0/1 correctness per row (seed + row for the band).
    const correct = Array.from({ length: 6 }, (_, i) => pr.heldOut.map((s) => ((s[i] > 0 ? 1 : 0) === (i < 3 ? 1 : 0) ? 1 : 0)));
    const rowsBoot = pr.accuracy.map((_, j) => bootstrapMean(correct.map((c) => c[j]), { resamples: 300, seed: j }));
    expect(pb.band).toEqual([rowsBoot.map((x) => x.lo), rowsBoot.map((x) => x.hi)]);
    expect(pb.interval).toEqual(bootstrapStatistic(correct, firstAt95, { resamples: 300 }).interval);
    expect([pb.classes, pb.nPositive, pb.nNegative, pb.folds, pb.controlAccuracy, pb.auroc]).toEqual([['girl', 'boy'], 3, 3, pr.folds, pr.controlAccuracy, pr.auroc]);
    // Window over the set: mean over prompts of outcome × sign(unsteered outcome), from plain generations.
    const c = r.changeable!;
    const prompts = [CLEAN, ...SET.positive, ...SET.negative];
    const signs: number[] = [];
    for (const p of prompts) signs.push(Math.sign(await outcomeFrom(p, Infinity))); // one at a time: the engine runs one job
    for (const k of [0, 2, N - 1]) {
      let s = 0;
      for (const [i, p] of prompts.entries()) s += (await outcomeFrom(p, k)) * signs[i];
      expect(c.outcome[k]).toBeCloseTo(s / prompts.length, 4);
    }
    const neg = c.ks.filter((k) => c.outcome[k] < 0);
    expect(c.pointOfNoReturn).toBe(neg.length ? Math.max(...neg) : null);
    expect(c.unsteered).toBeGreaterThan(0);
    c.outcome.forEach((o, k) => {
      expect(c.band![0][k]).toBeLessThanOrEqual(o + 1e-9);
      expect(c.band![1][k]).toBeGreaterThanOrEqual(o - 1e-9);
    });
    expect(reportJson(r).first_layer_95).toBe(pb.firstLayer95);
  }, 300_000);
});
