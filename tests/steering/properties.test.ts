import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CpuBackend } from '../../workers/engine/backend/cpu';
import { Engine } from '../../workers/engine/engine';
import { hookInfo, hookNames } from '../../workers/engine/model/hooks';
import { NodeFiles } from '../../workers/engine/io/node_files';
import { seededRandom } from '../../workers/engine/analysis/sampling';
import type { Intervention } from '../../workers/engine/model/intervention';
import { RunContext } from '../../workers/engine/model/run_context';
import { parseSpec, toIntervention, type RunShape } from '../../workers/engine/steering/spec';
import { sharedPath } from '../shared';

/**
 * Properties of the steering ops as the forward pass applies them at a hook of a real model
 * (stories260K, CPU backend), each checked on the value captured at that hook (capture sees the
 * intervened value): DESIGN.md §2 Interventions.
 */
const PROMPT = 'Once upon a time, there was a little girl named Lily. She loved to play';
let e: Engine;
let ids: number[];
beforeAll(async () => {
  e = await Engine.load(new NodeFiles(sharedPath('models', 'stories260K')), new CpuBackend());
  ids = e.encodePrompt({ prompt: PROMPT });
});
afterAll(() => e.dispose());

const dot = (a: ArrayLike<number>, b: ArrayLike<number>) => { let s = 0; for (let i = 0; i < a.length; i++) s += a[i] * b[i]; return s; };
const norm = (a: ArrayLike<number>) => Math.sqrt(dot(a, a));
const cos = (a: ArrayLike<number>, b: ArrayLike<number>) => dot(a, b) / (norm(a) * norm(b));
function randomVector(n: number, seed: number, scale = 1): number[] {
  const r = seededRandom(seed);
  return Array.from({ length: n }, () => (2 * r() - 1) * scale);
}
const rowsOf = (flat: Float32Array, w: number) => Array.from({ length: flat.length / w }, (_, t) => flat.subarray(t * w, (t + 1) * w));

/** Interventions from JSON specs (the runner/UI path). */
function ivs(specs: object[], run: RunShape = { nPrompt: ids.length }): Intervention[] {
  return specs.map((s) => toIntervention(parseSpec(JSON.parse(JSON.stringify(s))), e.spec, run));
}

/** The hook's value [T, width] without and with the intervention (captured after it acts). */
async function atHook(spec: { hook: string; [key: string]: unknown }): Promise<{ before: Float32Array; after: Float32Array; width: number }> {
  const before = (await e.run(ids, { capture: [spec.hook] })).captured.get(spec.hook)!;
  const after = (await e.run(ids, { capture: [spec.hook], interventions: ivs([spec]) })).captured.get(spec.hook)!;
  return { before, after, width: before.length / ids.length };
}

