import * as fs from 'node:fs';
import * as path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CpuBackend } from '../../workers/engine/backend/cpu';
import { Engine } from '../../workers/engine/engine';
import { NodeFiles } from '../../workers/engine/io/node_files';
import { toIntervention } from '../../workers/engine/steering/spec';
import { doseResponse } from '../../workers/engine/studies/sweep';
import { actAdd, caaPosition, caaVector, type CaaVector } from '../../workers/engine/studies/vectors';
import { sharedPath } from '../shared';

/**
 * CAA (Rimsky et al., arXiv 2312.06681) on a real model: a happy-minus-sad vector from the
 * contrastive story openings in public/steering/happy_sad.json steers stories260K's next word
 * after "The little girl felt very" toward " happy", monotonically in α, and changes its story.
 */
const SET = JSON.parse(fs.readFileSync(path.join(__dirname, '..', '..', 'public', 'steering', 'happy_sad.json'), 'utf8')) as {
  positive: string[]; negative: string[]; suggested: { prompt: string; good: string; bad: string };
};
const HOOK = 'blocks.3.hook_resid_post'; // the block before the last of stories260K's five
const DOSES = [-16, -12, -8, -4, -2, 0, 2, 4, 8, 12, 16];
let e: Engine;
let v: CaaVector;
beforeAll(async () => {
  e = await Engine.load(new NodeFiles(sharedPath('models', 'stories260K')), new CpuBackend());
  v = await caaVector(e, { positive: SET.positive, negative: SET.negative, hook: HOOK });
});
afterAll(() => e.dispose());

const add = (alpha: number) => toIntervention({ hook: HOOK, type: 'add', vector: v.vector, alpha }, e.spec, { nPrompt: e.encodePrompt(SET.suggested).length, maxNewTokens: 24 });

describe('CAA happy − sad on stories260K', () => {
  it('the contrastive set has 16 pairs and the vector has d_model values and its provenance', () => {
    expect(SET.positive).toHaveLength(16);
    expect(SET.negative).toHaveLength(16);
    expect(v.dModel).toBe(64);
    expect(v.provenance).toMatchObject({ method: 'caa', position: 'last', positive: SET.positive, negative: SET.negative });
  });

  it('for one pair, CAA equals ActAdd at the last token; swapping the sets negates the vector', async () => {
    const one = await caaVector(e, { positive: [SET.positive[0]], negative: [SET.negative[0]], hook: HOOK });
    const act = await actAdd(e, { positive: SET.positive[0], negative: SET.negative[0], hook: HOOK });
    expect(one.vector).toEqual(act.vector);
    const swapped = await caaVector(e, { positive: SET.negative, negative: SET.positive, hook: HOOK });
    swapped.vector.forEach((x, i) => expect(x).toBeCloseTo(-v.vector[i], 6));
    swapped.mean.forEach((x, i) => expect(x).toBeCloseTo(v.mean[i], 6));
  });

  it('a marked answer token is the token the marker stands before', () => {
    const { prompt, index } = caaPosition(e, 'Lily was very *happy today.', { marker: '*' });
    const ids = e.encodePrompt({ prompt });
    expect(prompt).toBe('Lily was very happy today.');
    expect(e.tokenStrings(ids)[index(ids)]).toBe(' happy');
    expect(() => caaPosition(e, 'no marker here', { marker: '*' })).toThrow('mark the answer token with exactly one "*"');
  });

  it(`the final margin of " happy" vs " sad" rises strictly with α over ${DOSES[0]}..${DOSES[DOSES.length - 1]}`, async () => {
    const r = await doseResponse(e, { ...SET.suggested, good: { text: SET.suggested.good }, bad: { text: SET.suggested.bad }, template: { hook: 'blocks.{l}.hook_resid_post', type: 'add', vector: v.vector }, layers: [3], doses: DOSES });
    const table = DOSES.map((d, i) => `α=${d}: Δ ${r.margin[0][i].toFixed(3)}, KL ${r.kl[0][i].toFixed(3)}`).join('\n');
    console.log(`CAA at ${HOOK}, ‖v‖ = ${Math.hypot(...v.vector).toFixed(3)}\n${table}`);
    for (let i = 1; i < DOSES.length; i++) expect(r.margin[0][i]).toBeGreaterThan(r.margin[0][i - 1]);
    // Cross-check two cells against Engine.analyse (logit lens at the final layer, another code path).
    const T = e.encodePrompt(SET.suggested).length;
    const req = { ...SET.suggested, good: { text: SET.suggested.good }, bad: { text: SET.suggested.bad } };
    expect((await e.analyse(req)).finalMargin[T - 1]).toBeCloseTo(r.margin[0][DOSES.indexOf(0)], 5);
    expect((await e.analyse({ ...req, interventions: [add(8)] })).finalMargin[T - 1]).toBeCloseTo(r.margin[0][DOSES.indexOf(8)], 5);
    expect(r.margin[0][0]).toBeLessThan(0);
    expect(r.margin[0][DOSES.length - 1]).toBeGreaterThan(2);
  });

  it('the greedy continuation changes visibly at α = 4', async () => {
    const req = { prompt: SET.suggested.prompt, good: { text: SET.suggested.good }, bad: { text: SET.suggested.bad }, maxNewTokens: 24 };
    const plain = await e.generate(req);
    const steered = await e.generate({ ...req, interventions: [add(4)] });
    console.log(`unsteered: "${plain.text}"\nα = 4:     "${steered.text}"`);
    expect(steered.ids[0]).not.toBe(plain.ids[0]);
    const sharedTokens = steered.ids.filter((id, i) => id === plain.ids[i]).length;
    expect(sharedTokens).toBeLessThan(plain.ids.length / 2);
    expect(steered.margins[0]).toBeGreaterThan(plain.margins[0]);
  });
});
