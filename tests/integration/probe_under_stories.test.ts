import * as fs from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CpuBackend } from '../../workers/engine/backend/cpu';
import { Engine } from '../../workers/engine/engine';
import { NodeFiles } from '../../workers/engine/io/node_files';
import { parseLabelledSet } from '../../workers/engine/io/prompt_set';
import { caaVector } from '../../workers/engine/studies/vectors';
import { probeUnderIntervention, type ProbeUnderResult } from '../../workers/engine/studies/probe_under';
import { fitLogistic, stratifiedFolds } from '../../workers/engine/analysis/logistic';
import { parseSpec, toIntervention, type InterventionSpec } from '../../workers/engine/steering/spec';
import { STUDIES, studyContext } from '../../workers/engine/studies/registry';
import type { Intervention } from '../../workers/engine/model/intervention';
import { logSoftmax } from '../reference_math';
import { sharedPath } from '../shared';

/**
 * The probe under an intervention (studies/probe_under.ts) on stories260K with the he/she set and
 * the happy/sad CAA vector, against a computation in this file that shares no code with the module:
 * plain Engine.run forwards with and without the intervention, the probes refitted here (own
 * standardisation, fitLogistic), scores applied in float64, AUROC by counting pairs.
 */
const SET = parseLabelledSet('he_she.json', fs.readFileSync('public/probes/he_she.json', 'utf8'));
const HS = JSON.parse(fs.readFileSync('public/steering/happy_sad.json', 'utf8')) as { positive: string[]; negative: string[] };
const HOOK = 'blocks.2.hook_resid_post'; // row 3 of the probe
const ROW = 3;
const TEXTS = [...SET.positive, ...SET.negative];
const LABELS = TEXTS.map((_, i) => (i < SET.positive.length ? 1 : 0));
const n = TEXTS.length;

let e: Engine;
let d: number;
let caa: Float32Array;
beforeAll(async () => {
  e = await Engine.load(new NodeFiles(sharedPath('models', 'stories260K')), new CpuBackend());
  d = e.spec.dModel;
  caa = (await caaVector(e, { positive: HS.positive, negative: HS.negative, hook: HOOK })).vector;
}, 120_000);
afterAll(() => e.dispose());

const add = (v: ArrayLike<number>, alpha: number): Intervention => toIntervention(parseSpec({ hook: HOOK, type: 'add', vector: Array.from(v), alpha }, 'test'), e.spec, { nPrompt: 1 }, 'test');
const run = (iv: Intervention, extra: { threshold?: number } = {}) =>
  probeUnderIntervention(e, { ...SET, good: { text: ' he' }, bad: { text: ' she' }, interventions: () => [iv], ...extra });

/** Every prompt's residual at the last token, rows 0..L (float32 as captured), and its margin log p(he) − log p(she) in float64. */
async function capture(ivs: Intervention[]): Promise<{ rows: Float32Array[]; margin: number[] }> {
  const hooks = ['blocks.0.hook_resid_pre', ...Array.from({ length: e.spec.nLayers }, (_, l) => `blocks.${l}.hook_resid_post`)];
  const rows = hooks.map(() => new Float32Array(n * d));
  const margin: number[] = [];
  for (const [i, prompt] of TEXTS.entries()) {
    const ids = e.encodePrompt({ prompt });
    const { captured, logits } = await e.run(ids, { capture: hooks, interventions: ivs });
    const T = ids.length;
    hooks.forEach((h, r) => rows[r].set(captured.get(h)!.subarray((T - 1) * d, T * d), i * d));
    const V = e.spec.dVocab;
    const lp = logSoftmax(logits.subarray((T - 1) * V, T * V));
    const he = e.resolveFuture(ids, { text: ' he' }, { prompt }).firstIds, she = e.resolveFuture(ids, { text: ' she' }, { prompt }).firstIds;
    expect([he.length, she.length]).toEqual([1, 1]);
    margin.push(lp[he[0]] - lp[she[0]]);
  }
  return { rows, margin };
}