describe('row ops at a hook of stories260K', () => {
  const hook = 'blocks.2.hook_resid_post';
  const v = randomVector(64, 1);

  it('rotate with t = 1 keeps ‖h‖ (1e-5 relative) and lands on the target direction (cosine ≥ 1 − 1e-5)', async () => {
    const { before, after, width } = await atHook({ hook, type: 'rotate', vector: v, t: 1 });
    rowsOf(before, width).forEach((h, t) => {
      const h2 = rowsOf(after, width)[t];
      expect(Math.abs(norm(h2) - norm(h))).toBeLessThanOrEqual(1e-5 * norm(h));
      expect(cos(h2, v)).toBeGreaterThanOrEqual(1 - 1e-5);
    });
  });

  it('rotate by θ moves ĥ by exactly θ along the great circle toward v̂, keeping ‖h‖', async () => {
    const theta = 0.3;
    const { before, after, width } = await atHook({ hook, type: 'rotate', vector: v, theta });
    rowsOf(before, width).forEach((h, t) => {
      const h2 = rowsOf(after, width)[t];
      expect(Math.abs(norm(h2) - norm(h))).toBeLessThanOrEqual(1e-5 * norm(h));
      expect(Math.abs(Math.acos(cos(h, h2)) - theta)).toBeLessThanOrEqual(1e-3);
      expect(Math.abs(Math.acos(cos(h2, v)) - (Math.acos(cos(h, v)) - theta))).toBeLessThanOrEqual(1e-3);
    });
  });

  it('add_norm_preserving keeps ‖h‖ and points along h + αv', async () => {
    const alpha = 5;
    const { before, after, width } = await atHook({ hook, type: 'add_norm_preserving', vector: v, alpha });
    rowsOf(before, width).forEach((h, t) => {
      const h2 = rowsOf(after, width)[t];
      expect(Math.abs(norm(h2) - norm(h))).toBeLessThanOrEqual(1e-5 * norm(h));
      expect(cos(h2, Array.from(h, (x, i) => x + alpha * v[i]))).toBeGreaterThanOrEqual(1 - 1e-6);
    });
  });

  it('ablate project leaves no component along v (|h·v̂| ≤ 1e-5·‖h‖) and keeps the orthogonal part', async () => {
    const { before, after, width } = await atHook({ hook, type: 'ablate', mode: 'project', vector: v });
    const vn = norm(v);
    rowsOf(before, width).forEach((h, t) => {
      const h2 = rowsOf(after, width)[t];
      expect(Math.abs(dot(h2, v) / vn)).toBeLessThanOrEqual(1e-5 * norm(h));
      const c = dot(h, v) / (vn * vn);
      h2.forEach((x, i) => expect(Math.abs(x - (h[i] - c * v[i]))).toBeLessThanOrEqual(1e-5));
    });
  });

  it('ablate zero sets h to 0 and ablate mean sets h to the mean vector, only at the selected positions', async () => {
    const zero = await atHook({ hook, type: 'ablate', mode: 'zero', positions: [2, 5] });
    const mean = await atHook({ hook, type: 'ablate', mode: 'mean', vector: v, positions: { start: 3, end: 6 } });
    rowsOf(zero.after, 64).forEach((row, t) => expect(Array.from(row)).toEqual(t === 2 || t === 5 ? new Array(64).fill(0) : Array.from(rowsOf(zero.before, 64)[t])));
    rowsOf(mean.after, 64).forEach((row, t) => expect(Array.from(row)).toEqual(t >= 3 && t < 6 ? Array.from(Float32Array.from(v)) : Array.from(rowsOf(mean.before, 64)[t])));
  });

  it('per-head rotate at attn.hook_z acts on that head only: its d_head slice keeps its norm and reaches v; other heads are bit-identical', async () => {
    const head = 3, dHead = e.spec.dHead;
    const vh = randomVector(dHead, 2);
    const { before, after, width } = await atHook({ hook: 'blocks.1.attn.hook_z', type: 'rotate', vector: vh, t: 1, head });
    rowsOf(before, width).forEach((h, t) => {
      const h2 = rowsOf(after, width)[t];
      for (let c = 0; c < width; c++) if (Math.floor(c / dHead) !== head) expect(h2[c]).toBe(h[c]);
      const s = h.subarray(head * dHead, (head + 1) * dHead), s2 = h2.subarray(head * dHead, (head + 1) * dHead);
      expect(Math.abs(norm(s2) - norm(s))).toBeLessThanOrEqual(1e-5 * norm(s));
      expect(cos(s2, vh)).toBeGreaterThanOrEqual(1 - 1e-5);
    });
  });
});

