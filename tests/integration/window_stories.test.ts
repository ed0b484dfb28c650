import * as fs from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CpuBackend } from '../../workers/engine/backend/cpu';
import { Engine } from '../../workers/engine/engine';
import { NodeFiles } from '../../workers/engine/io/node_files';
import { interventionWindow, pointOfNoReturn, type WindowRequest } from '../../workers/engine/studies/window';
import type { Intervention } from '../../workers/engine/model/intervention';
import { toIntervention } from '../../workers/engine/steering/spec';
import { caaVector } from '../../workers/engine/studies/vectors';
import { sharedPath } from '../shared';
import type { Progress } from '../../workers/engine/progress';

/** The intervention window on stories260K with the happy − sad CAA vector (public/steering/happy_sad.json). */
let e: Engine;
let iv: Intervention;
const N = 10;
const prompt = 'The little girl felt very';
const base = (): WindowRequest => ({ prompt, good: { text: ' happy' }, bad: { text: ' sad' }, interventions: [iv], maxNewTokens: N });
/** engine.generate of N tokens (EOS does not stop it, as in the window) under these interventions. */
const generate = (interventions: Intervention[], extra: { temperature?: number; seed?: number } = {}) =>
  e.generate({ prompt, good: { text: ' happy' }, bad: { text: ' sad' }, maxNewTokens: N, stopAtEos: false, interventions, ...extra });
const withSteps = (start: number): Intervention => ({ ...iv, steps: { start, end: Number.POSITIVE_INFINITY } });

beforeAll(async () => {
  e = await Engine.load(new NodeFiles(sharedPath('models', 'stories260K')), new CpuBackend());
}, 120_000);
/**
 * The CAA intervention, computed on first use inside a test (not in beforeAll: the runs it makes
 * reach analysis code, which Stryker would otherwise count as "static", run with every test).
 */
async function steering(): Promise<void> {
  if (iv) return;
  const set = JSON.parse(fs.readFileSync('public/steering/happy_sad.json', 'utf8')) as { positive: string[]; negative: string[] };
  const v = await caaVector(e, { positive: set.positive, negative: set.negative, hook: 'blocks.3.hook_resid_post' });
  iv = toIntervention({ hook: 'blocks.3.hook_resid_post', type: 'add', vector: v.vector, alpha: 6 }, e.spec, { nPrompt: e.encodePrompt({ prompt }).length, maxNewTokens: N });
}
afterAll(() => e.dispose());

