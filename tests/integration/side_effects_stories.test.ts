import * as fs from 'node:fs';
import * as path from 'node:path';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { CpuBackend } from '../../workers/engine/backend/cpu';
import { Engine } from '../../workers/engine/engine';
import { NodeFiles } from '../../workers/engine/io/node_files';
import { parseControlSet } from '../../workers/engine/io/control_set';
import { toIntervention, type InterventionSpec } from '../../workers/engine/steering/spec';
import { caaVector } from '../../workers/engine/studies/vectors';
import { bootstrapMean } from '../../workers/engine/analysis/bootstrap';
import { STUDIES, studyContext } from '../../workers/engine/studies/registry';
import type { SideEffectsRequest, SideEffectsResult } from '../../workers/engine/studies/side_effects';
import { sharedPath } from '../shared';

/**
 * The operating window (DESIGN.md §3) on stories260K with the shipped happy/sad set, the shipped
 * control stories and the he/she set as another behaviour. Every number of the study is recomputed
 * here from plain forwards through the single-run API (Engine.analyse for the teacher-forced
 * margin, Engine.run for the control logits), with the KL and the log-likelihood in float64 by this
 * file's own log-softmax: nothing shared with studies/side_effects.ts or analysis/operating_window.ts.
 */
const read = (...p: string[]) => fs.readFileSync(path.join(__dirname, '..', '..', 'public', ...p), 'utf8');
const HAPPY = JSON.parse(read('steering', 'happy_sad.json')) as { positive: string[]; negative: string[] };
const HE_SHE = JSON.parse(read('probes', 'he_she.json')) as { positive: string[]; negative: string[] };
const CONTROL = parseControlSet('stories.json', read('control', 'stories.json')).texts;
const TARGET = { name: 'happy vs sad', prompts: [...HAPPY.positive, ...HAPPY.negative], good: { text: ' happy' }, bad: { text: ' sad' } };
const OTHER = { name: 'he vs she', prompts: [...HE_SHE.positive.slice(0, 4), ...HE_SHE.negative.slice(0, 4)], good: { text: ' he' }, bad: { text: ' she' } };
const TOL = 1e-5;

let e: Engine;
let vector: number[];
beforeAll(async () => {
  e = await Engine.load(new NodeFiles(sharedPath('models', 'stories260K')), new CpuBackend());
  vector = Array.from((await caaVector(e, { positive: HAPPY.positive, negative: HAPPY.negative, hook: 'blocks.3.hook_resid_post' })).vector);
});
afterAll(() => e.dispose());

const study = (req: SideEffectsRequest, onProgress?: (p: { done: number; total: number }) => void) => STUDIES.sideEffects.run(studyContext(e), req, onProgress);

/** log_softmax of one row in float64. */
function logSoftmax(row: ArrayLike<number>): number[] {
  const m = Math.max(...Array.from(row));
  const lse = m + Math.log(Array.from(row).reduce((s, x) => s + Math.exp(x - m), 0));
  return Array.from(row, (x) => x - lse);
}

/** One dose recomputed by plain forwards: per-prompt margin changes, pooled KL and Δll per token. */
async function byHand(hook: string, alpha: number, prompts: readonly string[], good: string, bad: string, control: readonly string[], at?: InterventionSpec['positions']) {
  const spec = (nPrompt: number) => toIntervention({ hook, type: 'add', vector, alpha, ...(at ? { positions: at } : {}) } as InterventionSpec, e.spec, { nPrompt });
  const changes: number[] = [];
  for (const prompt of prompts) {
    const T = e.encodePrompt({ prompt }).length;
    const req = { prompt, good: { text: good }, bad: { text: bad } };
    const base = (await e.analyse(req)).sequenceMargin;
    const steered = (await e.analyse({ ...req, interventions: [spec(T)] })).sequenceMargin;
    changes.push(steered - base);
  }
  const V = e.spec.dVocab;
  let kl = 0, dll = 0, positions = 0, tokens = 0, ll = 0;
  for (const text of control) {
    const ids = e.encodePrompt({ prompt: text });
    const p = (await e.run(ids, { logits: 'all' })).logits;
    const q = (await e.run(ids, { logits: 'all', interventions: [spec(ids.length)] })).logits;
    for (let t = 0; t < ids.length; t++) {
      const lp = logSoftmax(p.subarray(t * V, (t + 1) * V)), lq = logSoftmax(q.subarray(t * V, (t + 1) * V));
      for (let i = 0; i < V; i++) kl += Math.exp(lp[i]) * (lp[i] - lq[i]);
      positions++;
      if (t + 1 < ids.length) { dll += lq[ids[t + 1]] - lp[ids[t + 1]]; ll += lp[ids[t + 1]]; tokens++; }
    }
  }
  return { changes, reach: changes.reduce((a, b) => a + b, 0) / changes.length, kl: kl / positions, dll: dll / tokens, llPerToken: ll / tokens, positions, tokens };
}

