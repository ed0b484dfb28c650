import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CpuBackend } from '../../workers/engine/backend/cpu';
import { Engine } from '../../workers/engine/engine';
import { NodeFiles } from '../../workers/engine/io/node_files';
import type { Intervention } from '../../workers/engine/model/intervention';
import { firstTouchedPosition, stepOfPosition } from '../../workers/engine/model/span';
import { PrefixCache } from '../../workers/engine/model/kv_prefix';
import { sharedPath } from '../shared';

/**
 * Prefix KV reuse (model/kv_prefix.ts): a run that equals the reference before position p, computed
 * from p on with the reference's cache rows, gives bit for bit the logits of the naive full forward
 * (Engine.run over every position) — whatever order the runs come in, and after other runs have
 * overwritten the cache.
 */
let e: Engine;
const PROMPT = 'Lily and Tom went to the park. Lily gave the ball to';
let ids: number[];
const V = 512;
const vec = (seed: number) => Float32Array.from({ length: 64 }, (_, i) => Math.sin(seed * 7.3 + i * 1.7));
const addAt = (p: number, layer: number): Intervention => ({ hook: `blocks.${layer}.hook_resid_pre`, op: { kind: 'add', v: vec(p + 10 * layer), alpha: 3 }, positions: [p] });

beforeAll(async () => {
  e = await Engine.load(new NodeFiles(sharedPath('models', 'stories260K')), new CpuBackend());
  ids = e.encodePrompt({ prompt: PROMPT });
});
afterAll(() => e.dispose());

async function naive(seq: readonly number[], interventions: Intervention[]): Promise<Float32Array> {
  return (await e.run(seq, { interventions, logits: 'all' })).logits;
}

describe('PrefixCache', () => {
  it('runFrom(p) equals the naive full forward bit for bit at every position ≥ p, in descending, ascending and mixed order', async () => {
    const T = ids.length;
    const base: Intervention[] = [{ hook: 'blocks.1.hook_mlp_out', op: { kind: 'add', v: vec(99), alpha: 0.5 }, positions: 'all' }];
    const kv = new PrefixCache(e.model);
    const ref = await kv.reference(ids, { nPrompt: T, interventions: base, logits: 'all' });
    expect(ref.logits).toEqual(await naive(ids, base));
    const order = [T - 1, 12, 3, 0, 7, 19, 5, T - 2, 0, T - 1];
    const expected = new Map<string, Float32Array>();
    for (const p of new Set(order)) for (const layer of [0, 3]) expected.set(`${p}/${layer}`, await naive(ids, [...base, addAt(p, layer)]));
    for (const p of order) {
      for (const layer of [0, 3]) {
        const iv = addAt(p, layer);
        expect(firstTouchedPosition(iv, T, T)).toBe(p);
        const out = await kv.runFrom(p, ids, { nPrompt: T, interventions: [...base, iv], logits: 'all' });
        expect(out.logits!.length).toBe((T - p) * V);
        expect(out.logits, `p = ${p}, layer ${layer}`).toEqual(expected.get(`${p}/${layer}`)!.subarray(p * V));
        expect(kv.validRows).toBe(p);
      }
    }
    // The patched runs changed something (the check above is not comparing the reference to itself).
    expect(expected.get('0/0')!.subarray((T - 1) * V)).not.toEqual(ref.logits!.subarray((T - 1) * V));
  });

  it('recomputes the prefix after another run overwrote the cache, and restores a snapshot', async () => {
    const T = ids.length;
    const kv = new PrefixCache(e.model);
    await kv.reference(ids, { nPrompt: T, logits: 'none' });
    const snap = kv.snapshot()!;
    expect(snap.kv.rows).toBe(T);
    await e.run(e.encodePrompt({ prompt: 'Once upon a time there was a big dog who liked to run' }), { logits: 'last' });
    expect(kv.validRows).toBe(0);
    const iv = addAt(15, 2);
    const out = await kv.runFrom(15, ids, { nPrompt: T, interventions: [iv], logits: 'last' });
    expect(out.logits).toEqual((await naive(ids, [iv])).subarray((T - 1) * V));
    // After the naive run overwrote the cache, the snapshot puts the reference rows back.
    kv.restore(snap);
    expect(kv.validRows).toBe(T);
    const out2 = await kv.runFrom(T - 1, ids, { nPrompt: T, interventions: [addAt(T - 1, 4)], logits: 'last' });
    expect(out2.logits).toEqual((await naive(ids, [addAt(T - 1, 4)])).subarray((T - 1) * V));
    kv.release(snap);
  });

  it('a different token suffix (a branch) reuses the shared prefix', async () => {
    const T = ids.length;
    const kv = new PrefixCache(e.model);
    await kv.reference(ids, { nPrompt: T });
    const branch = [...ids.slice(0, T - 2), 300, 301];
    const out = await kv.runFrom(T - 2, branch, { nPrompt: T, logits: 'all' });
    expect(out.logits).toEqual((await naive(branch, [])).subarray((T - 2) * V));
  });

  it('refuses runs that do not share the prefix: an intervention before p, other tokens, no reference', async () => {
    const T = ids.length;
    const kv = new PrefixCache(e.model);
    await expect(kv.runFrom(3, ids, { nPrompt: T })).rejects.toThrow('run the reference first');
    await kv.reference(ids, { nPrompt: T });
    await expect(kv.runFrom(5, ids, { nPrompt: T, interventions: [addAt(2, 1)] })).rejects.toThrow('acts on position 2, before the reused prefix ends (5)');
    const other = [...ids];
    other[1] = 400;
    await expect(kv.runFrom(5, other, { nPrompt: T })).rejects.toThrow('token 1 differs');
  });

  it('steps follow positions: 0 in the prompt, t − n_prompt + 1 after it', () => {
    expect([0, 4, 5, 6, 9].map((t) => stepOfPosition(t, 5))).toEqual([0, 0, 1, 2, 5]);
    const iv: Intervention = { hook: 'blocks.0.hook_resid_pre', op: { kind: 'add', v: vec(1), alpha: 1 }, positions: 'all', steps: { start: 3, end: 4 } };
    expect(firstTouchedPosition(iv, 5, 10)).toBe(7);
    expect(firstTouchedPosition(iv, 5, 7)).toBe(Number.POSITIVE_INFINITY);
    expect(firstTouchedPosition({ ...iv, steps: undefined, positions: 'generated' }, 5, 10)).toBe(4);
  });
});
