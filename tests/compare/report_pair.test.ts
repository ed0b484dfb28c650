import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CpuBackend } from '../../workers/engine/backend/cpu';
import { Engine } from '../../workers/engine/engine';
import { NodeFiles } from '../../workers/engine/io/node_files';
import { seededRandom } from '../../workers/engine/analysis/sampling';
import { decisionReportPair, type ReportPairResult } from '../../workers/engine/studies/report_pair';
import type { ReportProgress } from '../../workers/engine/studies/report';
import { sharedPath } from '../shared';

/**
 * The decision-point report for two models side by side on the base / fine-tune pair
 * (../shared/models/README.md: stories260K-happy-ft differs from stories260K only in block 3's MLP).
 * Checked against computations of the test's own: each model's lens margins through the
 * single-run API (Engine.analyse), the visible rule and the causal rule written here, and a paired
 * percentile bootstrap written here (same PRNG stream, linear-interpolation quantiles) over the
 * per-prompt curves. Known answer: the lens rows embed…L2 of every prompt are equal in A and B.
 */
const MAIN = { clean: 'Lucy got a new ball. She was very', corrupt: 'Lucy got a new ball. She saw a' };
const SET = [
  { clean: 'Tom played in the rain. He was very', corrupt: 'Tom played in the rain. He had a' },
  { clean: 'Lucy got a new ball. She was very', corrupt: 'Lucy got a new ball. He had a' },
  { clean: 'Tom played in the rain. He was very', corrupt: 'Tom played in the rain. She saw a' },
];
const FUT = { good: { text: ' happy' }, bad: { text: ' sad' } };
const BOOT = { resamples: 200, seed: 3 };
const L = 5, THRESHOLD = 0.1;
let a: Engine, b: Engine;
let pair: ReportPairResult;
const progress: ReportProgress[] = [];

/** The visible rule: the earliest row from which every value is > 0, at the smallest such row with value ≥ threshold. */
function visibleRow(c: readonly number[]): number | null {
  let first: number | null = null;
  for (let i = c.length - 1; i >= 0 && c[i] > 0; i--) if (c[i] >= THRESHOLD) first = i;
  return first;
}
/** The causal rule: the first block from 1 on with max r ≥ 0.5. */
const causalBlock = (c: readonly number[]) => { const i = c.findIndex((x, l) => l >= 1 && x >= 0.5); return i < 0 ? null : i; };
const mean = (cs: number[][]) => cs[0].map((_, j) => cs.reduce((s, c) => s + c[j], 0) / cs.length);
/** Quantile with linear interpolation between order statistics (R type 7). */
function quantile(sorted: number[], p: number): number {
  const h = (sorted.length - 1) * p, lo = Math.floor(h);
  return lo + 1 < sorted.length ? sorted[lo] + (h - lo) * (sorted[lo + 1] - sorted[lo]) : sorted[lo];
}
/** Paired bootstrap of rule(mean B) − rule(mean A): each resample draws prompt indices once and uses them for both models. */
function pairedInterval(ca: number[][], cb: number[][], rule: (c: number[]) => number | null): [number, number] | null {
  const rand = seededRandom(BOOT.seed), n = ca.length, vals: number[] = [];
  for (let r = 0; r < BOOT.resamples; r++) {
    const idx = Array.from({ length: n }, () => Math.floor(rand() * n));
    const ra = rule(mean(idx.map((i) => ca[i]))), rb = rule(mean(idx.map((i) => cb[i])));
    if (ra !== null && rb !== null) vals.push(rb - ra);
  }
  if (!vals.length) return null;
  vals.sort((x, y) => x - y);
  return [quantile(vals, 0.025), quantile(vals, 0.975)];
}

beforeAll(async () => {
  a = await Engine.load(new NodeFiles(sharedPath('models', 'stories260K')), new CpuBackend());
  b = await Engine.load(new NodeFiles(sharedPath('models', 'stories260K-happy-ft')), new CpuBackend());
  pair = await decisionReportPair(a, b, { ...MAIN, ...FUT, set: SET, bootstrap: BOOT }, (p) => progress.push(p));
}, 120_000);
afterAll(() => { a.dispose(); b.dispose(); });