describe('identities', () => {
  it('a zero dose (add α=0, add_norm_preserving α=0, rotate θ=0, rotate t=0) leaves the logits bit-exact', async () => {
    const v = randomVector(64, 3, 4);
    const base = (await e.run(ids)).logits;
    for (const spec of [
      { type: 'add', alpha: 0 }, { type: 'add_norm_preserving', alpha: 0 }, { type: 'rotate', theta: 0 }, { type: 'rotate', t: 0 },
    ]) {
      const { logits } = await e.run(ids, { interventions: ivs([{ hook: 'blocks.2.hook_resid_post', vector: v, ...spec }]) });
      expect(logits, JSON.stringify(spec)).toEqual(base);
    }
    // The same vector at a nonzero dose does change them.
    const steered = (await e.run(ids, { interventions: ivs([{ hook: 'blocks.2.hook_resid_post', type: 'add', vector: v, alpha: 1 }]) })).logits;
    expect(steered).not.toEqual(base);
  });

  it('patching every steerable hook of a run with its own cached values changes nothing (bit-exact logits)', async () => {
    const steerable = hookNames(e.spec).filter((h) => hookInfo(h)!.steerable);
    expect(steerable.length).toBeGreaterThan(5 * e.spec.nLayers);
    const clean = await e.run(ids, { capture: steerable });
    const patches = steerable.map((hook) => {
      const flat = clean.captured.get(hook)!;
      return { hook, type: 'patch', vector: rowsOf(flat, flat.length / ids.length).map((r) => Array.from(r)) };
    });
    const { logits } = await e.run(ids, { interventions: ivs(patches) });
    expect(logits).toEqual(clean.logits);
  });

  it('patching the last block\'s resid_post from a corrupted run of equal length gives exactly the corrupted logits', async () => {
    const hook = `blocks.${e.spec.nLayers - 1}.hook_resid_post`;
    const corrupt = [...ids];
    corrupt[5] = (corrupt[5] + 7) % e.spec.dVocab;
    const c = await e.run(corrupt, { capture: [hook] });
    const rows = rowsOf(c.captured.get(hook)!, 64).map((r) => Array.from(r));
    const clean = (await e.run(ids)).logits;
    const patched = (await e.run(ids, { interventions: ivs([{ hook, type: 'patch', vector: rows }]) })).logits;
    expect(patched).toEqual(c.logits);
    expect(patched).not.toEqual(clean);
  });
});