/** A probe fitted on rows `train` of X: standardised by their mean and σ, fitLogistic (λ = 1), folded back to raw units. */
function probeOn(X: Float32Array, train: number[]): { w: Float64Array; b: number } {
  const mu = new Float64Array(d), sd = new Float64Array(d);
  for (const i of train) for (let j = 0; j < d; j++) mu[j] += X[i * d + j] / train.length;
  for (const i of train) for (let j = 0; j < d; j++) sd[j] += (X[i * d + j] - mu[j]) ** 2 / train.length;
  for (let j = 0; j < d; j++) sd[j] = Math.sqrt(sd[j]) > 1e-12 * (1 + Math.abs(mu[j])) ? Math.sqrt(sd[j]) : 1;
  const Z: number[] = [];
  for (const i of train) for (let j = 0; j < d; j++) Z.push((X[i * d + j] - mu[j]) / sd[j]);
  const fit = fitLogistic(Z, train.map((i) => LABELS[i]), train.length, d, 1);
  const w = Float64Array.from(fit.w, (x, j) => x / sd[j]);
  let b = fit.b;
  for (let j = 0; j < d; j++) b -= w[j] * mu[j];
  return { w, b };
}

const score = (p: { w: Float64Array; b: number }, X: Float32Array, i: number) => {
  let s = p.b;
  for (let j = 0; j < d; j++) s += p.w[j] * X[i * d + j];
  return s;
};

/** AUROC as the fraction of (positive, negative) pairs ordered right, ties ½. */
function pairAuroc(s: number[]): number {
  let good = 0, pairs = 0;
  for (let i = 0; i < n; i++) for (let k = 0; k < n; k++) {
    if (LABELS[i] !== 1 || LABELS[k] !== 0) continue;
    pairs++;
    good += s[i] > s[k] ? 1 : s[i] === s[k] ? 0.5 : 0;
  }
  return good / pairs;
}

const mean = (xs: number[]) => xs.reduce((a, b) => a + b, 0) / xs.length;
const gap = (xs: number[]) => mean(xs.filter((_, i) => LABELS[i] === 1)) - mean(xs.filter((_, i) => LABELS[i] === 0));

