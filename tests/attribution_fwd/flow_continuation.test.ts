import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CpuBackend } from '../../workers/engine/backend/cpu';
import { Engine } from '../../workers/engine/engine';
import { NodeFiles } from '../../workers/engine/io/node_files';
import { flowAttribution } from '../../workers/engine/studies/flow';
import { sharedPath } from '../shared';

/**
 * The flow attribution over a given continuation (a branch of the tree, studies/flow.ts `continuation`):
 * the greedy continuation given as tokens gives exactly what `generated` gives (the same sequence, the
 * same recursion), another continuation gives the decision after those tokens, and bad continuations
 * are refused before anything runs.
 */
let e: Engine;
beforeAll(async () => { e = await Engine.load(new NodeFiles(sharedPath('models', 'stories260K')), new CpuBackend()); }, 120_000);
afterAll(() => e.dispose());
const prompt = 'Lily and Tom went to the park. Lily gave the ball to';

describe('flow over a given continuation', () => {
  it('the greedy tokens given as the continuation equal --generated; a forced token changes the sequence attributed', async () => {
    const gen = await flowAttribution(e, { prompt, good: { text: ' Tom' }, bad: { text: ' Lily' }, generated: 3, faithfulness: false });
    const P = gen.nPrompt;
    const given = await flowAttribution(e, { prompt, good: { text: ' Tom' }, bad: { text: ' Lily' }, continuation: gen.ids.slice(P), faithfulness: false });
    expect(given.ids).toEqual(gen.ids);
    expect(Array.from(given.attribution)).toEqual(Array.from(gen.attribution));
    expect(given.hops.map((h) => h.position)).toEqual([P + 2, P + 1, P]);
    const forced = [gen.ids[P], 42, gen.ids[P + 2]];
    const other = await flowAttribution(e, { prompt, good: { text: ' Tom' }, bad: { text: ' Lily' }, continuation: forced, faithfulness: false });
    expect(other.ids.slice(P)).toEqual(forced);
    expect(Math.abs(other.attribution.reduce((a, b) => a + b, 0) + other.bias - other.frozenMargin)).toBeLessThan(1e-4);
    expect(Array.from(other.attribution)).not.toEqual(Array.from(gen.attribution));
  }, 120_000);
  it('refuses a continuation with a token outside the vocabulary, or one that disagrees with generated', async () => {
    await expect(flowAttribution(e, { prompt, good: { text: ' Tom' }, bad: { text: ' Lily' }, continuation: [1, 99999] })).rejects.toThrow(/continuation token 99999 is outside the vocabulary/);
    await expect(flowAttribution(e, { prompt, good: { text: ' Tom' }, bad: { text: ' Lily' }, continuation: [5, 6], generated: 3 })).rejects.toThrow(/generated 3 but a continuation of 2 tokens/);
  });
});
