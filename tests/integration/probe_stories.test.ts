import * as fs from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CpuBackend } from '../../workers/engine/backend/cpu';
import { Engine } from '../../workers/engine/engine';
import { NodeFiles } from '../../workers/engine/io/node_files';
import { probeLayers } from '../../workers/engine/studies/probe';
import { caaVector } from '../../workers/engine/studies/vectors';
import { parseLabelledSet } from '../../workers/engine/io/prompt_set';
import { maxAbsDiff, readReference, sharedPath } from '../shared';
import type { Progress } from '../../workers/engine/progress';

let e: Engine;
beforeAll(async () => {
  e = await Engine.load(new NodeFiles(sharedPath('models', 'stories260K')), new CpuBackend());
}, 120_000);
afterAll(() => e.dispose());

describe('probes on stories260K (public/probes/he_she.json)', () => {
  it('reads every layer at the last token: the embedding row cannot separate (same token), the final layer can', async () => {
    const set = parseLabelledSet('he_she.json', fs.readFileSync('public/probes/he_she.json', 'utf8'));
    const progress: Progress[] = [];
    const r = await probeLayers(e, { ...set }, (p) => progress.push(p));
    expect(r.hooks).toEqual(['blocks.0.hook_resid_pre', ...[0, 1, 2, 3, 4].map((l) => `blocks.${l}.hook_resid_post`)]);
    expect(new Set(r.readTokens)).toEqual(new Set(['n'])); // " The" "n": every prompt ends in the same token
    // Identical features at row 0: every held-out prediction is the same class, so exactly chance.
    expect(r.accuracy[0]).toBe(0.5);
    expect(r.auroc[0]).toBe(0.5);
    expect(r.accuracy[5]).toBeGreaterThanOrEqual(0.9);
    expect(r.firstLayer95).toBe(r.accuracy.findIndex((a) => a >= 0.95 * Math.max(...r.accuracy)));
    for (const c of r.controlAccuracy) expect(Math.abs(c - 0.5)).toBeLessThan(0.2);
    expect(progress.at(-1)).toEqual({ done: 48 + 6, total: 48 + 6 });
    // Row l + 1's direction is the CAA vector of the two sets at blocks.l.hook_resid_post.
    const caa = await caaVector(e, { positive: set.positive, negative: set.negative, hook: 'blocks.2.hook_resid_post' });
    expect(maxAbsDiff(r.directions[3], caa.vector)).toBeLessThan(1e-5);
  });

  it('reads an explicit position (negative from the end) and refuses one outside a prompt', async () => {
    const r = await probeLayers(e, { positive: ['Tom ran.', 'Ben sat.'], negative: ['Lily ran.', 'Sue sat.'], position: 1, folds: 2 });
    expect(r.readPositions).toEqual([1, 1, 1, 1]);
    await expect(probeLayers(e, { positive: ['Tom ran.', 'Ben sat.'], negative: ['Lily ran.', 'Sue sat.'], position: -40 })).rejects.toThrow(/position -40 is outside the \d+ tokens of “Tom ran\.”/);
  });

  it('stops when cancelled', async () => {
    const ctrl = new AbortController();
    const run = probeLayers(e, { positive: ['a b', 'c d', 'e f'], negative: ['g h', 'i j', 'k l'] }, (p) => { if (p.done === 2) ctrl.abort(); }, ctrl.signal);
    await expect(run).rejects.toThrow(/abort/i);
  });

  it('reads the golden residual stream: each row’s direction is the difference of class means of the reference arrays at the read position', async () => {
    // The three reference prompts (5, 21 and 6 tokens); position −2 reads token T − 2 of each. A prompt may sit in both sets.
    const ref = JSON.parse(fs.readFileSync(sharedPath('models/stories260K/reference/reference.json'), 'utf8')) as { prompts: { name: string; prompt: string; n_positions: number }[] };
    const by = (name: string) => ref.prompts.find((p) => p.name === name)!;
    const pos = [by('once_upon_a_time'), by('cat_was_very')], neg = [by('lily_tom_ball'), by('once_upon_a_time')];
    const r = await probeLayers(e, { positive: pos.map((p) => p.prompt), negative: neg.map((p) => p.prompt), position: -2, classes: ['a', 'b'], seed: 4, l2: 0.5 });
    expect(r.readPositions).toEqual([3, 4, 19, 3]);
    expect(r.readTokens).toEqual([3, 4, 19, 3].map((t, i) => e.tokenStrings(e.encodePrompt({ prompt: [...pos, ...neg][i].prompt }))[t]));
    expect([r.classes, r.nPositive, r.nNegative, r.position, r.seed, r.l2, r.folds]).toEqual([['a', 'b'], 2, 2, -2, 4, 0.5, 2]);
    const D = 64;
    const row = (p: { name: string; n_positions: number }, l: number, t: number) => {
      const a = readReference(sharedPath(`models/stories260K/reference/${p.name}.safetensors`));
      return l === 0 ? a.get('embeddings')!.data.subarray(t * D, (t + 1) * D) : a.get('resid_post')!.data.subarray(((l - 1) * p.n_positions + t) * D, ((l - 1) * p.n_positions + t + 1) * D);
    };
    for (let l = 0; l <= 5; l++) {
      const want = Array.from({ length: D }, (_, j) => (row(pos[0], l, 3)[j] + row(pos[1], l, 4)[j]) / 2 - (row(neg[0], l, 19)[j] + row(neg[1], l, 3)[j]) / 2);
      expect(maxAbsDiff(r.directions[l], want)).toBeLessThan(1e-4);
    }
  });

  it('positions at the ends of a prompt: T − 1 and 1 − T are read, T, −T − 1 and 1.5 are refused, and 0 = −T (BOS in every prompt: classes indistinguishable, issue 28) too; defaults echoed', async () => {
    const set = { positive: ['Tom ran.', 'Ben sat.'], negative: ['Sam sat.', 'Mom ran.'] };
    const T = e.encodePrompt({ prompt: 'Tom ran.' }).length;
    expect(set.positive.concat(set.negative).map((p) => e.encodePrompt({ prompt: p }).length)).toEqual([T, T, T, T]);
    const last = await probeLayers(e, { ...set, position: T - 1 });
    expect(last.readPositions).toEqual([T - 1, T - 1, T - 1, T - 1]);
    expect([last.classes, last.seed, last.l2, last.position]).toEqual([['negative', 'positive'], 0, 1, T - 1]);
    expect((await probeLayers(e, { ...set })).directions).toEqual(last.directions); // 'last' is T − 1
    expect((await probeLayers(e, { ...set, position: 1 - T })).readPositions).toEqual([1, 1, 1, 1]);
    await expect(probeLayers(e, { ...set, position: -T })).rejects.toThrow('the two classes are indistinguishable');
    await expect(probeLayers(e, { ...set, position: 0 })).rejects.toThrow('the two classes are indistinguishable');
    await expect(probeLayers(e, { ...set, position: T })).rejects.toThrow(`probe position ${T} is outside the ${T} tokens of “Tom ran.”`);
    await expect(probeLayers(e, { ...set, position: -T - 1 })).rejects.toThrow(`probe position ${-T - 1} is outside the ${T} tokens of “Tom ran.”`);
    await expect(probeLayers(e, { ...set, position: 1.5 })).rejects.toThrow("probe position 1.5 is not 'last' or an integer token index");
    await expect(probeLayers(e, { positive: ['Tom ran.'], negative: set.negative })).rejects.toThrow('a probe needs at least 2 prompts in each set for cross-validation (got 1 positive, 2 negative)');
  });
});