describe('two-model decision-point report over a prompt set', () => {
  it('each side is its own model\'s report: lens margins at the last token equal Engine.analyse of that model; rows embed…L2 equal in A and B', async () => {
    expect(pair.labelA).toContain('stories260K');
    expect(pair.labelB).toContain('happy-ft');
    for (const [i, p] of [MAIN, ...SET].entries()) {
      for (const [e, r] of [[a, pair.a], [b, pair.b]] as const) {
        const an = await e.analyse({ prompt: p.clean, ...FUT });
        const T = an.ids.length;
        expect(r.prompts[i].lensLast).toEqual(Array.from({ length: L + 1 }, (_, l) => an.lensMargin[l * T + T - 1]));
      }
      expect(pair.b.prompts[i].lensLast.slice(0, 4)).toEqual(pair.a.prompts[i].lensLast.slice(0, 4));
      expect(pair.b.prompts[i].lensLast[L]).not.toBe(pair.a.prompts[i].lensLast[L]);
    }
  });

  it('visible layer: each model\'s rule on its mean curve, B − A, and a paired bootstrap interval of the difference', () => {
    const aligned = (r: typeof pair.a) => r.prompts.map((p) => p.lensLast.map((x) => x * (p.lensLast[L] >= 0 ? 1 : -1)));
    const ca = aligned(pair.a), cb = aligned(pair.b);
    const va = visibleRow(mean(ca)), vb = visibleRow(mean(cb));
    const d = pair.difference.visibleLayer;
    expect([d.a, d.b]).toEqual([va, vb]);
    expect([pair.a.visible.layer, pair.b.visible.layer]).toEqual([va, vb]);
    // rows embed…L2 agree; after block 3 (row L3) the base's mean margin turns against " happy" and only its final row
    // comes back, while the fine-tune's block 3 MLP keeps it positive: A visible at the last row, B from the embeddings
    expect(mean(cb).slice(0, 4)).toEqual(mean(ca).slice(0, 4));
    expect(mean(ca)[4]).toBeLessThan(0);
    expect(mean(cb)[4]).toBeGreaterThan(1);
    expect([va, vb]).toEqual([L, 0]);
    expect(d.value).toBe(vb! - va!);
    expect(d.nPaired).toBe(4);
    expect(d.interval).toEqual(pairedInterval(ca, cb, visibleRow));
    expect(d.interval![0]).toBeLessThanOrEqual(d.value!);
    expect(d.interval![1]).toBeGreaterThanOrEqual(d.value!);
  });

  it('causal layer: B − A of the causal rule, its paired interval over the prompts both models patch', () => {
    const ca = pair.a.prompts.map((p) => p.maxRecovery!), cb = pair.b.prompts.map((p) => p.maxRecovery!);
    const d = pair.difference.causalLayer;
    expect([d.a, d.b]).toEqual([causalBlock(mean(ca)), causalBlock(mean(cb))]);
    expect(d.value).toBe(d.a !== null && d.b !== null ? d.b - d.a : null);
    expect(d.interval).toEqual(pairedInterval(ca, cb, causalBlock));
    expect(pair.difference.pointOfNoReturn).toBeNull();
  });

  it('progress counts both reports, A first, to the total', () => {
    expect(progress[0].stage).toMatch(/^A: /);
    expect(progress.at(-1)!.stage).toMatch(/^B: /);
    expect(progress.at(-1)!.done).toBe(progress.at(-1)!.total);
    expect(progress.every((p, i) => i === 0 || p.done > progress[i - 1].done)).toBe(true);
  });
});

describe('two-model report, one prompt and refusals', () => {
  it('one prompt: B − A of the answers without an interval', async () => {
    const one = await decisionReportPair(a, b, { ...MAIN, ...FUT });
    const d = one.difference.visibleLayer;
    expect(d.interval).toBeNull();
    expect(d.value).toBe(one.b.visible.layer! - one.a.visible.layer!);
    expect(one.b.visible.layer).toBe(visibleRow(one.b.prompts[0].lensLast.map((x) => x * one.b.prompts[0].finalSign)));
  });

  it('refuses models of different depths before any run, naming both', async () => {
    const dreams = await Engine.load(new NodeFiles(sharedPath('models', 'aidreams260K')), new CpuBackend());
    try {
      await expect(decisionReportPair(a, dreams, { ...MAIN, ...FUT })).rejects.toThrow(/model A \[.*stories260K.*\] has 5 layers, model B \[.*aidreams260K.*\] 4/);
    } finally {
      dreams.dispose();
    }
  });
});
