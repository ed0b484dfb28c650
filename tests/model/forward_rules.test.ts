import * as fs from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CpuBackend } from '../../workers/engine/backend/cpu';
import type { ModelFiles } from '../../workers/engine/io/model_files';
import { NodeFiles } from '../../workers/engine/io/node_files';
import type { Intervention } from '../../workers/engine/model/intervention';
import { forwardSpan } from '../../workers/engine/model/span';
import { PrefixCache } from '../../workers/engine/model/kv_prefix';
import { loadTransformer, type LoadProgress } from '../../workers/engine/model/load';
import { RunContext } from '../../workers/engine/model/run_context';
import { contextMessage, Transformer } from '../../workers/engine/model/transformer';
import { F32_TOL, maxDiff, realModel } from '../reference_math';

/**
 * The forward pass's own rules on stories260K (CPU backend), checked against the golden arrays of
 * ../shared/models/stories260K/reference (logits [T, V], resid_post [L, T, D], attn_probs
 * [L, H, T, T]; README there): which logit rows a call returns, the unembedding on its own, the
 * attention scores and pattern hooks, the context bound, the position counter, the KV snapshot
 * bounds; RunContext's capture filter and partial patch sources; forwardSpan's span checks and its
 * split at step-window boundaries; PrefixCache's refusals. Every value is compared with the
 * reference arrays or a closed form, never with another run of the engine.
 */
const m = realModel('stories260K');
const P = m.ref.prompts[0]; // once_upon_a_time: 5 prompt tokens, T = n_positions with the greedy continuation
const arr = m.arrays(P);
const refLogits = arr.get('logits')!.data; // [T, V]
const row = (t: number) => refLogits.subarray(t * m.V, (t + 1) * m.V);
const T = P.n_positions;
const ids = P.sequence_ids.slice(0, T);

let b: CpuBackend;
let model: Transformer;
beforeAll(async () => {
  b = new CpuBackend();
  ({ model } = await loadTransformer(new NodeFiles(m.dir), b, undefined, { contextLength: 16 }));
});
afterAll(() => model.dispose());

const ctxAt = (pos0: number, n: number, capture: string[] = [], ivs: Intervention[] = []) =>
  new RunContext(b, { pos0, n, nPrompt: P.n_prompt, step: 0 }, (h) => capture.includes(h), ivs);