describe('side effects of the happy − sad CAA vector on stories260K', () => {
  const DOSES = [-4, 0, 1, 2, 4, 8];
  const LAYERS = [2, 3];
  let r: SideEffectsResult;
  beforeAll(async () => {
    r = await study({ template: { hook: 'blocks.{l}.hook_resid_post', type: 'add', vector }, layers: LAYERS, doses: [8, -4, 0, 2, 1, 4], target: TARGET, control: CONTROL, others: [OTHER] });
  }, 120_000);

  it('reach (with its bootstrap interval), KL, Δll and the other set\'s shift equal plain forwards at every layer and dose within 1e-5', async () => {
    expect(r.doses).toEqual(DOSES);
    expect(r.hooks).toEqual(['blocks.2.hook_resid_post', 'blocks.3.hook_resid_post']);
    for (const [li, hook] of r.hooks.entries()) {
      for (const [di, alpha] of DOSES.entries()) {
        const h = await byHand(hook, alpha, TARGET.prompts, ' happy', ' sad', CONTROL);
        const ci = bootstrapMean(h.changes);
        expect(Math.abs(r.reach[li][di].mean - h.reach)).toBeLessThan(TOL);
        expect(Math.abs(r.reach[li][di].lo - ci.lo)).toBeLessThan(TOL);
        expect(Math.abs(r.reach[li][di].hi - ci.hi)).toBeLessThan(TOL);
        expect(Math.abs(r.kl[li][di] - h.kl)).toBeLessThan(TOL);
        expect(Math.abs(r.deltaLl[li][di] - h.dll)).toBeLessThan(TOL);
        const o = await byHand(hook, alpha, OTHER.prompts, ' he', ' she', []);
        expect(Math.abs(r.others[0].shift[li][di].mean - o.reach)).toBeLessThan(TOL);
        if (li === 0 && di === 0) {
          expect(r.counts).toEqual({ target: 32, control: CONTROL.length, positions: h.positions, tokens: h.tokens });
          expect(Math.abs(r.unsteered.llPerToken - h.llPerToken)).toBeLessThan(TOL);
        }
      }
    }
    // the steering is real: reach grows with the dose and the control text pays for it
    expect(r.reach[1][5].mean).toBeGreaterThan(3);
    expect(r.kl[1][5]).toBeGreaterThan(0.5);
  }, 300_000);

  it('dose 0 gives KL 0 and Δll 0 exactly (and reach 0)', () => {
    const d0 = r.doses.indexOf(0);
    for (let li = 0; li < r.hooks.length; li++) {
      expect(r.kl[li][d0]).toBe(0);
      expect(r.deltaLl[li][d0]).toBe(0);
      expect(r.reach[li][d0].mean).toBe(0);
    }
  });
});

describe('prefix reuse', () => {
  it('an intervention from position 9 on (the rows before it read from the unsteered cache) equals plain forwards, and computes fewer positions', async () => {
    const positions = [9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19];
    const target = { ...TARGET, prompts: TARGET.prompts.slice(0, 8) }, control = CONTROL.slice(0, 6);
    const r = await study({ template: { hook: 'blocks.3.hook_resid_post', type: 'add', vector, positions }, doses: [0, 4], target, control });
    const h = await byHand('blocks.3.hook_resid_post', 4, target.prompts, ' happy', ' sad', control, positions);
    expect(Math.abs(r.reach[0][1].mean - h.reach)).toBeLessThan(TOL);
    expect(Math.abs(r.kl[0][1] - h.kl)).toBeLessThan(TOL);
    expect(Math.abs(r.deltaLl[0][1] - h.dll)).toBeLessThan(TOL);
    expect(h.kl).toBeGreaterThan(1e-3);
    expect(r.reuse.computed).toBeLessThan(0.75 * r.reuse.full);
  }, 120_000);
});

