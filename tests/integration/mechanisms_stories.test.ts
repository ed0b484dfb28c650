/**
 * The Mechanisms study on stories260K with the shipped sets (happy/sad vs he/she): every number
 * equals an independent computation here — plain forwards through Engine.run (captures, one steering
 * `add` or one `patch` per run, no prefix reuse), the difference of means, an L2 logistic regression
 * fitted by a full-dimensional Newton method written below, Pearson r, a percentile bootstrap and
 * the recovery of activation patching, all from their definitions (DESIGN.md §3), sharing no code
 * with analysis/mechanisms.ts or studies/mechanisms.ts.
 */
import * as fs from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CpuBackend } from '../../workers/engine/backend/cpu';
import { Engine } from '../../workers/engine/engine';
import { NodeFiles } from '../../workers/engine/io/node_files';
import { parseLabelledSet } from '../../workers/engine/io/prompt_set';
import { seededRandom } from '../../workers/engine/analysis/sampling';
import { mechanismsStudy, type Behaviour, type MechanismsResult } from '../../workers/engine/studies/mechanisms';
import { logSoftmax, lse } from '../reference_math';
import { sharedPath } from '../shared';

const TOL = 1e-5;
const DOSE = 5;
const CONTROL = ['Once upon a time there was a big tree.', 'The sky was blue and the grass was green.', 'A cat sat on the mat.', 'They went home after the rain.'];

const setOf = (file: string, good: string, bad: string, name: string): Behaviour => {
  const s = parseLabelledSet(file, fs.readFileSync(file, 'utf8'));
  return { name, positive: s.positive, negative: s.negative, good: { text: good }, bad: { text: bad } };
};
const A = setOf('public/steering/happy_sad.json', ' happy', ' sad', 'happy/sad');
const B = setOf('public/probes/he_she.json', ' he', ' she', 'he/she');

let e: Engine;
let r: MechanismsResult;
beforeAll(async () => {
  e = await Engine.load(new NodeFiles(sharedPath('models', 'stories260K')), new CpuBackend());
  r = await mechanismsStudy(e, { a: A, b: B, control: CONTROL, dose: DOSE, bootstrap: { resamples: 500, seed: 7 } });
}, 300_000);
afterAll(() => e.dispose());

// ---- independent maths (float64, from the definitions) ----

const dot = (a: ArrayLike<number>, b: ArrayLike<number>) => { let s = 0; for (let i = 0; i < a.length; i++) s += a[i] * b[i]; return s; };
const cos = (a: ArrayLike<number>, b: ArrayLike<number>) => dot(a, b) / Math.sqrt(dot(a, a) * dot(b, b));
const meanOf = (xs: readonly number[]) => xs.reduce((s, x) => s + x, 0) / xs.length;
function corr(x: readonly number[], y: readonly number[]): number {
  const mx = meanOf(x), my = meanOf(y);
  let sxy = 0, sxx = 0, syy = 0;
  x.forEach((_, i) => { sxy += (x[i] - mx) * (y[i] - my); sxx += (x[i] - mx) ** 2; syy += (y[i] - my) ** 2; });
  return sxy / Math.sqrt(sxx * syy);
}

/** Solves M z = g (M symmetric positive definite, k×k) by Gaussian elimination with partial pivoting. */
function solve(M: number[][], g: number[]): number[] {
  const k = g.length, a = M.map((row, i) => [...row, g[i]]);
  for (let c = 0; c < k; c++) {
    let p = c;
    for (let i = c + 1; i < k; i++) if (Math.abs(a[i][c]) > Math.abs(a[p][c])) p = i;
    [a[c], a[p]] = [a[p], a[c]];
    for (let i = c + 1; i < k; i++) { const f = a[i][c] / a[c][c]; for (let j = c; j <= k; j++) a[i][j] -= f * a[c][j]; }
  }
  const z = new Array<number>(k).fill(0);
  for (let i = k - 1; i >= 0; i--) { let s = a[i][k]; for (let j = i + 1; j < k; j++) s -= a[i][j] * z[j]; z[i] = s / a[i][i]; }
  return z;
}

/**
 * The probe on raw activations: standardise each feature (population σ over all rows), minimise
 * Σ log(1 + e^z) − y z + ½‖w‖² (λ = 1, intercept free) by Newton's method in all d + 1 coordinates,
 * then w_raw = w/σ, b_raw = b − Σ w_j μ_j/σ_j.
 */