describe('probe under an intervention on stories260K (he/she probe, happy/sad CAA vector at blocks.2.hook_resid_post, α = 6)', () => {
  let r: ProbeUnderResult;
  let unsteered: Awaited<ReturnType<typeof capture>>, steered: Awaited<ReturnType<typeof capture>>;
  beforeAll(async () => {
    r = await run(add(caa, 6));
    unsteered = await capture([]);
    steered = await capture([add(caa, 6)]);
  }, 120_000);

  it('held-out accuracy and AUROC, unsteered and steered, equal the fold probes refitted here on plain forwards', () => {
    const fold = stratifiedFolds(LABELS, 5, 0);
    for (let row = 0; row < r.hooks.length; row++) {
      const held = [new Array<number>(n), new Array<number>(n)];
      for (let f = 0; f < 5; f++) {
        const train = TEXTS.map((_, i) => i).filter((i) => fold[i] !== f);
        const p = probeOn(unsteered.rows[row], train);
        for (let i = 0; i < n; i++) if (fold[i] === f) { held[0][i] = score(p, unsteered.rows[row], i); held[1][i] = score(p, steered.rows[row], i); }
      }
      const acc = (s: number[]) => s.filter((x, i) => (x > 0 ? 1 : 0) === LABELS[i]).length / n;
      expect(Math.abs(r.accuracy[row] - acc(held[0]))).toBeLessThan(1e-5);
      expect(Math.abs(r.auroc[row] - pairAuroc(held[0]))).toBeLessThan(1e-5);
      expect(Math.abs(r.accuracySteered[row] - acc(held[1]))).toBeLessThan(1e-5);
      expect(Math.abs(r.aurocSteered[row] - pairAuroc(held[1]))).toBeLessThan(1e-5);
      for (let i = 0; i < n; i++) expect(Math.abs(r.heldOutSteered[row][i] - held[1][i])).toBeLessThan(1e-5 * (1 + Math.abs(held[1][i])));
    }
    // the vector does reach the probe from row 3 on (else the comparison above would be vacuous there)
    expect(r.accuracySteered.slice(ROW).some((a, k) => a !== r.accuracy[ROW + k])).toBe(true);
  });

  it('the score shift is the mean change of the probe fitted on every unsteered prompt; its weights equal the refit', () => {
    const all = TEXTS.map((_, i) => i);
    for (let row = 1; row < r.hooks.length; row++) {
      const p = probeOn(unsteered.rows[row], all);
      const su = all.map((i) => score(p, unsteered.rows[row], i)), ss = all.map((i) => score(p, steered.rows[row], i));
      const scale = Math.max(...su.map(Math.abs));
      const wMax = Math.max(...Array.from(p.w, Math.abs));
      p.w.forEach((x, j) => expect(Math.abs(r.weights[row][j] - x)).toBeLessThan(1e-6 * wMax));
      expect(Math.abs(r.bias[row] - p.b)).toBeLessThan(1e-6 * scale);
      expect(Math.abs(r.scoreShift[row].mean - mean(ss.map((s, i) => s - su[i])))).toBeLessThan(1e-5 * scale);
      expect(Math.abs(r.scoreGap[row] - gap(su))).toBeLessThan(1e-5 * scale);
      expect(r.scoreShift[row].lo).toBeLessThanOrEqual(r.scoreShift[row].mean);
      expect(r.scoreShift[row].hi).toBeGreaterThanOrEqual(r.scoreShift[row].mean);
      for (let i = 0; i < n; i++) expect(Math.abs(r.scoreSteered[row][i] - ss[i])).toBeLessThan(1e-5 * scale);
    }
    // before the intervention's layer nothing moves, exactly
    for (let row = 0; row < ROW; row++) expect(r.scoreShift[row].mean).toBe(0);
  });

  it('the behaviour shift is the mean change of log p(he) − log p(she) after each prompt, and the flags follow the stated rule', () => {
    for (let i = 0; i < n; i++) {
      expect(Math.abs(r.marginUnsteered[i] - unsteered.margin[i])).toBeLessThan(1e-5);
      expect(Math.abs(r.marginSteered[i] - steered.margin[i])).toBeLessThan(1e-5);
    }
    expect(Math.abs(r.behaviourShift.mean - mean(steered.margin.map((m, i) => m - unsteered.margin[i])))).toBeLessThan(1e-5);
    expect(Math.abs(r.marginGap - gap(unsteered.margin))).toBeLessThan(1e-5);
    const behaviourMoves = Math.abs(r.behaviourShift.mean) >= 0.25 * Math.abs(r.marginGap);
    r.flag.forEach((flag, row) => {
      // a row the vector does not reach (before its hook) is never flagged
      const reached = steered.rows[row].some((x, k) => x !== unsteered.rows[row][k]);
      expect(r.reached[row]).toBe(reached);
      expect(reached).toBe(row >= ROW);
      const s = r.scoreShift[row].mean, scoreMoves = s !== 0 && Math.abs(s) >= 0.25 * Math.abs(r.scoreGap[row]);
      expect(flag).toBe(!reached ? null : scoreMoves && !behaviourMoves ? 'reads-vector' : behaviourMoves && !scoreMoves ? 'misses-behaviour' : null);
    });
  });
});

describe('planted: steering along and across the probe\'s own direction (row 3, blocks.2.hook_resid_post, every position)', () => {
  let w: Float64Array;
  let wNorm: number;
  beforeAll(async () => {
    w = probeOn((await capture([])).rows[ROW], TEXTS.map((_, i) => i)).w;
    wNorm = Math.hypot(...w);
  }, 120_000);

  it('a vector orthogonal to the probe weights: score shift 0 (1e-6 of what the same dose along them gives) while the margin moves → misses-behaviour', async () => {
    let along = 0;
    for (let j = 0; j < d; j++) along += caa[j] * w[j] / wNorm;
    const perp = Array.from(caa, (x, j) => x - along * w[j] / wNorm);
    const norm = Math.hypot(...perp);
    const unit = perp.map((x) => x / norm);
    const alpha = -8;
    const r = await run(add(unit, alpha));
    const parallel = Math.abs(alpha) * wNorm; // |shift| a unit vector along w would give at this dose
    expect(Math.abs(r.scoreShift[ROW].mean)).toBeLessThan(1e-6 * parallel);
    for (let i = 0; i < n; i++) expect(Math.abs(r.scoreSteered[ROW][i] - r.scoreUnsteered[ROW][i])).toBeLessThan(1e-6 * parallel);
    expect(Math.abs(r.behaviourShift.mean)).toBeGreaterThan(0.25 * Math.abs(r.marginGap));
    expect(r.flag[ROW]).toBe('misses-behaviour');
  });

  it('the probe\'s unit weight direction ŵ at dose α: every score moves by α·‖w‖, exactly as computed by hand → reads-vector', async () => {
    const alpha = -0.5;
    const r = await run(add(Array.from(w, (x) => x / wNorm), alpha));
    const want = alpha * wNorm;
    expect(Math.abs(r.scoreShift[ROW].mean - want)).toBeLessThan(1e-6 * Math.abs(want));
    for (let i = 0; i < n; i++) expect(Math.abs(r.scoreSteered[ROW][i] - r.scoreUnsteered[ROW][i] - want)).toBeLessThan(1e-6 * Math.abs(want));
    expect(Math.abs(r.scoreShift[ROW].mean)).toBeGreaterThan(0.25 * Math.abs(r.scoreGap[ROW]));
    expect(Math.abs(r.behaviourShift.mean)).toBeLessThan(0.25 * Math.abs(r.marginGap));
    expect(r.flag[ROW]).toBe('reads-vector');
  });
});

