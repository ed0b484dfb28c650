import { describe, expect, it } from 'vitest';
import { byRecency, noteModelUsed, recentModels, RECENT_KEY } from '../../app/lib/recent_models';

/** A Storage stand-in holding strings in a map. */
function memory(init: Record<string, string> = {}) {
  const m = new Map(Object.entries(init));
  return { getItem: (k: string) => m.get(k) ?? null, setItem: (k: string, v: string) => void m.set(k, v) };
}
const HF = 'https://huggingface.co';
const cached = (repo: string, revision = 'main', endpoint = HF) => ({ endpoint, repo, revision, files: [], totalBytes: 0 });

describe('recently loaded Hub models (the start page offers the last-used cached one first)', () => {
  it('keeps the newest load first, once per model, endpoint and revision defaulted', () => {
    const s = memory();
    noteModelUsed({ repo: 'a/one' }, s);
    noteModelUsed({ repo: 'b/two', revision: 'v2', endpoint: 'https://mirror' }, s);
    noteModelUsed({ repo: 'a/one', revision: 'main' }, s);
    expect(recentModels(s)).toEqual([
      { endpoint: HF, repo: 'a/one', revision: 'main' },
      { endpoint: 'https://mirror', repo: 'b/two', revision: 'v2' },
    ]);
  });

  it('orders cached models by recency and names the last used; never-loaded ones keep their order after', () => {
    const models = [cached('x/never'), cached('a/one'), cached('b/two', 'v2', 'https://mirror'), cached('b/two', 'v2')];
    const recent = [{ endpoint: 'https://mirror', repo: 'b/two', revision: 'v2' }, { endpoint: HF, repo: 'a/one', revision: 'main' }];
    const { ordered, last } = byRecency(models, recent);
    expect(ordered.map((m) => `${m.endpoint} ${m.repo}`)).toEqual([`https://mirror b/two`, `${HF} a/one`, `${HF} x/never`, `${HF} b/two`]);
    expect(last).toBe(models[2]);
    expect(byRecency(models, []).last).toBeNull();
    expect(byRecency([], recent)).toEqual({ ordered: [], last: null });
  });

  it('reads damaged storage as no history', () => {
    expect(recentModels(memory({ [RECENT_KEY]: '{not json' }))).toEqual([]);
    expect(recentModels(memory({ [RECENT_KEY]: '[{"repo": 3}, null, {"endpoint": "e", "repo": "r", "revision": "m"}]' }))).toEqual([{ endpoint: 'e', repo: 'r', revision: 'm' }]);
  });
});