function probe(X: number[][], y: number[]): { w: number[]; b: number } {
  const n = X.length, d = X[0].length;
  const mu = Array.from({ length: d }, (_, j) => meanOf(X.map((x) => x[j])));
  const sd = mu.map((m, j) => { const s = Math.sqrt(meanOf(X.map((x) => (x[j] - m) ** 2))); return s > 1e-12 * (1 + Math.abs(m)) ? s : 1; });
  const Z = X.map((x) => x.map((v, j) => (v - mu[j]) / sd[j]));
  let w = new Array<number>(d).fill(0), b = 0;
  for (let it = 0; it < 100; it++) {
    const p = Z.map((z) => 1 / (1 + Math.exp(-(dot(w, z) + b))));
    const g = [...w.map((wj, j) => wj + Z.reduce((s, z, i) => s + (p[i] - y[i]) * z[j], 0)), p.reduce((s, pi, i) => s + pi - y[i], 0)];
    if (Math.hypot(...g) < 1e-11) break;
    const H = Array.from({ length: d + 1 }, (_, a) => Array.from({ length: d + 1 }, (_, c) => {
      let s = a === c && a < d ? 1 : 0;
      for (let i = 0; i < n; i++) s += p[i] * (1 - p[i]) * (a < d ? Z[i][a] : 1) * (c < d ? Z[i][c] : 1);
      return s;
    }));
    const step = solve(H, g);
    w = w.map((wj, j) => wj - step[j]);
    b -= step[d];
  }
  const wRaw = w.map((wj, j) => wj / sd[j]);
  return { w: wRaw, b: b - wRaw.reduce((s, wj, j) => s + wj * mu[j], 0) };
}

/** Percentile bootstrap of the mean: B resamples drawn with seededRandom(seed), R-7 quantiles. */
function bootstrap(xs: readonly number[], B: number, seed: number): [number, number] {
  const rand = seededRandom(seed), n = xs.length, means: number[] = [];
  for (let k = 0; k < B; k++) { let s = 0; for (let i = 0; i < n; i++) s += xs[Math.floor(rand() * n)]; means.push(s / n); }
  means.sort((a, b) => a - b);
  const q = (p: number) => { const h = (B - 1) * p, lo = Math.floor(h); return means[lo] + (h - lo) * ((means[Math.min(lo + 1, B - 1)]) - means[lo]); };
  return [q(0.025), q(0.975)];
}

// ---- independent forwards ----

const hook = (l: number) => `blocks.${l}.hook_resid_post`;
const L = 5;

function first(ids: number[], f: { text?: string }, prompt: string, name: 'good' | 'bad'): number[] {
  return e.resolveFuture(ids, f, { prompt }, name).firstIds;
}

/** Δ = lse log p(good firsts) − lse log p(bad firsts) of one logits row. */
function margin(logits: Float32Array, good: number[], bad: number[]): number {
  const lp = logSoftmax(logits);
  return lse(good.map((i) => lp[i])) - lse(bad.map((i) => lp[i]));
}

interface Read { ids: number[][]; acts: number[][][]; good: number[][]; bad: number[][] }

async function readSet(s: Behaviour | string[]): Promise<Read> {
  const texts = Array.isArray(s) ? s : [...s.positive, ...s.negative];
  const ids = texts.map((p) => e.encodePrompt({ prompt: p }));
  const acts: number[][][] = Array.from({ length: L }, () => []);
  for (const x of ids) {
    const { captured } = await e.run(x, { capture: Array.from({ length: L }, (_, l) => hook(l)), logits: 'last' });
    for (let l = 0; l < L; l++) acts[l].push(Array.from(captured.get(hook(l))!.subarray((x.length - 1) * e.spec.dModel, x.length * e.spec.dModel)));
  }
  const good = Array.isArray(s) ? [] : ids.map((x, i) => first(x, s.good, texts[i], 'good'));
  const bad = Array.isArray(s) ? [] : ids.map((x, i) => first(x, s.bad, texts[i], 'bad'));
  return { ids, acts, good, bad };
}