describe('Transformer.forward and unembed', () => {
  it('logit rows: all → [n, V], last → [1, V] (the last position), none → null; each against the reference logits', async () => {
    const n = P.n_prompt;
    const all = model.forward(Int32Array.from(ids.slice(0, n)), ctxAt(0, n), 'all')!;
    expect(all.shape).toEqual([n, m.V]);
    expect(maxDiff(await b.read(all), refLogits.subarray(0, n * m.V))).toBeLessThanOrEqual(F32_TOL);
    b.release(all);
    const last = model.forward(Int32Array.from(ids.slice(0, n)), ctxAt(0, n), 'last')!;
    expect(last.shape).toEqual([1, m.V]);
    expect(maxDiff(await b.read(last), row(n - 1))).toBeLessThanOrEqual(F32_TOL);
    b.release(last);
    const live = b.liveTensors();
    expect(model.forward(Int32Array.from(ids.slice(0, n)), ctxAt(0, n), 'none')).toBeNull();
    expect(b.liveTensors()).toBe(live);
  });

  it('unembed without a run context is lm_head(RMSNorm_f(h)): the reference logits from the reference resid_post of the last block', async () => {
    const D = m.D, L = m.L;
    const h = arr.get('resid_post')!.data.subarray((L - 1) * T * D, L * T * D); // [T, D]
    const x = b.upload(h, [T, D]);
    const logits = model.unembed(x);
    expect(maxDiff(await b.read(logits), refLogits.subarray(0, T * m.V))).toBeLessThanOrEqual(F32_TOL);
    b.release(x); b.release(logits);
  });

  it('hook_attn_scores and hook_pattern: softmax over keys of the scores is the reference attention (masked keys −∞), and the pattern is it', async () => {
    const n = P.n_prompt, l = 2;
    const ctx = ctxAt(0, n, [`blocks.${l}.attn.hook_attn_scores`, `blocks.${l}.attn.hook_pattern`]);
    b.release(model.forward(Int32Array.from(ids.slice(0, n)), ctx, 'last')!);
    const scores = await b.read(ctx.captured.get(`blocks.${l}.attn.hook_attn_scores`)!);
    const pattern = await b.read(ctx.captured.get(`blocks.${l}.attn.hook_pattern`)!);
    expect(scores).toHaveLength(m.H * n * n);
    let worst = 0;
    for (let h = 0; h < m.H; h++) {
      for (let i = 0; i < n; i++) {
        const s = Array.from({ length: i + 1 }, (_, k) => scores[(h * n + i) * n + k]);
        const mx = Math.max(...s), z = s.reduce((acc, x) => acc + Math.exp(x - mx), 0);
        for (let k = 0; k < n; k++) {
          const want = m.attn(arr, P, l, h, i, k);
          const soft = k <= i ? Math.exp(s[k] - mx) / z : 0;
          worst = Math.max(worst, Math.abs(soft - want), Math.abs(pattern[(h * n + i) * n + k] - want));
        }
      }
    }
    expect(worst).toBeLessThanOrEqual(F32_TOL);
    ctx.release();
  });

  it('a call that ends exactly at the working context runs; one position more is refused with the context message', async () => {
    expect(model.contextLength).toBe(16);
    const ctx = ctxAt(15, 1);
    const out = model.forward(Int32Array.from([ids[0]]), ctx, 'last')!;
    b.release(out);
    expect(() => model.forward(Int32Array.from([ids[0], ids[1]]), ctxAt(15, 2), 'last')).toThrow(contextMessage(17, 512, 16));
    expect(() => model.forward(Int32Array.from([ids[0]]), ctxAt(16, 1), 'last')).toThrow('17 tokens are longer than the working context of 16 tokens');
  });

  it('the context messages: the working context when it is the limit, max_position_embeddings otherwise', () => {
    expect(contextMessage(17, 512, 16)).toBe('17 tokens are longer than the working context of 16 tokens (the KV cache this session allocated; the model\'s max_position_embeddings is 512)');
    expect(contextMessage(600, 512, 512)).toBe('600 tokens are longer than the model\'s context of 512 tokens (max_position_embeddings)');
  });

  it('positionsRun grows by the positions of each call; kvVersion changes with every forward and every restore', async () => {
    const before = model.positionsRun, v0 = model.kvVersion;
    b.release(model.forward(Int32Array.from(ids.slice(0, 3)), ctxAt(0, 3), 'last')!);
    expect(model.positionsRun - before).toBe(3);
    const v1 = model.kvVersion;
    expect(v1).not.toBe(v0);
    const snap = model.snapshotKv(3);
    model.restoreKv(snap);
    expect(model.kvVersion).not.toBe(v1);
    expect(model.kvVersion).not.toBe(v0);
    model.releaseKv(snap);
  });

  it('loading reports config, then the checkpoint bytes read (ending at the file size), then upload', async () => {
    const stages: LoadProgress[] = [];
    const b2 = new CpuBackend();
    // a download that reports half the file, then all of it (as HttpFiles does while reading)
    const node = new NodeFiles(m.dir);
    const files: ModelFiles = {
      label: node.label, has: (f) => node.has(f), range: (f, a, z) => node.range(f, a, z), size: (f) => node.size(f),
      bytes: async (f, cb) => { const x = await node.bytes(f); cb?.(x.length >> 1, x.length); cb?.(x.length, x.length); return x; },
    };
    const { model: m2 } = await loadTransformer(files, b2, (p) => stages.push(p), { contextLength: 8 });
    m2.dispose();
    const names = stages.map((p) => p.stage);
    expect(names[0]).toBe('config');
    expect(names[names.length - 1]).toBe('upload');
    const w = stages.filter((p) => p.stage === 'weights');
    expect(w.length).toBeGreaterThan(0);
    expect(names.slice(1, -1).every((n) => n === 'weights')).toBe(true);
    const size = fs.statSync(`${m.dir}/model.safetensors`).size;
    expect(w.every((p) => p.total === size)).toBe(true);
    expect(w.map((p) => p.loaded)).toEqual([size >> 1, size]);
    // without a callback the same reporting download loads all the same (the progress is optional)
    const { model: m3 } = await loadTransformer(files, b2, undefined, { contextLength: 8 });
    expect(m3.contextLength).toBe(8);
    m3.dispose();
  });

  it('a Transformer allocates min(n_ctx, contextLength) KV positions whatever it is asked for; dispose frees its KV cache', () => {
    const live = b.liveTensors();
    const big = new Transformer(b, model.spec, model.weights, 100_000);
    expect(big.contextLength).toBe(512);
    big.dispose();
    const small = new Transformer(b, model.spec, model.weights, 7);
    expect(small.contextLength).toBe(7);
    small.dispose();
    expect(b.liveTensors()).toBe(live);
  });

  it('snapshotKv takes 1..contextLength rows (0, 2.5 and 17 are refused; 1 and 16 taken); releaseKv frees them', () => {
    for (const rows of [0, 2.5, 17]) expect(() => model.snapshotKv(rows)).toThrow(`snapshotKv: ${rows} rows is outside 1..16`);
    const live = b.liveTensors();
    const s = model.snapshotKv(16);
    expect(s.rows).toBe(16);
    expect(s.k[0].shape).toEqual([16, m.KV * m.dHead]);
    model.releaseKv(s);
    const one = model.snapshotKv(1);
    expect(one.v[m.L - 1].shape).toEqual([1, m.KV * m.dHead]);
    model.releaseKv(one);
    expect(b.liveTensors()).toBe(live);
  });
});