describe('generation step windows and the KV cache', () => {
  const K = 4, N = 10; // intervention active from step K; N new tokens
  const specs = (start: number) => [
    { hook: 'blocks.1.hook_resid_post', type: 'add', vector: randomVector(64, 4, 3), alpha: 2, steps: { start } },
    { hook: 'blocks.0.attn.hook_k', type: 'add', vector: randomVector(32, 5, 2), alpha: 1, steps: { start } },
    { hook: 'blocks.2.attn.hook_v', type: 'add', vector: randomVector(32, 6, 2), alpha: 1, steps: { start } },
  ];
  const kvHooks = () => Array.from({ length: e.spec.nLayers }, (_, l) => [`blocks.${l}.attn.hook_k`, `blocks.${l}.attn.hook_v`]).flat();

  /**
   * Greedy decoding as Engine.generate does it (step 0 = the prompt pass; step s reads token s−1 at
   * position T+s−1), recording each step's logits and the keys/values it writes into the cache.
   */
  async function decode(interventions: Intervention[]) {
    const T = ids.length, want = new Set(kvHooks());
    const out: number[] = [], logits: Float32Array[] = [], writes: Map<string, Float32Array>[] = [];
    let input = Int32Array.from(ids), pos0 = 0;
    for (let step = 0; step < N; step++) {
      const ctx = new RunContext(e.backend, { pos0, n: input.length, nPrompt: T, step }, (h) => want.has(h), interventions);
      const t = e.model.forward(input, ctx, 'last')!;
      const row = await e.backend.read(t);
      e.backend.release(t);
      const w = new Map<string, Float32Array>();
      for (const [h, x] of ctx.captured) w.set(h, await e.backend.read(x));
      ctx.release();
      logits.push(row); writes.push(w);
      let best = 0;
      for (let i = 1; i < row.length; i++) if (row[i] > row[best]) best = i;
      out.push(best);
      pos0 += input.length;
      input = Int32Array.of(best);
    }
    return { ids: out, logits, writes };
  }

  /**
   * Reads the cache rows of positions < T+K−1 at every layer through the model: re-runs the
   * unsteered tokens of positions T+K−1.. in one pass on top of the cache left by `run`. Its logits
   * equal the unsteered ones only if those cache rows are the unsteered keys and values.
   */
  async function rewind(unsteeredIds: number[]): Promise<Float32Array> {
    const T = ids.length, p0 = T + K - 1;
    const input = Int32Array.from(unsteeredIds.slice(K - 1, N - 1));
    const ctx = new RunContext(e.backend, { pos0: p0, n: input.length, nPrompt: T, step: K });
    const t = e.model.forward(input, ctx, 'all')!;
    const out = await e.backend.read(t);
    e.backend.release(t);
    return out;
  }

  it(`steps before ${K} give the unsteered tokens and logits bit-exactly; the keys/values written before step ${K} are unchanged and stay so in the cache`, async () => {
    const run: RunShape = { nPrompt: ids.length, maxNewTokens: N };
    const plain = await decode([]);
    const steered = await decode(ivs(specs(K), run));
    const reread = await rewind(plain.ids);
    for (let s = 0; s < K; s++) {
      expect(steered.ids[s]).toBe(plain.ids[s]);
      expect(steered.logits[s]).toEqual(plain.logits[s]);
      for (const h of kvHooks()) expect(steered.writes[s].get(h), `${h} at step ${s}`).toEqual(plain.writes[s].get(h));
    }
    // The window is not vacuous: step K's logits and the keys it writes change.
    expect(steered.logits[K]).not.toEqual(plain.logits[K]);
    expect(steered.writes[K].get('blocks.0.attn.hook_k')).not.toEqual(plain.writes[K].get('blocks.0.attn.hook_k'));
    // Cache rows < T+K−1 after the steered run: re-running the unsteered tail on top of them
    // reproduces the unsteered step logits K..N−1.
    const V = e.spec.dVocab;
    for (let s = K; s < N; s++) {
      const row = reread.subarray((s - K) * V, (s - K + 1) * V);
      let d = 0;
      for (let i = 0; i < V; i++) d = Math.max(d, Math.abs(row[i] - plain.logits[s][i]));
      expect(d).toBeLessThanOrEqual(1e-5);
    }
  });

  it('the cache re-read detects steered rows: after steering from step 1 it no longer matches', async () => {
    const plain = await decode([]);
    await decode(ivs(specs(1), { nPrompt: ids.length, maxNewTokens: N }));
    const reread = await rewind(plain.ids);
    const V = e.spec.dVocab;
    let d = 0;
    for (let i = 0; i < V; i++) d = Math.max(d, Math.abs(reread[i] - plain.logits[K][i]));
    expect(d).toBeGreaterThan(1e-2);
  });

  it(`Engine.generate with a window from step ${K}: same tokens, margins and log-probs as unsteered before it`, async () => {
    const req = { prompt: PROMPT, good: { text: ' Lily' }, bad: { text: ' Tom' }, maxNewTokens: N, stopAtEos: false };
    const events: { plain: number[][]; steered: number[][] } = { plain: [], steered: [] };
    const plain = await e.generate(req, (ev) => events.plain.push([ev.id, ev.margin, ev.logProb]));
    const steered = await e.generate({ ...req, interventions: ivs(specs(K), { nPrompt: ids.length, maxNewTokens: N }) }, (ev) => events.steered.push([ev.id, ev.margin, ev.logProb]));
    expect(steered.ids.slice(0, K)).toEqual(plain.ids.slice(0, K));
    expect(events.steered.slice(0, K)).toEqual(events.plain.slice(0, K));
    expect(events.steered.slice(K)).not.toEqual(events.plain.slice(K));
  });
});