describe('intervention window (happy − sad CAA at blocks.3.hook_resid_post, α = 6)', () => {
  it('k = 0 equals steering the whole generation, k > N equals no steering, every k equals a generation steered from step k (bit for bit)', async () => {
    await steering();
    const progress: Progress[] = [];
    const r = await interventionWindow(e, base(), (p) => progress.push(p));
    expect(r.ks).toEqual(Array.from({ length: N }, (_, k) => k));
    const whole = await generate([iv]);
    expect(r.variants[0].ids).toEqual(whole.ids);
    expect(r.variants[0].margins).toEqual(whole.margins);
    expect(r.variants[0].text).toBe(whole.text);
    const none = await generate([]);
    expect(r.unsteered.ids).toEqual(none.ids);
    expect(r.unsteered.margins).toEqual(none.margins);
    const late = await generate([withSteps(N + 1)]);
    expect(late.ids).toEqual(r.unsteered.ids);
    expect(late.margins).toEqual(r.unsteered.margins);
    for (const k of [1, 4, N - 1]) {
      const g = await generate([withSteps(k)]);
      expect(r.variants[k].ids).toEqual(g.ids);
      expect(r.variants[k].margins).toEqual(g.margins);
    }
    // Default score: the mean margin over all N steps.
    r.variants.forEach((v, k) => expect(r.outcome[k]).toBeCloseTo(v.margins.reduce((a, b) => a + b, 0) / N, 12));
    // Steering the whole generation makes it happy; the unsteered one is sad; a late start cannot undo it.
    expect(r.unsteered.outcome).toBeLessThan(0);
    expect(r.outcome[0]).toBeGreaterThan(0);
    expect(r.outcome[N - 1]).toBeLessThan(0);
    expect(r.pointOfNoReturn).not.toBeNull();
    expect(r.outcome[r.pointOfNoReturn!]).toBeGreaterThan(0);
    for (let k = r.pointOfNoReturn! + 1; k < N; k++) expect(r.outcome[k]).toBeLessThanOrEqual(0);
    // The unsteered prefix is shared: N passes for the unsteered run, N − k for variant k.
    const total = N + 1 + (N * (N + 1)) / 2;
    expect(progress.at(-1)).toEqual({ done: total, total });
  });

  it('sampling replays the unsteered draws before k: the variant equals a sampled generation steered from step k (same seed)', async () => {
    await steering();
    const r = await interventionWindow(e, { ...base(), temperature: 1, seed: 5, kMax: 3 });
    for (const k of [0, 3]) {
      const g = await generate([withSteps(k)], { temperature: 1, seed: 5 });
      expect(r.variants[k].ids).toEqual(g.ids);
    }
    expect(r.unsteered.ids).toEqual((await generate([], { temperature: 1, seed: 5 })).ids);
  });

  it('scores: margin at a chosen step, and whether a text appears (+1 / −1)', async () => {
    await steering();
    const r = await interventionWindow(e, { ...base(), kMax: 2, score: { kind: 'margin', step: 3 } });
    r.variants.forEach((v, k) => expect(r.outcome[k]).toBe(v.margins[3]));
    const word = r.variants[0].text.trim().split(/\s+/)[0];
    const c = await interventionWindow(e, { ...base(), kMax: 0, score: { kind: 'contains', text: word } });
    expect(c.outcome[0]).toBe(1);
    expect(c.unsteered.outcome).toBe(c.unsteered.text.includes(word) ? 1 : -1);
  });

  it('refuses a start step past the generation, a score step outside it, and no intervention', async () => {
    await steering();
    await expect(interventionWindow(e, { ...base(), kMax: N })).rejects.toThrow(/K = 10 must be in 0\.\.9/);
    await expect(interventionWindow(e, { ...base(), score: { kind: 'margin', step: N } })).rejects.toThrow(/score step 10 is outside the generation's steps 0\.\.9/);
    await expect(interventionWindow(e, { ...base(), interventions: [] })).rejects.toThrow(/needs an intervention/);
  });

  it('refuses every bad N, K and score with its message, and a prompt plus N tokens past the context', async () => {
    await steering();
    const bad: [Partial<WindowRequest>, string][] = [
      [{ maxNewTokens: 0 }, 'max new tokens must be a positive integer (got 0)'],
      [{ maxNewTokens: 1.5 }, 'max new tokens must be a positive integer (got 1.5)'],
      [{ kMax: -1 }, 'the last start step K = -1 must be in 0..9'],
      [{ kMax: 1.5 }, 'the last start step K = 1.5 must be in 0..9'],
      [{ score: { kind: 'margin', step: -1 } }, "score step -1 is outside the generation's steps 0..9"],
      [{ score: { kind: 'margin', step: 1.5 } }, "score step 1.5 is outside the generation's steps 0..9"],
      [{ score: { kind: 'mean', last: 0 } }, 'score over the last 0 steps: give 1..10 (the generation has 10 steps)'],
      [{ score: { kind: 'mean', last: N + 1 } }, 'score over the last 11 steps: give 1..10'],
      [{ score: { kind: 'mean', last: 1.5 } }, 'score over the last 1.5 steps: give 1..10'],
      [{ score: { kind: 'contains', text: '' } }, 'score "contains" needs the text to look for'],
    ];
    for (const [change, message] of bad) await expect(interventionWindow(e, { ...base(), ...change })).rejects.toThrow(message);
    const T = e.encodePrompt({ prompt }).length, ctx = e.model.contextLength;
    await expect(interventionWindow(e, { ...base(), maxNewTokens: ctx - T + 1 })).rejects.toThrow(`the prompt (${T} tokens) plus ${ctx - T + 1} new tokens do not fit the context of ${ctx} tokens`);
  });

  it('a mean over the last 3 steps and the bounds N − 1 and N taken; progress counts every token pass once; an intervention whose own steps end at 2 leaves variants k ≥ 2 unsteered', async () => {
    await steering();
    const progress: Progress[] = [];
    const r = await interventionWindow(e, { ...base(), kMax: 1, score: { kind: 'mean', last: 3 } }, (p) => progress.push(p));
    r.variants.forEach((v, k) => expect(r.outcome[k]).toBeCloseTo((v.margins[N - 3] + v.margins[N - 2] + v.margins[N - 1]) / 3, 12));
    expect(r.unsteered.outcome).toBeCloseTo(r.unsteered.margins.slice(N - 3).reduce((a, b) => a + b, 0) / 3, 12);
    // N passes unsteered, the reference prefill, N − k per variant k = 1, 0; then the final event
    const total = N + 1 + (N - 1) + N;
    expect(progress).toEqual([...Array.from({ length: total }, (_, i) => ({ done: i + 1, total })), { done: total, total }]);
    expect((await interventionWindow(e, { ...base(), kMax: N - 1, score: { kind: 'margin', step: N - 1 } })).ks).toHaveLength(N);
    expect((await interventionWindow(e, { ...base(), kMax: 0, score: { kind: 'mean', last: N } })).ks).toEqual([0]);
    const one = await interventionWindow(e, { ...base(), maxNewTokens: 1, score: { kind: 'mean', last: 1 } }); // N = 1, last = 1
    expect([one.ks, one.outcome]).toEqual([[0], [one.variants[0].margins[0]]]);
    const early: Intervention = { ...iv, steps: { start: 0, end: 2 } };
    const w = await interventionWindow(e, { ...base(), interventions: [early], kMax: 3 });
    for (const k of [2, 3]) expect(w.variants[k].ids).toEqual(w.unsteered.ids);
    const g1 = await generate([{ ...iv, steps: { start: 1, end: 2 } }]);
    expect(w.variants[1].ids).toEqual(g1.ids);
    expect(w.variants[1].margins).toEqual(g1.margins);
  });

  it('a two-token prompt with N = 5 (steps past the prompt length), a margin at step 0, two interventions switched on at different steps, EOS drawn in the unsteered run, and the prefix snapshot released', async () => {
    await steering();
    const short = { prompt: 'Once', good: { text: ' happy' }, bad: { text: ' sad' }, maxNewTokens: 5 };
    expect(e.encodePrompt(short)).toHaveLength(2); // BOS, "Once": the variants' passes run at positions T + step > 2T
    const r = await interventionWindow(e, { ...short, interventions: [iv], score: { kind: 'margin', step: 0 } });
    for (const k of [0, 2, 4]) {
      const g = await e.generate({ ...short, stopAtEos: false, interventions: [withSteps(k)] });
      expect(r.variants[k].ids).toEqual(g.ids);
      expect(r.variants[k].margins).toEqual(g.margins);
      expect(r.outcome[k]).toBe(g.margins[0]);
    }
    // Two interventions: variant 0 is steered from the first position either acts on (the CAA from step 0), not the last.
    const both = await interventionWindow(e, { ...base(), interventions: [iv, withSteps(3)], kMax: 0 });
    const g = await generate([iv, withSteps(3)]);
    expect(both.variants[0].ids).toEqual(g.ids);
    expect(both.variants[0].margins).toEqual(g.margins);
    // EOS does not end the unsteered run either (temperature 5, seed 121 draws EOS at step 5 of 10).
    const eos = await interventionWindow(e, { ...base(), temperature: 5, seed: 121, kMax: 0 });
    expect(eos.unsteered.ids.indexOf(e.spec.eosTokenIds[0])).toBe(5);
    expect(eos.unsteered.ids).toEqual((await generate([], { temperature: 5, seed: 121 })).ids);
    const b = e.model.backend as CpuBackend;
    const live = b.liveTensors();
    await interventionWindow(e, { ...base(), kMax: 1 });
    expect(b.liveTensors(), 'the prefix cache snapshot is released').toBe(live);
  });

  it('a prompt plus N tokens exactly at the context length is taken: N steps read positions 0..T + N − 2 (stories260K loaded with a context of T + 4 positions)', async () => {
    await steering();
    const T = e.encodePrompt({ prompt }).length, n = 4, ctx = T + n; // the last token is drawn at position T + n − 2 and never fed back
    const small = await Engine.load(new NodeFiles(sharedPath('models', 'stories260K')), new CpuBackend(), undefined, { contextLength: ctx });
    try {
      expect(small.model.contextLength).toBe(ctx);
      const r = await interventionWindow(small, { ...base(), maxNewTokens: n, kMax: 1 });
      expect(r.ks).toEqual([0, 1]);
      // The definition at this length: variant k is the generation steered from step k, all n steps long.
      for (const k of [0, 1]) {
        const g = await small.generate({ prompt, good: { text: ' happy' }, bad: { text: ' sad' }, maxNewTokens: n, stopAtEos: false, interventions: [withSteps(k)] });
        expect(g.ids).toHaveLength(n);
        expect(r.variants[k].ids).toEqual(g.ids);
        expect(r.variants[k].margins).toEqual(g.margins);
      }
      await expect(interventionWindow(small, { ...base(), maxNewTokens: n + 1 })).rejects.toThrow(`the prompt (${T} tokens) plus ${n + 1} new tokens do not fit the context of ${ctx} tokens`);
    } finally {
      small.dispose();
    }
  });

  it('stops when cancelled', async () => {
    await steering();
    const ctrl = new AbortController();
    await expect(interventionWindow(e, base(), (p) => { if (p.done === 3) ctrl.abort(); }, ctrl.signal)).rejects.toThrow(/abort/i);
  });
});

describe('point of no return', () => {
  it('is the last k whose outcome has the opposite sign of the unsteered outcome', () => {
    expect(pointOfNoReturn([0, 1, 2, 3, 4], [2, 1, -0.5, 0.3, -1], -2)).toBe(3);
    expect(pointOfNoReturn([0, 1, 2], [-1, -2, -3], -2)).toBeNull();
    expect(pointOfNoReturn([0, 1, 2], [-1, 0, 3], 2)).toBe(0);
    expect(pointOfNoReturn([0, 1], [1, -1], 0)).toBeNull();
    expect(pointOfNoReturn([0, 1], [0, 1], 0)).toBeNull(); // no unsteered sign: an outcome of 0 is not "opposite"
    expect(pointOfNoReturn([2, 0, 1], [-1, -1, -1], 1)).toBe(2); // the largest such k, whatever the order of ks
  });
});
