import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CpuBackend } from '../../workers/engine/backend/cpu';
import { Engine } from '../../workers/engine/engine';
import { NodeFiles } from '../../workers/engine/io/node_files';
import { firstTokenWarning, sameFirstTokens, sharedFirstIds, sharedPrefixLength } from '../../workers/engine/analysis/future_overlap';
import { patchingGrid } from '../../workers/engine/studies/patching';
import { sharedPath } from '../shared';
import { runCaptured } from '../model_run';
import { logSoftmax } from '../reference_math';

/**
 * Futures whose first tokens coincide (a trial: " dog" vs " door", both "·do" + …): the first-token
 * margin (DESIGN.md §3) is 0 by definition, so the analysis says why instead of drawing a blank map.
 */
describe('first-token overlap of two futures', () => {
  it('shared ids, same set, and the warning text in closed form', () => {
    expect(sharedFirstIds([5, 3, 9], [9, 1, 3])).toEqual([3, 9]);
    expect(sharedFirstIds([1, 2], [3])).toEqual([]);
    expect(sameFirstTokens([4], [4])).toBe(true);
    expect(sameFirstTokens([4, 7], [7, 4, 4])).toBe(true);
    expect(sameFirstTokens([4, 7], [4])).toBe(false);
    expect(sameFirstTokens([4], [5])).toBe(false);
    const t = (id: number) => ` t${id}`;
    expect(firstTokenWarning([1], [2], t)).toBeNull();
    expect(firstTokenWarning([8], [8], t)).toBe('both futures start with " t8" (id 8): the margin compares first tokens only, so Δ is 0 at every layer and position; the sequence margin still compares the whole futures — or choose futures whose first tokens differ');
    expect(firstTokenWarning([8, 2], [8, 5], t)).toBe('the futures share the first token " t8" (id 8): Δ counts it on both sides, which pulls it toward 0; make the two sets\' first tokens disjoint');
    expect(firstTokenWarning([8, 2, 5], [8, 5], t)).toContain('share the first tokens " t5" (id 5), " t8" (id 8): Δ counts them');
  });

  it('shared prefix of two single-branch futures: stops where they first differ, leaves each a first token, 0 for token sets', () => {
    expect(sharedPrefixLength([[7, 8, 9, 1]], [[7, 8, 2]])).toBe(2);
    expect(sharedPrefixLength([[7, 8, 9]], [[7, 8, 9, 4]])).toBe(2); // one a prefix of the other: each keeps a token
    expect(sharedPrefixLength([[3, 1]], [[4, 1]])).toBe(0);
    expect(sharedPrefixLength([[5]], [[5]])).toBe(0); // single tokens: unchanged
    expect(sharedPrefixLength([[7, 8, 1], [7, 9]], [[7, 8, 2]])).toBe(0); // a token set
  });

  describe('on stories260K', () => {
    let e: Engine;
    beforeAll(async () => {
      e = await Engine.load(new NodeFiles(sharedPath('models', 'stories260K')), new CpuBackend());
    }, 120_000);
    afterAll(() => e.dispose());

    it('" dog" vs " door": the analysis reads the decision point after their shared "·do" (no same-first-token warning, the note names it), its final margin equals a plain forward of prompt + "·do"; its sequence margin is the whole futures\'', async () => {
      const prompt = 'Lily saw a big';
      const ids = e.encodePrompt({ prompt });
      const dog = e.resolveFuture(ids, { text: ' dog' }, { prompt }).sequences[0], door = e.resolveFuture(ids, { text: ' door' }, { prompt }).sequences[0];
      expect(dog[0]).toBe(door[0]);
      expect(dog[1]).not.toBe(door[1]);
      const a = await e.analyse({ prompt, good: { text: ' dog' }, bad: { text: ' door' } });
      expect(a.ids).toEqual([...ids, dog[0]]);
      expect(a.sharedPrefix!.ids).toEqual([dog[0]]);
      expect(a.sharedPrefix!.note).toBe(`decision point after the shared prefix \`${e.tokenStrings([dog[0]], ids)[0]}\`, 1 token`);
      expect(a.warnings ?? []).not.toContainEqual(expect.stringContaining('start with'));
      const V = e.spec.dVocab, T = a.ids.length;
      const { logits } = await runCaptured(e.backend, e.model, a.ids, []);
      const lp = logSoftmax(logits.subarray((T - 1) * V, T * V));
      expect(a.finalMargin[T - 1]).toBeCloseTo(lp[dog[1]] - lp[door[1]], 4);
      expect(Math.abs(a.finalMargin[T - 1])).toBeGreaterThan(1e-3);
      const seq = async (s: number[]) => {
        const r = await runCaptured(e.backend, e.model, [...ids, ...s], []);
        return s.reduce((acc, id, j) => acc + logSoftmax(r.logits.subarray((ids.length - 1 + j) * V, (ids.length + j) * V))[id], 0);
      };
      expect(a.sequenceMargin).toBeCloseTo((await seq(dog)) - (await seq(door)), 4);
    }, 120_000);

    it('token sets whose first tokens coincide are measured as they are: the lens margin is 0 everywhere, the analysis warns and names the token; distinct futures carry no such warning', async () => {
      const prompt = 'Lily saw a big';
      const a = await e.analyse({ prompt, good: { text: ' dog| door' }, bad: { text: ' door' } });
      expect(a.sharedPrefix).toBeNull();
      expect(a.good.firstIds).toEqual(a.bad.firstIds);
      expect([...a.lensMargin].every((d) => d === 0)).toBe(true);
      expect(a.sequenceMargin).not.toBe(0);
      const w = a.warnings!.find((x) => x.startsWith('both futures start with'));
      expect(w).toContain(`(id ${a.good.firstIds[0]})`);
      const other = await e.analyse({ prompt, good: { text: ' dog' }, bad: { text: ' cat' } });
      expect(other.good.firstIds).not.toEqual(other.bad.firstIds);
      expect(other.warnings ?? []).not.toContainEqual(expect.stringContaining('first token'));
    }, 120_000);

    it('a forced prefix is appended to the prompt\'s ids; futures after it must be ids, and its ids must lie in the vocabulary', () => {
      const prompt = 'Lily saw a big';
      const ids = e.encodePrompt({ prompt });
      expect(e.encodePrompt({ prompt, forcedIds: [7, 9] })).toEqual([...ids, 7, 9]);
      expect(() => e.resolveFuture([...ids, 7], { text: ' dog' }, { prompt, forcedIds: [7] }, 'good')).toThrow('the good future follows a forced prefix, so it must be given as token ids');
      expect(() => e.encodePrompt({ prompt, forcedIds: [e.spec.dVocab] })).toThrow(`the forced prefix: token id ${e.spec.dVocab} is outside the vocabulary`);
    });

    it('patching with such futures names them as the cause, not the corruption', async () => {
      await expect(patchingGrid(e, { clean: 'Lily and Tom went to the park. Lily gave the ball to', corrupt: 'Tom and Lily went to the park. Lily gave the ball to', good: { text: ' dog| door' }, bad: { text: ' door' }, hook: 'resid_pre' }))
        .rejects.toThrow('both futures start with the same token');
    }, 120_000);
  });
});