describe('RunContext', () => {
  const W = m.D;
  const rows = (n: number, base: number) => Float32Array.from({ length: n * W }, (_, i) => base + i);

  it('captures only the hooks the filter names (a copy), and release frees them', async () => {
    const live = b.liveTensors();
    const ctx = new RunContext(b, { pos0: 0, n: 2, nPrompt: 2, step: 0 }, (h) => h === 'a');
    const ta = b.upload(rows(2, 0), [2, W]), tb = b.upload(rows(2, 5), [2, W]);
    expect(ctx.fire('a', ta)).toBe(ta);
    expect(ctx.fire('b', tb)).toBe(tb);
    expect([...ctx.captured.keys()]).toEqual(['a']);
    expect(await b.read(ctx.captured.get('a')!)).toEqual(rows(2, 0));
    expect([ctx.wants('a'), ctx.wants('b')]).toEqual([true, false]);
    b.release(ta); b.release(tb);
    ctx.release();
    expect(ctx.captured.size).toBe(0);
    expect(b.liveTensors()).toBe(live);
  });

  it('without a filter or interventions nothing is captured or touched', () => {
    const ctx = new RunContext(b, { pos0: 0, n: 1, nPrompt: 1, step: 0 });
    expect([ctx.touches('blocks.0.hook_resid_post'), ctx.wants('blocks.0.hook_resid_post')]).toEqual([false, false]);
    const t = b.upload(rows(1, 0), [1, W]);
    expect(ctx.fire('blocks.0.hook_resid_post', t)).toBe(t);
    expect(ctx.captured.size).toBe(0);
    b.release(t);
  });

  it('touches: a captured hook or one with an intervention active at this step; not one whose step window is elsewhere', () => {
    const at = (hook: string, steps?: { start: number; end: number }): Intervention =>
      ({ hook, positions: 'all', op: { kind: 'add', v: new Float32Array(W), alpha: 1 }, ...(steps ? { steps } : {}) });
    const ctx = new RunContext(b, { pos0: 5, n: 1, nPrompt: 5, step: 1 }, (h) => h === 'c', [at('x'), at('y', { start: 2, end: 4 })]);
    expect(['c', 'x', 'y', 'z'].map((h) => ctx.touches(h))).toEqual([true, true, false, false]);
  });

  it('a patch source shorter than the call: rows past its end stay unpatched; rows inside it are the source rows of the same absolute positions', async () => {
    const src = rows(3, 1000); // positions 0..2
    const patch: Intervention = { hook: 'h', positions: 'all', op: { kind: 'patch', replacement: src } };
    const run = async (pos0: number, n: number) => {
      const ctx = new RunContext(b, { pos0, n, nPrompt: 3, step: 0 }, () => false, [patch]);
      const out = ctx.fire('h', b.upload(rows(n, 0), [n, W]));
      const v = await b.read(out);
      b.release(out);
      return v;
    };
    // positions 2..4: row 0 ← source row 2, rows 1 and 2 unchanged
    const want = rows(3, 0);
    want.set(src.subarray(2 * W, 3 * W), 0);
    expect(await run(2, 3)).toEqual(want);
    // positions 0..2: every row from the source
    expect(await run(0, 3)).toEqual(src);
    // positions 1..2 (inside): rows 1 and 2 of the source
    expect(await run(1, 2)).toEqual(src.subarray(W, 3 * W));
    // positions 4..5 (past the source): unchanged
    expect(await run(4, 2)).toEqual(rows(2, 0));
  });
});

