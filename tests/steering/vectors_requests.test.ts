import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CpuBackend } from '../../workers/engine/backend/cpu';
import { Engine } from '../../workers/engine/engine';
import { NodeFiles } from '../../workers/engine/io/node_files';
import { actAdd, caaPosition, caaVector } from '../../workers/engine/studies/vectors';
import { F32_TOL, maxDiff, realModel } from '../reference_math';

/**
 * ActAdd (Turner et al., arXiv 2308.10248) and CAA (Rimsky et al., arXiv 2312.06681) requests on
 * stories260K: the provenance a vector records (what vector_io.ts saves with it), the request
 * validation (heads, markers, empty sets) with its messages, and the marked-answer-token position
 * read against the reference residual streams and token ids (../shared/models/stories260K/reference).
 */
const m = realModel('stories260K');
const [A, B, C] = m.ref.prompts; // once_upon_a_time, lily_tom_ball, cat_was_very
const arr = new Map(m.ref.prompts.map((p) => [p.name, m.arrays(p)]));
const h = (p: typeof A, l: number, t: number) => m.resid(arr.get(p.name)!, p, l, t);

/**
 * hook_z of head `head` in block `l` at the prompt's last token, from the reference attention and
 * values: z_h[t] = Σ_k A_h[t, k] · v_{kv(h)}[k] (TransformerLens hook_z; GQA: head h reads KV head
 * ⌊h / (n_heads / n_kv_heads)⌋). [d_head]
 */
function zAtLast(p: typeof A, l: number, head: number): Float64Array {
  const kv = Math.floor(head / (m.H / m.KV));
  const t = p.n_prompt - 1, a = arr.get(p.name)!, out = new Float64Array(m.dHead);
  for (let k = 0; k <= t; k++) {
    const w = m.attn(a, p, l, head, t, k), v = m.value(a, p, l, k);
    for (let d = 0; d < m.dHead; d++) out[d] += w * v[kv * m.dHead + d];
  }
  return out;
}

let e: Engine;
beforeAll(async () => { e = await Engine.load(new NodeFiles(m.dir), new CpuBackend()); });
afterAll(() => e.dispose());

describe('provenance: what a vector says about where it came from', () => {
  it('ActAdd records method, position, the prompt pair, the hook, width and model, and no head key without a head', async () => {
    const v = await actAdd(e, { positive: A.prompt, negative: C.prompt, hook: 'blocks.1.hook_resid_post' });
    expect(v.hook).toBe('blocks.1.hook_resid_post');
    expect(v.dModel).toBe(64);
    expect(v.modelId).toBe(e.label);
    expect(v.provenance).toStrictEqual({ method: 'actadd', position: 'last', positive: [A.prompt], negative: [C.prompt] });
    const mean = await actAdd(e, { positive: A.prompt, negative: C.prompt, hook: 'blocks.1.hook_resid_post', position: 'mean' });
    expect(mean.provenance.position).toBe('mean');
  });

  it('per-head ActAdd records the head and is d_head wide', async () => {
    const v = await actAdd(e, { positive: A.prompt, negative: C.prompt, hook: 'blocks.0.attn.hook_z', head: 0 });
    expect(v.dModel).toBe(8);
    expect(v.vector).toHaveLength(8);
    expect(v.provenance).toStrictEqual({ method: 'actadd', position: 'last', positive: [A.prompt], negative: [C.prompt], head: 0 });
  });

  it('CAA records copies of the text sets (not the caller\'s arrays), the position rule and the head', async () => {
    const positive = [A.prompt, B.prompt], negative = [C.prompt];
    const v = await caaVector(e, { positive, negative, hook: 'blocks.1.attn.hook_v', head: 3, position: 'last' });
    expect(v.provenance).toStrictEqual({ method: 'caa', position: 'last', positive: [A.prompt, B.prompt], negative: [C.prompt], head: 3 });
    expect(v.provenance.positive).not.toBe(positive);
    expect(v.provenance.negative).not.toBe(negative);
    expect([v.dModel, v.vector.length, v.mean.length, v.modelId]).toEqual([8, 8, 8, e.label]);
    const plain = await caaVector(e, { positive: [A.prompt], negative: [C.prompt], hook: 'hook_embed' });
    expect(plain.provenance).toStrictEqual({ method: 'caa', position: 'last', positive: [A.prompt], negative: [C.prompt] });
    expect(plain.hook).toBe('hook_embed');
  });

  it('CAA reports progress after each text: (done, total) over both sets', async () => {
    const calls: [number, number][] = [];
    await caaVector(e, { positive: [A.prompt, B.prompt], negative: [C.prompt], hook: 'hook_embed', onProgress: (p) => calls.push([p.done, p.total]) });
    expect(calls).toEqual([[1, 3], [2, 3], [3, 3]]);
  });
});