describe('the target future in greedy text', () => {
  it('per prompt, whether 4 greedy new tokens hold " he", unsteered and steered, as Engine.generate gives them', async () => {
    const iv = add(caa, 6);
    const r = await probeUnderIntervention(e, { ...SET, good: { text: ' he' }, bad: { text: ' she' }, interventions: () => [iv], generate: 4 });
    const want: [boolean[], boolean[]] = [[], []];
    for (const prompt of TEXTS) {
      const he = e.resolveFuture(e.encodePrompt({ prompt }), { text: ' he' }, { prompt }).firstIds[0];
      for (const [k, ivs] of [[], [iv]].entries()) {
        const g = await e.generate({ prompt, good: { text: ' he' }, bad: { text: ' she' }, maxNewTokens: 4, temperature: 0, interventions: ivs });
        want[k].push(g.ids.includes(he));
      }
    }
    expect(r.target!.unsteered).toEqual(want[0]);
    expect(r.target!.steered).toEqual(want[1]);
    expect(r.target!.rateUnsteered).toBe(want[0].filter(Boolean).length / n);
    expect(want[0].some(Boolean) && want[0].some((x) => !x)).toBe(true); // neither all nor none: the check can fail either way
  }, 120_000);
});

describe('refusals before any forward pass', () => {
  it('no intervention, a hook the model lacks, a non-finite τ or generate count: each says what and why', async () => {
    const base = { ...SET, good: { text: ' he' }, bad: { text: ' she' } };
    let forwards = 0;
    const run0 = e.run.bind(e);
    e.run = (...a: Parameters<Engine['run']>) => { forwards++; return run0(...a); };
    try {
      await expect(probeUnderIntervention(e, { ...base, interventions: () => [] })).rejects.toThrow(/needs an intervention: none was given/);
      // through the studies' row, as the worker runs it: specs resolved per prompt before any forward
      const study = (spec: InterventionSpec) => STUDIES.probeUnder.run(studyContext(e), { ...base, specs: [spec], specLabels: ['intervention #1'] });
      await expect(study({ hook: 'blocks.9.hook_resid_post', type: 'add', vector: Array(d).fill(0), alpha: 1 })).rejects.toThrow(/intervention #1: hook "blocks\.9\.hook_resid_post": layer 9 does not exist \(the model has layers 0\.\.4\)/);
      await expect(study({ hook: HOOK, type: 'add', vector: Array.from(caa), alpha: Infinity })).rejects.toThrow(/intervention #1: "alpha" must be a finite number \(got Infinity\)/);
      await expect(probeUnderIntervention(e, { ...base, threshold: NaN, interventions: () => [add(caa, 1)] })).rejects.toThrow(/threshold τ must be a finite number ≥ 0 \(got NaN\)/);
      await expect(probeUnderIntervention(e, { ...base, generate: 1.5, interventions: () => [add(caa, 1)] })).rejects.toThrow(/generate must be a whole number/);
      await expect(probeUnderIntervention(e, { ...base, good: { text: '' }, interventions: () => [add(caa, 1)] })).rejects.toThrow(/good future is empty/);
      expect(forwards).toBe(0);
    } finally {
      e.run = run0;
    }
  });
});