describe('forwardSpan', () => {
  it('refuses spans that are empty, reversed, fractional, negative or past the ids, naming the span', async () => {
    for (const [a, bb] of [[0, 0], [3, 2], [-1, 2], [0.5, 2], [0, 2.5], [0, T + 1]]) {
      await expect(forwardSpan(model, ids, a, bb, { nPrompt: P.n_prompt })).rejects.toThrow(`forwardSpan: positions [${a}, ${bb}) are not a non-empty span of the ${T} ids`);
    }
  });

  it('a span split by a step window (calls [0, 5), [5, 6), [6, 8)): last → the reference row of the last position only, all → every row, none → null', async () => {
    const n = Math.min(T, 8);
    // alpha 0: the intervention changes no value, only the calls the span is split into (step 1 alone)
    const zero: Intervention = { hook: 'blocks.1.hook_resid_post', positions: 'all', steps: { start: 1, end: 2 }, op: { kind: 'add', v: new Float32Array(m.D), alpha: 0 } };
    const opts = { nPrompt: P.n_prompt, interventions: [zero] };
    const live = b.liveTensors();
    const last = await forwardSpan(model, ids, 0, n, { ...opts, logits: 'last' });
    expect(last.logits).toHaveLength(m.V);
    expect(maxDiff(last.logits!, row(n - 1))).toBeLessThanOrEqual(F32_TOL);
    const all = await forwardSpan(model, ids, 0, n, { ...opts, logits: 'all', capture: ['blocks.2.hook_resid_post'] });
    expect(maxDiff(all.logits!, refLogits.subarray(0, n * m.V))).toBeLessThanOrEqual(F32_TOL);
    const resid = all.captured.get('blocks.2.hook_resid_post')!;
    expect(resid).toHaveLength(n * m.D);
    expect(maxDiff(resid, arr.get('resid_post')!.data.subarray(2 * T * m.D, (2 * T + n) * m.D))).toBeLessThanOrEqual(F32_TOL);
    expect((await forwardSpan(model, ids, 0, n, { ...opts, logits: 'none' })).logits).toBeNull();
    expect(b.liveTensors(), 'every call\'s logits, captures and run context released').toBe(live);
  });

  it('non-finite logits are refused with their site, and returned as they are when unchecked', async () => {
    // 3e38 in every dimension of the final norm's output is finite; W_U times it is not
    const boom: Intervention = { hook: 'ln_final.hook_normalized', positions: 'all', op: { kind: 'add', v: new Float32Array(m.D).fill(1), alpha: 3e38 } };
    const opts = { nPrompt: P.n_prompt, interventions: [boom], logits: 'last' as const };
    await expect(forwardSpan(model, ids, 0, 3, opts)).rejects.toThrow('the logits is not finite: the first non-finite value');
    const raw = await forwardSpan(model, ids, 0, 3, { ...opts, unchecked: true });
    expect(raw.logits!.some((x) => !Number.isFinite(x))).toBe(true);
  });

  it('a [head, query, key] capture runs in one call without a split (the reference pattern) and is refused over a split span', async () => {
    const n = P.n_prompt + 2;
    const one = await forwardSpan(model, ids, 0, n, { nPrompt: P.n_prompt, capture: ['blocks.0.attn.hook_pattern'] });
    const pat = one.captured.get('blocks.0.attn.hook_pattern')!;
    expect(pat).toHaveLength(m.H * n * n);
    expect(Math.abs(pat[(3 * n + 4) * n + 2] - m.attn(arr, P, 0, 3, 4, 2))).toBeLessThanOrEqual(F32_TOL);
    const split: Intervention = { hook: 'blocks.1.hook_resid_post', positions: 'all', steps: { start: 1, end: 2 }, op: { kind: 'add', v: new Float32Array(m.D), alpha: 0 } };
    await expect(forwardSpan(model, ids, 0, n, { nPrompt: P.n_prompt, interventions: [split], capture: ['blocks.0.attn.hook_pattern'] }))
      .rejects.toThrow(`blocks.0.attn.hook_pattern is [head, query, key]; capture it over a span that runs in one call (the interventions' step windows split [0, ${n}))`);
  });
});

