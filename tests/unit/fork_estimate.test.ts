import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CpuBackend } from '../../workers/engine/backend/cpu';
import { Engine } from '../../workers/engine/engine';
import { NodeFiles } from '../../workers/engine/io/node_files';
import { BranchExplorer, type BranchTokenEvent } from '../../workers/engine/studies/branching/explorer';
import { forkPoints, type ForkProgress } from '../../workers/engine/studies/branching/forks';
import { pathOf, type TopTokens } from '../../workers/engine/studies/branching/tree';
import { decodeRate, forkSeconds, forkSteps, forkWork, streamedRate, tokensWord } from '../../app/lib/fork_estimate';
import { sharedPath } from '../shared';

/** What Find fork points will cost, said before it runs (lib/fork_estimate.ts), and the time left while it runs. */
const top = (...p: number[]): TopTokens => ({ ids: p.map((_, i) => i), tokens: p.map((_, i) => `t${i}`), logProbs: p.map(Math.log) });

describe('the fork-points estimate', () => {
  // prompt of 2 tokens, 3 new ones (positions 2, 3, 4), end = 5: gaps 0.1, 0.8, 0.0
  const path = [null, top(0.6, 0.3), top(0.5, 0.4), top(0.9, 0.1), top(0.45, 0.45)];

  it('counts (1 + alternatives) × samples continuations per scored position, each running from it to the end', () => {
    // every position: 3 × 2 × 4 continuations; tokens 2·4·(5 − 2) + 2·4·(5 − 3) + 2·4·(5 − 4) = 24 + 16 + 8
    expect(forkWork(path, 2, 5, 4, 1)).toEqual({ positions: 3, continuations: 24, tokens: 48 });
    // near ties only (gap ≤ 0.2): positions 2 and 4
    expect(forkWork(path, 2, 5, 4, 0.2)).toEqual({ positions: 2, continuations: 16, tokens: 32 });
    // a position with a single candidate has no alternative to force
    expect(forkWork([null, null, top(1)], 2, 3, 4, 1)).toEqual({ positions: 1, continuations: 4, tokens: 4 });
  });

  it('seconds come only from a rate measured on the load in use', () => {
    const rate = decodeRate('stories260K · float32 · WebGPU', 2, 100)!;
    expect(rate.secondsPerToken).toBeCloseTo(0.02, 12);
    const work = forkWork(path, 2, 5, 4, 1);
    expect(forkSeconds(work, rate, 'stories260K · float32 · WebGPU')).toBeCloseTo(48 * 0.02, 12);
    expect(forkSeconds(work, rate, 'stories260K · Q8_0 · CPU')).toBeNull();
    expect(forkSeconds(work, null, 'stories260K · float32 · WebGPU')).toBeNull();
    expect(decodeRate('', 2, 100)).toBeNull();
    expect(decodeRate('x', 2, 0)).toBeNull();
  });

  it('a trunk\'s rate is its forwards\' worker seconds, as a continuation decodes: the prompt-pass token (0 s) and the first forward (warm-up) left out', () => {
    // 0: token drawn from the prompt pass; 0.05: first forward; then 0.01, 0.02, 0.03 → 0.06 s over 3 tokens
    expect(streamedRate('id', [0, 0.05, 0.01, 0.02, 0.03])!.secondsPerToken).toBeCloseTo(0.02, 12);
    expect(streamedRate('id', [0, 0.05, 0.01])!.secondsPerToken).toBeCloseTo(0.01, 12);
    expect(streamedRate('id', [0, 0.05])).toBeNull();
    expect(streamedRate('', [0, 0.05, 0.01])).toBeNull();
  });

  it('one unit everywhere: the progress counts continuations, token positions (the bar) and the tokens scored as the estimate names them', () => {
    expect([tokensWord(22, true), tokensWord(1, false), tokensWord(0, true)]).toEqual(['near-tie tokens', 'token', 'near-tie tokens']);
    expect(forkSteps({ done: 24, total: 176, scored: 3, positions: 22, tokens: 1500, tokensTotal: 5608 }, true))
      .toEqual({ done: 24, total: 176, work: { done: 1500, total: 5608 }, note: '3 of 22 near-tie tokens scored' });
  });
});

describe('the estimate counts what forks.ts runs (stories260K)', () => {
  let e: Engine;
  beforeAll(async () => { e = await Engine.load(new NodeFiles(sharedPath('models', 'stories260K')), new CpuBackend()); });
  afterAll(() => e.dispose());

  it('the trunk\'s streamed tokens time each forward a continuation repeats: 0 s for the token drawn from the prompt pass, > 0 for each later one', async () => {
    const events: BranchTokenEvent[] = [];
    await BranchExplorer.start(e, { prompt: 'Once upon a time', good: { text: ' Tom' }, bad: { text: ' Lily' }, maxNewTokens: 6, stopAtEos: false }, { temperature: 0, topK: 0, seed: 0, steered: false }, [], undefined, (ev) => events.push(ev));
    expect(events.map((ev) => ev.seconds > 0)).toEqual([false, true, true, true, true, true]);
    expect(streamedRate('stories260K', events.map((ev) => ev.seconds))!.secondsPerToken).toBeGreaterThan(0);
  });

  it('its continuations equal the measurement\'s progress total, for every position and for the near ties only', async () => {
    const x = await BranchExplorer.start(e, { prompt: 'Once upon a time', good: { text: ' Tom' }, bad: { text: ' Lily' }, maxNewTokens: 5, stopAtEos: false }, { temperature: 0, topK: 0, seed: 0, steered: false });
    const T = x.tree.promptIds.length, end = T + x.tree.maxNewTokens;
    const path = pathOf(x.tree, 0);
    // every position, and the near ties under the median gap (some but not all of them)
    const gaps = path.top.slice(T).map((t) => Math.exp(t!.logProbs[0]) - Math.exp(t!.logProbs[1])).sort((a, b) => a - b);
    for (const maxGap of [1, gaps[Math.floor(gaps.length / 2)]]) {
      const progress: ForkProgress[] = [];
      const r = await forkPoints(x, { samples: 1, maxGap }, [], (p) => progress.push(p)); // to the end of the path, as the app runs it
      const work = forkWork(path.top, T, end, 1, maxGap);
      expect(work.positions).toBeGreaterThan(0);
      expect(progress.at(-1)?.total ?? 0).toBe(work.continuations);
      expect(r.points.filter((p) => Number.isFinite(p.score)).length).toBe(work.positions);
      // the progress counts in the estimate's units: positions to score and token positions through the model
      expect(progress.at(-1)).toEqual({ done: work.continuations, total: work.continuations, scored: work.positions, positions: work.positions, tokens: work.tokens, tokensTotal: work.tokens });
      expect(progress.map((p) => p.scored)).toEqual([...progress.map((p) => p.scored)].sort((a, b) => a - b));
      expect(r.points.filter((p) => p.gap <= r.maxGap).length).toBe(work.positions);
    }
  });
});
