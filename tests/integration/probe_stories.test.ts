import * as fs from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CpuBackend } from '../../workers/engine/backend/cpu';
import { Engine } from '../../workers/engine/engine';
import { NodeFiles } from '../../workers/engine/io/node_files';
import { probeLayers, type ProbeProgress } from '../../workers/engine/analysis/probe';
import { caaVector } from '../../workers/engine/steering/vectors';
import { parseLabelledSet } from '../../workers/engine/io/prompt_set';
import { maxAbsDiff, sharedPath } from '../shared';

let e: Engine;
beforeAll(async () => {
  e = await Engine.load(new NodeFiles(sharedPath('models', 'stories260K')), new CpuBackend());
}, 120_000);
afterAll(() => e.dispose());

describe('probes on stories260K (public/probes/he_she.json)', () => {
  it('reads every layer at the last token: the embedding row cannot separate (same token), the final layer can', async () => {
    const set = parseLabelledSet('he_she.json', fs.readFileSync('public/probes/he_she.json', 'utf8'));
    const progress: ProbeProgress[] = [];
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
});