describe('CAA at a marked answer token', () => {
  it('"Once upon| a time": the text is encoded without the marker and the row read is the token after it (index 3 of the reference ids)', async () => {
    const pos = caaPosition(e, 'Once upon| a time', { marker: '|' });
    expect(pos.prompt).toBe('Once upon a time');
    expect(e.encodePrompt({ prompt: pos.prompt })).toEqual(A.input_ids);
    expect(pos.index(A.input_ids)).toBe(3);
    expect(caaPosition(e, 'Once upon a time', 'last').index(A.input_ids)).toBe(4);
    expect(caaPosition(e, 'Once upon a time', undefined).index(A.input_ids)).toBe(4);
  });

  it('the CAA vector with a marker is h⁺ at the marked token − h⁻ at its marked token, from the reference streams', async () => {
    // "The cat was" encodes as the reference ids of "The cat was very" but the last: "| very" marks the last token
    expect(e.encodePrompt({ prompt: 'The cat was' })).toEqual(C.input_ids.slice(0, -1));
    const v = await caaVector(e, { positive: ['Once upon| a time'], negative: ['The cat was| very'], hook: 'blocks.2.hook_resid_post', position: { marker: '|' } });
    const want = Array.from(h(A, 3, 3), (x, i) => x - h(C, 3, C.n_prompt - 1)[i]);
    expect(maxDiff(v.vector, want)).toBeLessThanOrEqual(F32_TOL);
    expect(v.provenance.position).toBe('marker:|');
  });

  it('"Onc|e upon a time": a marker inside a word reads the token the answer merged into (the first id where the text leaves the prefix\'s encoding)', () => {
    // The reference ids of "Once upon a time" are [BOS, "Once", " upon", " a", " time"]; "Onc" alone
    // encodes as BOS and pieces of "Once", so the encodings part at index 1, the token holding "e".
    const prefix = e.encodePrompt({ prompt: 'Onc' });
    expect(prefix[0]).toBe(A.input_ids[0]);
    expect(prefix[1]).not.toBe(A.input_ids[1]);
    expect(prefix.length).toBeGreaterThan(2);
    const pos = caaPosition(e, 'Onc|e upon a time', { marker: '|' });
    expect(pos.prompt).toBe(A.prompt);
    expect(pos.index(A.input_ids)).toBe(1);
  });

  it('a marker that is missing, repeated, empty, first or last in the text is refused with the text and the rule', () => {
    const bad = (text: string, marker: string) => () => caaPosition(e, text, { marker });
    expect(bad('Once upon a time', '|')).toThrow('"Once upon a time": mark the answer token with exactly one "|"');
    expect(bad('Once| upon| a time', '|')).toThrow('"Once| upon| a time": mark the answer token with exactly one "|"');
    expect(bad('Once upon a time', '')).toThrow('"Once upon a time": mark the answer token with exactly one ""');
    expect(bad('|Once upon a time', '|')).toThrow('"|Once upon a time": the marker needs text before it and the answer token after it');
    expect(bad('Once upon a time|', '|')).toThrow('"Once upon a time|": the marker needs text before it and the answer token after it');
    expect(bad('Once [A] upon a time', '[A]')().prompt).toBe('Once  upon a time');
  });
});

describe('request validation', () => {
  it('CAA without positive or negative texts is refused before any forward pass', async () => {
    await expect(caaVector(e, { positive: [], negative: [C.prompt], hook: 'hook_embed' })).rejects.toThrow('CAA needs at least one positive and one negative text');
    await expect(caaVector(e, { positive: [A.prompt], negative: [], hook: 'hook_embed' })).rejects.toThrow('CAA needs at least one positive and one negative text');
  });

  it('a head on a residual hook, and a head that is negative, fractional or past the last head, are refused with the range', async () => {
    await expect(actAdd(e, { positive: A.prompt, negative: C.prompt, hook: 'blocks.1.hook_resid_post', head: 0 }))
      .rejects.toThrow('head 0: blocks.1.hook_resid_post is not a per-head hook (attn.hook_q/k/v/z are)');
    for (const head of [-1, 1.5, 8]) {
      await expect(actAdd(e, { positive: A.prompt, negative: C.prompt, hook: 'blocks.1.attn.hook_z', head }))
        .rejects.toThrow(`head ${head} does not exist: blocks.1.attn.hook_z has heads 0..7`);
    }
    // n_kv_heads = 4 at hook_k/v (GQA): head 4 is past the last
    await expect(caaVector(e, { positive: [A.prompt], negative: [C.prompt], hook: 'blocks.1.attn.hook_k', head: 4 }))
      .rejects.toThrow('head 4 does not exist: blocks.1.attn.hook_k has heads 0..3');
  });

  it('the last head is valid, and its slice is the last d_head columns of the hook (reference: z₇ at the last token, differenced)', async () => {
    const l = 1, head = 7;
    const got = await actAdd(e, { positive: A.prompt, negative: C.prompt, hook: `blocks.${l}.attn.hook_z`, head });
    const za = zAtLast(A, l, head), zc = zAtLast(C, l, head);
    expect(maxDiff(got.vector, Array.from(za, (x, d) => x - zc[d]))).toBeLessThanOrEqual(F32_TOL);
  });

  it('CAA at head 5 of hook_z: vector and mean are the per-head means of the reference z₅ at the last token (two positive texts, one negative)', async () => {
    const l = 3, head = 5;
    const [za, zb, zc] = [A, B, C].map((p) => zAtLast(p, l, head));
    const got = await caaVector(e, { positive: [A.prompt, B.prompt], negative: [C.prompt], hook: `blocks.${l}.attn.hook_z`, head });
    expect(maxDiff(got.vector, Array.from(za, (x, d) => (x + zb[d]) / 2 - zc[d]))).toBeLessThanOrEqual(F32_TOL);
    expect(maxDiff(got.mean, Array.from(za, (x, d) => (x + zb[d] + zc[d]) / 3))).toBeLessThanOrEqual(F32_TOL);
  });
});