describe('PrefixCache refusals', () => {
  it('a snapshot holds its copy of the rows until released', async () => {
    const kv = new PrefixCache(model);
    await kv.reference(ids.slice(0, 6), { nPrompt: P.n_prompt, logits: 'none' });
    const live = b.liveTensors();
    const snap = kv.snapshot()!;
    expect(b.liveTensors()).toBeGreaterThan(live);
    kv.release(snap);
    expect(b.liveTensors()).toBe(live);
  });

  const opts = { nPrompt: P.n_prompt };

  it('runFrom before a reference, at a start outside 0..min(T−1, reference length), with other tokens before the start, or another n_prompt', async () => {
    const kv = new PrefixCache(model);
    await expect(kv.runFrom(1, ids, opts)).rejects.toThrow('PrefixCache.runFrom: run the reference first');
    await kv.reference(ids.slice(0, 5), opts);
    for (const p of [-1, 1.5, 6]) await expect(kv.runFrom(p, ids.slice(0, 6), opts)).rejects.toThrow(`PrefixCache.runFrom: start ${p} is outside 0..5`);
    await expect(kv.runFrom(4, ids.slice(0, 4), opts)).rejects.toThrow('PrefixCache.runFrom: start 4 is outside 0..3');
    // past the reference's 5 rows though inside the 7 ids
    await expect(kv.runFrom(6, ids.slice(0, 7), opts)).rejects.toThrow('PrefixCache.runFrom: start 6 is outside 0..5');
    const other = [...ids.slice(0, 6)];
    other[2] = other[2] === 5 ? 6 : 5;
    await expect(kv.runFrom(3, other, opts)).rejects.toThrow('PrefixCache.runFrom: token 2 differs from the reference\'s, so rows before 3 cannot be reused');
    await expect(kv.runFrom(3, ids.slice(0, 6), { nPrompt: 4 })).rejects.toThrow('PrefixCache.runFrom: n_prompt 4 differs from the reference\'s 5 (steps would shift)');
    // start 5 = the reference's length: rows 0..4 reused, position 5 computed (the reference logits of row 5)
    const out = await kv.runFrom(5, ids.slice(0, 6), opts);
    expect(maxDiff(out.logits!, row(5))).toBeLessThanOrEqual(F32_TOL);
  });

  it('extend: refused before any run, after another run wrote the cache, past the last run, or with other tokens before the start', async () => {
    const kv = new PrefixCache(model);
    await expect(kv.extend(1, ids, opts)).rejects.toThrow('PrefixCache.extend: the cache no longer holds the last run (another run wrote it since)');
    await kv.reference(ids.slice(0, 5), opts);
    await expect(kv.extend(6, ids.slice(0, 7), opts)).rejects.toThrow('PrefixCache.extend: position 6 is past the last run\'s 5 positions');
    const other = [...ids.slice(0, 7)];
    other[4] = other[4] === 5 ? 6 : 5;
    await expect(kv.extend(5, other, opts)).rejects.toThrow('PrefixCache.extend: token 4 differs from the last run\'s');
    const out = await kv.extend(5, ids.slice(0, 7), opts);
    expect(maxDiff(out.logits!, row(6))).toBeLessThanOrEqual(F32_TOL);
    // extending from 3 overwrites rows 3.. of the reference: only rows 0..2 still hold it
    const branch = [...ids.slice(0, 3), other[4], other[4]];
    await kv.extend(3, branch, opts);
    expect(kv.validRows).toBe(3);
    await kv.extend(5, [...branch, ids[5]], opts);
    b.release(model.forward(Int32Array.from([ids[0]]), ctxAt(0, 1), 'last')!);
    await expect(kv.extend(6, [...branch, ids[5], ids[6]], opts)).rejects.toThrow('PrefixCache.extend: the cache no longer holds the last run (another run wrote it since)');
  });

  it('snapshot: null when no rows hold the reference; restore refuses a snapshot of another reference', async () => {
    const kv = new PrefixCache(model);
    expect(kv.snapshot()).toBeNull();
    await kv.reference(ids.slice(0, 5), opts);
    const s = kv.snapshot()!;
    expect([s.kv.rows, s.ids]).toEqual([5, ids.slice(0, 5)]);
    const kv2 = new PrefixCache(model);
    const other = [...ids.slice(0, 5)];
    other[1] = other[1] === 5 ? 6 : 5;
    await kv2.reference(other, opts);
    expect(() => kv2.restore(s)).toThrow('PrefixCache.restore: the snapshot belongs to another reference');
    // runFrom(3) leaves rows 0..2 of the reference; restoring the snapshot makes all 5 valid again
    await kv.runFrom(3, ids.slice(0, 5), opts);
    expect(kv.validRows).toBe(3);
    const s3 = kv.snapshot()!;
    expect([s3.kv.rows, s3.ids]).toEqual([3, ids.slice(0, 3)]);
    kv.release(s3);
    kv.restore(s);
    expect(kv.validRows).toBe(5);
    // the restored rows are the last run: extend continues from them
    const out = await kv.extend(5, ids.slice(0, 6), opts);
    expect(maxDiff(out.logits!, row(5))).toBeLessThanOrEqual(F32_TOL);
    kv.release(s);
  });

  it('advance: runs from the first position it cannot reuse (capped at the valid rows, the first differing token, T − 1 when logits or captures are asked), and nothing when neither is', async () => {
    const kv = new PrefixCache(model);
    await expect(kv.advance(0, [], opts)).rejects.toThrow('PrefixCache.advance: no ids to run');
    const first = await kv.advance(3, ids.slice(0, 5), opts); // no rows valid yet: from 0
    expect(first.from).toBe(0);
    expect(maxDiff(first.logits!, row(4))).toBeLessThanOrEqual(F32_TOL);
    const same = await kv.advance(9, ids.slice(0, 5), opts); // all 5 rows valid, logits asked: from 4
    expect(same.from).toBe(4);
    expect(maxDiff(same.logits!, row(4))).toBeLessThanOrEqual(F32_TOL);
    const none = await kv.advance(9, ids.slice(0, 5), { ...opts, logits: 'none' }); // nothing to compute
    expect([none.from, none.logits, none.captured.size]).toEqual([5, null, 0]);
    // a capture without logits still runs the last position: h^0_4 against the reference resid_post
    const cap = await kv.advance(9, ids.slice(0, 5), { ...opts, logits: 'none', capture: ['blocks.0.hook_resid_post'] });
    expect([cap.from, cap.logits]).toEqual([4, null]);
    expect(maxDiff(cap.captured.get('blocks.0.hook_resid_post')!, arr.get('resid_post')!.data.subarray(4 * m.D, 5 * m.D))).toBeLessThanOrEqual(F32_TOL);
    const longer = await kv.advance(5, ids.slice(0, 7), opts); // rows 0..4 reused
    expect(longer.from).toBe(5);
    expect(maxDiff(longer.logits!, row(6))).toBeLessThanOrEqual(F32_TOL);
    const other = [...ids.slice(0, 7)];
    other[2] = other[2] === 5 ? 6 : 5;
    expect((await kv.advance(6, other, { ...opts, logits: 'none', capture: ['blocks.0.hook_resid_post'] })).from).toBe(2);
    // after advance, its run is the reference (runFrom) and the last run (extend)
    const ext = await kv.extend(7, [...other, ids[7]], opts);
    expect(ext.logits).toHaveLength(m.V);
    await kv.advance(5, ids.slice(0, 7), { ...opts, logits: 'none' });
    const extra: Intervention = { hook: 'blocks.1.hook_resid_post', positions: [6], op: { kind: 'add', v: new Float32Array(m.D), alpha: 0 } };
    const rf = await kv.runFrom(6, ids.slice(0, 7), { ...opts, interventions: [extra] });
    expect(maxDiff(rf.logits!, row(6))).toBeLessThanOrEqual(F32_TOL);
  });
});