const labels = (s: Behaviour) => [...s.positive.map(() => 1), ...s.negative.map(() => 0)];
const diffMeans = (X: number[][], y: number[]) => X[0].map((_, j) => meanOf(X.filter((_, i) => y[i] === 1).map((x) => x[j])) - meanOf(X.filter((_, i) => y[i] === 0).map((x) => x[j])));

/** Per prompt, the margin change when `v` (unit) × DOSE is added at the last position of blocks.l.hook_resid_post. */
async function steerDeltas(set: Read, l: number, v: number[]): Promise<number[]> {
  const out: number[] = [];
  for (const [i, x] of set.ids.entries()) {
    const base = margin((await e.run(x, { logits: 'last' })).logits, set.good[i], set.bad[i]);
    const steered = await e.run(x, { logits: 'last', interventions: [{ hook: hook(l), op: { kind: 'add', v: Float32Array.from(v), alpha: DOSE }, positions: [x.length - 1] }] });
    out.push(margin(steered.logits, set.good[i], set.bad[i]) - base);
  }
  return out;
}

/** Per block, the mean over the set's equal-length pairs of max_t r of the resid_pre denoising patch; null without pairs. */
async function causalCurve(s: Behaviour): Promise<number[] | null> {
  const curves: number[][] = [];
  for (let i = 0; i < Math.min(s.positive.length, s.negative.length); i++) {
    const clean = e.encodePrompt({ prompt: s.positive[i] }), corrupt = e.encodePrompt({ prompt: s.negative[i] });
    if (clean.length !== corrupt.length) continue;
    const pre = Array.from({ length: L }, (_, l) => `blocks.${l}.hook_resid_pre`);
    const c = await e.run(clean, { capture: pre, logits: 'last' });
    // one pair of futures for the three runs, tokenised after the clean prompt (as activation patching defines it)
    const good = first(clean, s.good, s.positive[i], 'good'), bad = first(clean, s.bad, s.positive[i], 'bad');
    const dClean = margin(c.logits, good, bad);
    const dCorrupt = margin((await e.run(corrupt, { logits: 'last' })).logits, good, bad);
    if (dClean === dCorrupt) continue;
    const curve: number[] = [];
    for (let l = 0; l < L; l++) {
      let best = -Infinity;
      for (let t = 0; t < corrupt.length; t++) {
        const p = await e.run(corrupt, { logits: 'last', interventions: [{ hook: pre[l], op: { kind: 'patch', replacement: c.captured.get(pre[l])! }, positions: [t] }] });
        best = Math.max(best, (margin(p.logits, good, bad) - dCorrupt) / (dClean - dCorrupt));
      }
      curve.push(best);
    }
    curves.push(curve);
  }
  return curves.length ? curves[0].map((_, l) => meanOf(curves.map((c) => c[l]))) : null;
}