describe('the operating window', () => {
  const HOOK = 'blocks.3.hook_resid_post';
  const GRID = Array.from({ length: 17 }, (_, i) => i * 0.1875); // 0 … 3
  const R = 1, KL = 0.1, LL = 0.1;

  it('its edges match a brute-force scan over a fine dose grid (longest run of passing doses)', async () => {
    const r = await study({ template: { hook: HOOK, type: 'add', vector }, doses: GRID, target: TARGET, control: CONTROL, budgets: { reach: R, kl: KL, ll: LL } });
    const pass: boolean[] = [];
    for (const alpha of GRID) {
      const h = await byHand(HOOK, alpha, TARGET.prompts, ' happy', ' sad', CONTROL);
      pass.push(h.reach >= R && h.kl <= KL && h.dll >= -LL);
    }
    let best: [number, number] | null = null;
    for (let i = 0; i < GRID.length; i++) {
      for (let j = i; j < GRID.length; j++) {
        if (pass.slice(i, j + 1).every(Boolean) && (!best || j - i > GRID.indexOf(best[1]) - GRID.indexOf(best[0]))) best = [GRID[i], GRID[j]];
      }
    }
    expect(best).not.toBeNull();
    // a window inside the grid: the reach threshold makes its low edge and a side effect its high one
    expect(best![0]).toBeGreaterThan(GRID[0]);
    expect(best![1]).toBeLessThan(GRID[GRID.length - 1]);
    expect(r.window).toEqual([best]);
    expect(r.pass).toEqual([pass]);
  }, 300_000);

  it('an unreachable R gives an empty window, said as null with why each dose fails', async () => {
    const r = await study({ template: { hook: HOOK, type: 'add', vector }, doses: [0, 2, 4], target: TARGET, control: CONTROL.slice(0, 2), budgets: { reach: 100 } });
    expect(r.window).toEqual([null]);
    expect(r.why[0].every((w) => w.some((x) => x.startsWith('reach ') && x.endsWith('< R = 100')))).toBe(true);
  }, 60_000);
});

describe('bad input is refused before any forward pass, saying what and why', () => {
  const base = (): SideEffectsRequest => ({ template: { hook: 'blocks.3.hook_resid_post', type: 'add', vector }, doses: [0, 2], target: TARGET, control: CONTROL.slice(0, 2) });
  const refuses = async (req: SideEffectsRequest, message: RegExp) => {
    const onProgress = vi.fn();
    const run = vi.spyOn(e.model, 'forward');
    await expect(study(req, onProgress)).rejects.toThrow(message);
    expect(onProgress).not.toHaveBeenCalled();
    expect(run).not.toHaveBeenCalled();
    run.mockRestore();
  };

  it('an empty control set', async () => {
    await refuses({ ...base(), control: [] }, /the control set is empty: side effects are read on unrelated text/);
    expect(() => parseControlSet('c.json', '{"texts": []}')).toThrow('c.json: the control set is empty');
    expect(() => parseControlSet('c.json', '{"texts": ["a", ""]}')).toThrow('c.json: text 2 is empty');
  });

  it('doses that are not finite', async () => {
    await refuses({ ...base(), doses: [0, Number.NaN] }, /dose NaN is not a finite number: each dose sets alpha/);
    await refuses({ ...base(), doses: [Number.POSITIVE_INFINITY] }, /dose Infinity is not a finite number/);
    await refuses({ ...base(), doses: [] }, /no doses/);
  });

  it('a negative budget', async () => {
    await refuses({ ...base(), budgets: { kl: -0.1 } }, /the KL budget -0.1 is negative: a budget is the most a side effect may cost/);
    await refuses({ ...base(), budgets: { ll: -1 } }, /the log-likelihood budget -1 is negative/);
  });

  it('an intervention whose hook the model lacks', async () => {
    await refuses({ ...base(), template: { hook: 'blocks.9.hook_resid_post', type: 'add', vector } }, /the intervention: hook "blocks.9.hook_resid_post": layer 9 does not exist \(the model has layers 0..4\)/);
    await refuses({ ...base(), template: { hook: 'blocks.{l}.hook_resid_post', type: 'add', vector }, layers: [2, 7] }, /layer 7 does not exist/);
    await refuses({ ...base(), template: { hook: 'blocks.1.attn.hook_pattern', type: 'add', vector } }, /the intervention: /);
  });

  it('an intervention without a dose to vary', async () => {
    await refuses({ ...base(), template: { hook: 'blocks.3.hook_resid_post', type: 'ablate', mode: 'zero' } }, /a "ablate" intervention has no dose to vary/);
  });
});