describe('mechanisms on stories260K: happy/sad (A) vs he/she (B), every number against an independent computation', () => {
  it('cos_caa, cos_probe, the cross-steering matrix with its intervals, selectivity, natural correlation, causal curves and verdicts', async () => {
    const [ra, rb, rc] = [await readSet(A), await readSet(B), await readSet(CONTROL)];
    const ya = labels(A), yb = labels(B);
    expect(r.layers).toEqual([0, 1, 2, 3, 4]);
    expect(r.hooks).toEqual([0, 1, 2, 3, 4].map(hook));
    for (let l = 0; l < L; l++) {
      const ca = diffMeans(ra.acts[l], ya), cb = diffMeans(rb.acts[l], yb);
      expect(Math.abs(r.cosCaa[l]! - cos(ca, cb))).toBeLessThan(TOL);
      const pa = probe(ra.acts[l], ya), pb = probe(rb.acts[l], yb);
      expect(Math.abs(r.cosProbe[l]! - cos(pa.w, pb.w))).toBeLessThan(TOL);
      const pool = [...ra.acts[l], ...rb.acts[l], ...rc.acts[l]];
      expect(r.pool).toEqual({ a: 32, b: 48, control: CONTROL.length });
      expect(Math.abs(r.naturalCorr[l]! - corr(pool.map((x) => dot(pa.w, x) + pa.b), pool.map((x) => dot(pb.w, x) + pb.b)))).toBeLessThan(TOL);

      const ua = ca.map((x) => x / Math.hypot(...ca)), ub = cb.map((x) => x / Math.hypot(...cb));
      const cells = { aOnA: await steerDeltas(ra, l, ua), aOnB: await steerDeltas(rb, l, ua), bOnB: await steerDeltas(rb, l, ub), bOnA: await steerDeltas(ra, l, ub) };
      (['aOnA', 'aOnB', 'bOnB', 'bOnA'] as const).forEach((k, c) => {
        const got = r.crossSteer[k][l], want = cells[k];
        expect(got.n).toBe(want.length);
        expect(Math.abs(got.mean - meanOf(want))).toBeLessThan(TOL);
        const [lo, hi] = bootstrap(want, 500, 7 + 4 * l + c);
        expect(Math.abs(got.lo - lo)).toBeLessThan(TOL);
        expect(Math.abs(got.hi - hi)).toBeLessThan(TOL);
      });
      const selA = Math.abs(meanOf(cells.aOnB)) / Math.abs(meanOf(cells.aOnA)), selB = Math.abs(meanOf(cells.bOnA)) / Math.abs(meanOf(cells.bOnB));
      expect(Math.abs(r.selectivityA[l]! - selA) / Math.max(1, selA)).toBeLessThan(TOL);
      expect(Math.abs(r.selectivityB[l]! - selB) / Math.max(1, selB)).toBeLessThan(TOL);

      // The verdict's rule (thresholds 0.5, 0.5, 0.5, reach 0.05 nats) on the independent numbers.
      const cosAbs = Math.abs(cos(ca, cb)), rAbs = Math.abs(r.naturalCorr[l]!);
      const reach = Math.abs(meanOf(cells.aOnA)) >= 0.05 && Math.abs(meanOf(cells.bOnB)) >= 0.05;
      const kind = !reach ? 'no reach'
        : cosAbs >= 0.5 && selA >= 0.5 && selB >= 0.5 ? 'shared'
          : rAbs >= 0.5 && selA < 0.5 && selB < 0.5 ? 'correlated'
            : rAbs < 0.5 && cosAbs < 0.5 && selA < 0.5 && selB < 0.5 ? 'independent' : 'mixed';
      expect(r.verdict[l].kind).toBe(kind);
      expect(r.verdict[l].text).toContain(`cos_caa ${cos(ca, cb).toFixed(3)}`);
    }
    expect(r.thresholds).toEqual({ sharedCosine: 0.5, mutualSelectivity: 0.5, naturalCorrelation: 0.5, minReach: 0.05 });
    const unsteered: number[] = [];
    for (const [i, x] of ra.ids.entries()) unsteered.push(margin((await e.run(x, { logits: 'last' })).logits, ra.good[i], ra.bad[i]));
    expect(Math.abs(r.unsteered.a - meanOf(unsteered))).toBeLessThan(TOL);

    for (const [s, got] of [[A, r.causal.a], [B, r.causal.b]] as const) {
      const want = await causalCurve(s);
      if (want === null) { expect(got).toBeNull(); continue; }
      expect(got).not.toBeNull();
      for (let l = 0; l < L; l++) expect(Math.abs(got!.curve[l] - want[l])).toBeLessThan(TOL);
      let firstBlock: number | null = null;
      for (let l = 1; l < L && firstBlock === null; l++) if (want[l] >= 0.5) firstBlock = l;
      expect(got!.firstBlock).toBe(firstBlock);
    }
    if (r.causal.a && r.causal.b) expect(Math.abs(r.causal.similarity! - corr(r.causal.a.curve, r.causal.b.curve))).toBeLessThan(TOL);
  }, 600_000);

  it('counts the prefix reuse: with the last token read, each steered run computes one position', () => {
    const nA = 32, nB = 48;
    const positions = [...A.positive, ...A.negative, ...B.positive, ...B.negative].map((p) => e.encodePrompt({ prompt: p }).length);
    expect(r.cost.positionsComputed).toBe((nA + nB) * 2 * L);
    const fe = positions.reduce((s, T) => s + 1 / T, 0) * 2 * L;
    expect(r.cost.cells).toBe(4 * L);
    expect(Math.abs(r.cost.forwardEquivalentsPerCell - fe / (4 * L))).toBeLessThan(1e-12);
    expect(r.cost.naivePerCell).toBe((nA + nB) / 2);
  });
});
