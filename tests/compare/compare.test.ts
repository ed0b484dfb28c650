import * as fs from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CpuBackend } from '../../workers/engine/backend/cpu';
import { Engine } from '../../workers/engine/engine';
import { NodeFiles } from '../../workers/engine/io/node_files';
import { compareModels, sideBySide, steeringTransfer, transferIntervention, weightDiff, type ModelComparison } from '../../workers/engine/studies/compare';
import { crossPatch } from '../../workers/engine/studies/cross_patch';
import { ModelMismatchError } from '../../workers/engine/studies/compare_check';
import { sharedPath } from '../shared';
import type { Progress } from '../../workers/engine/progress';

/**
 * Model comparison (DESIGN.md §3 "Model comparison") on the base / fine-tune pair of
 * ../shared/models/README.md: stories260K-happy-ft is stories260K with only block 3's MLP changed,
 * so everything upstream of that MLP must compare equal (exactly), and everything that localises the
 * change must point at it.
 */
const ft = JSON.parse(fs.readFileSync(sharedPath('models', 'stories260K-happy-ft', 'finetune.json'), 'utf8')) as { held_out_contexts: string[]; layer: number; target: string; foil: string };
const PROMPT = ft.held_out_contexts.find((p) => p === 'Lucy got a new ball. She was very')!;
const FUT = { good: { text: ft.target }, bad: { text: ft.foil } };
const L = 5, CHANGED = ft.layer; // 3
let a: Engine, b: Engine;
let cmp: ModelComparison;
const progress: Progress[] = [];

beforeAll(async () => {
  a = await Engine.load(new NodeFiles(sharedPath('models', 'stories260K')), new CpuBackend());
  b = await Engine.load(new NodeFiles(sharedPath('models', 'stories260K-happy-ft')), new CpuBackend());
  cmp = await compareModels(a, b, { prompt: PROMPT, ...FUT, positions: true }, (p) => progress.push(p));
});
afterAll(() => { a.dispose(); b.dispose(); });

describe('weight diff', () => {
  it('is exactly 0 for every module except block 3\'s gate, up and down, which moved', () => {
    const w = cmp.weights;
    expect([...w.modules.keys()]).toEqual(['attn_norm', 'q', 'k', 'v', 'o', 'mlp_norm', 'gate', 'up', 'down']);
    for (const [m, v] of w.modules) {
      for (let l = 0; l < L; l++) {
        if (l === CHANGED && ['gate', 'up', 'down'].includes(m)) {
          expect(v[l], `${m}[${l}]`).toBeGreaterThan(0.01);
          expect(v[l]).toBeLessThan(1);
        } else expect(v[l], `${m}[${l}]`).toBe(0);
      }
    }
    expect(Object.fromEntries(w.globals)).toEqual({ embed: 0, unembed: 0, final_norm: 0 });
  });
});

describe('side by side', () => {
  it('lens rows embed…L2 are identical in A and B (difference exactly 0) and differ from L3 on', () => {
    const { a: A, b: B, aligned } = cmp.sides;
    const T = A.ids.length;
    expect(cmp.sides.mismatch).toEqual([]);
    for (let row = 0; row <= CHANGED; row++) { // rows 0 (embeddings) … 3 (after block 2)
      for (let t = 0; t < T; t++) {
        expect(aligned!.lensMarginDiff[row * T + t]).toBe(0);
        expect(B.lensMargin[row * T + t]).toBe(A.lensMargin[row * T + t]);
        expect(aligned!.residRelDiff[row * T + t]).toBe(0);
        expect(aligned!.residCosine[row * T + t]).toBe(1);
      }
    }
    for (let row = CHANGED + 1; row <= L; row++) {
      expect(Math.max(...aligned!.lensMarginDiff.subarray(row * T, (row + 1) * T).map(Math.abs)), `row ${row}`).toBeGreaterThan(0);
      expect(Math.max(...aligned!.residRelDiff.subarray(row * T, (row + 1) * T))).toBeGreaterThan(0);
    }
    // B − A at the last position of the final row is the fine-tune's gain (margin 8.12 vs 0.71, finetune.json's check)
    expect(B.finalMargin[T - 1]).toBeCloseTo(8.122578, 4);
    expect(aligned!.lensMarginDiff[L * T + T - 1]).toBeCloseTo(B.finalMargin[T - 1] - A.finalMargin[T - 1], 5);
  });

  it('sink divergence is exactly 0 in layers 0–3 (attention runs before block 3\'s MLP) and not in layer 4; each model keeps its sink rate', () => {
    const { aligned, a: A, b: B } = cmp.sides;
    const H = 8;
    for (let l = 0; l <= CHANGED; l++) {
      for (let h = 0; h < H; h++) {
        expect(aligned!.sinkDAlpha0[l * H + h]).toBe(0);
        expect(aligned!.sinkJs[l * H + h]).toBe(0);
      }
      expect(B.sinks.sinkRate[l]).toBe(A.sinks.sinkRate[l]);
    }
    expect(Math.max(...aligned!.sinkJs.subarray(4 * H, 5 * H))).toBeGreaterThan(0);
    expect(A.sinks.sinkRate).toHaveLength(L);
  });
});

describe('cross-model patching', () => {
  it('B\'s mlp_out of block 3 patched into A at every position recovers 1; every patch upstream of block 3\'s MLP recovers 0', () => {
    const cp = cmp.crossPatch;
    expect(Math.abs(cp.get('mlp_out')!.layerRecovery[CHANGED] - 1)).toBeLessThanOrEqual(1e-5);
    expect(Math.abs(cp.get('resid_pre')!.layerRecovery[CHANGED + 1] - 1)).toBeLessThanOrEqual(1e-5);
    for (let l = 0; l <= CHANGED; l++) {
      expect(Math.abs(cp.get('resid_pre')!.layerRecovery[l])).toBeLessThanOrEqual(1e-6);
      expect(Math.abs(cp.get('attn_out')!.layerRecovery[l])).toBeLessThanOrEqual(1e-6);
      if (l < CHANGED) expect(Math.abs(cp.get('mlp_out')!.layerRecovery[l])).toBeLessThanOrEqual(1e-6);
      const z = cp.get('z')!;
      for (let h = 0; h < 8; h++) expect(Math.abs(z.recovery[l * 8 + h])).toBeLessThanOrEqual(1e-6);
      // per (layer, position): the same upstream zeros
      for (const hook of ['resid_pre', 'attn_out'] as const) {
        const g = cp.get(hook)!;
        for (let t = 0; t < g.nCols; t++) expect(Math.abs(g.recovery[l * g.nCols + t])).toBeLessThanOrEqual(1e-6);
      }
    }
    // the margins of the patching runs are A's and B's (not swapped)
    const T = cmp.sides.a.ids.length;
    expect(cp.get('mlp_out')!.marginA).toBeCloseTo(cmp.sides.a.finalMargin[T - 1], 4);
    expect(cp.get('mlp_out')!.marginB).toBeCloseTo(cmp.sides.b.finalMargin[T - 1], 4);
    expect(cmp.denominator.small).toBe(false);
  });

  it('the reverse (A into B) reads 0 at block 3\'s MLP and 1 upstream, with the same formula', () => {
    const rv = cmp.crossPatchReverse;
    expect(rv.get('mlp_out')!.direction).toBe('a_into_b');
    expect(Math.abs(rv.get('mlp_out')!.layerRecovery[CHANGED])).toBeLessThanOrEqual(1e-5);
    for (let l = 0; l < CHANGED; l++) expect(Math.abs(rv.get('mlp_out')!.layerRecovery[l] - 1)).toBeLessThanOrEqual(1e-6);
    for (let l = 0; l <= CHANGED; l++) expect(Math.abs(rv.get('resid_pre')!.layerRecovery[l] - 1)).toBeLessThanOrEqual(1e-6);
  });

  it('equals an independent computation on a second prompt: B\'s activation captured by Engine.run and patched into A by hand', async () => {
    const prompt = ft.held_out_contexts.find((p) => p === 'One day, Sue broke the cup. She felt so')!;
    const ids = a.encodePrompt({ prompt });
    const T = ids.length;
    const good = a.resolveFuture(ids, FUT.good, { prompt }).firstIds, bad = a.resolveFuture(ids, FUT.bad, { prompt }).firstIds;
    const lsm = (row: Float32Array) => { const m = Math.max(...row); const z = Math.log(row.reduce((s, x) => s + Math.exp(x - m), 0)) + m; return (i: number) => row[i] - z; };
    const marginOf = (row: Float32Array) => { const lp = lsm(row); return lp(good[0]) - lp(bad[0]); };
    const mA = marginOf((await a.run(ids, { logits: 'last' })).logits), mB = marginOf((await b.run(ids, { logits: 'last' })).logits);
    const byHand = async (run: Engine, src: Engine, hook: string, positions: 'all' | number[], head?: number) => {
      const v = (await src.run(ids, { capture: [hook], logits: 'last' })).captured.get(hook)!;
      const iv = { hook, op: { kind: 'patch' as const, replacement: v }, positions, ...(head !== undefined ? { groups: { size: 8, indices: [head] } } : {}) };
      return marginOf((await run.run(ids, { interventions: [iv], logits: 'last' })).logits);
    };
    const r = (m: number) => (m - mA) / (mB - mA);
    for (const [hook, name] of [['resid_pre', 'hook_resid_pre'], ['attn_out', 'hook_attn_out'], ['mlp_out', 'hook_mlp_out']] as const) {
      const g = await crossPatch(a, b, { prompt, ...FUT, hook });
      expect(g.marginA).toBeCloseTo(mA, 5);
      expect(g.marginB).toBeCloseTo(mB, 5);
      for (let l = 0; l < L; l++) expect(g.layerRecovery[l], `${hook} ${l}`).toBeCloseTo(r(await byHand(a, b, `blocks.${l}.${name}`, 'all')), 5);
      for (const t of [0, T - 3, T - 1]) expect(g.recovery[4 * T + t], `${hook} 4 ${t}`).toBeCloseTo(r(await byHand(a, b, `blocks.4.${name}`, [t])), 5);
    }
    const z = await crossPatch(a, b, { prompt, ...FUT, hook: 'z' });
    for (let h = 0; h < 8; h++) expect(z.recovery[4 * 8 + h]).toBeCloseTo(r(await byHand(a, b, 'blocks.4.attn.hook_z', 'all', h)), 5);
    const rev = await crossPatch(a, b, { prompt, ...FUT, hook: 'attn_out', direction: 'a_into_b' });
    for (let l = 0; l < L; l++) expect(rev.layerRecovery[l]).toBeCloseTo(r(await byHand(b, a, `blocks.${l}.hook_attn_out`, 'all')), 5);
    // the prefix-reuse loop skips the upstream cells and still equals the naive loop
    const naive = await crossPatch(a, b, { prompt, ...FUT, hook: 'mlp_out', reuse: false });
    const fast = await crossPatch(a, b, { prompt, ...FUT, hook: 'mlp_out' });
    expect(fast.patchedMargin).toEqual(naive.patchedMargin);
    expect(fast.cellsSkipped).toBeGreaterThan(0);
    expect(fast.positionsComputed).toBeLessThan(naive.positionsComputed);
  });

  it('reports progress to the total and stops on cancel', async () => {
    expect(progress.at(-1)!.done).toBe(progress.at(-1)!.total);
    expect(progress.every((p, i) => i === 0 || p.done >= progress[i - 1].done)).toBe(true);
    const ac = new AbortController();
    await expect(compareModels(a, b, { prompt: PROMPT, ...FUT, hooks: ['resid_pre'] }, (p) => { if (p.done >= 3) ac.abort(new Error('cancelled by test')); }, ac.signal)).rejects.toThrow('cancelled by test');
  });
});

describe('steering transfer', () => {
  it('CAA vectors of one set built on both are the same up to block 3 (cosine 1) and turn after its MLP; a vector of A steers B as an intervention', async () => {
    const set = { positive: ['Lily was very happy.', 'Tom felt so happy.'], negative: ['Lily was very sad.', 'Tom felt so sad.'] };
    const st = await steeringTransfer(a, b, set);
    expect(st.layers).toEqual([0, 1, 2, 3, 4]);
    for (let l = 0; l < CHANGED; l++) {
      expect(st.vectorsB[l].vector).toEqual(st.vectorsA[l].vector);
      expect(st.cosine[l]).toBeCloseTo(1, 6);
    }
    expect(st.vectorsB[CHANGED].vector).not.toEqual(st.vectorsA[CHANGED].vector);
    const iv = transferIntervention(st.vectorsA[1], b, 4);
    const steered = await b.analyse({ prompt: PROMPT, ...FUT, interventions: [iv] });
    const own = await b.analyse({ prompt: PROMPT, ...FUT, interventions: [transferIntervention(st.vectorsB[1], b, 4)] });
    expect(steered.finalMargin).toEqual(own.finalMargin);
  });
});

describe('mismatched pairs', () => {
  let dreams: Engine, llama: Engine, gpt2: Engine;
  beforeAll(async () => {
    dreams = await Engine.load(new NodeFiles(sharedPath('models', 'aidreams260K')), new CpuBackend());
    llama = await Engine.load(new NodeFiles(sharedPath('fixtures', 'llama-tiny')), new CpuBackend());
    gpt2 = await Engine.load(new NodeFiles(sharedPath('fixtures', 'gpt2-tiny')), new CpuBackend());
  });
  afterAll(() => { dreams.dispose(); llama.dispose(); gpt2.dispose(); });

  it('stories260K vs aidreams260K: refused for weights and patching, naming the shapes and the tokenizer; the side-by-side lens still comes, per model, labelled', async () => {
    const err = await compareModels(a, dreams, { prompt: PROMPT, ...FUT }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ModelMismatchError);
    const msg = (err as Error).message;
    for (const d of ['n_layers 5 vs 4', 'n_heads 8 vs 4', 'd_head 8 vs 16', 'vocabulary id ']) expect(msg).toContain(d);
    expect(msg).toContain('stories260K');
    expect(msg).toContain('aidreams260K');
    await expect(crossPatch(a, dreams, { prompt: PROMPT, ...FUT, hook: 'mlp_out' })).rejects.toThrow(/n_layers 5 vs 4/);
    await expect(weightDiff(a, dreams)).rejects.toThrow(/d_head 8 vs 16/);
    const s = await sideBySide(a, dreams, { prompt: PROMPT, ...FUT });
    expect(s.aligned).toBeNull();
    expect(s.mismatch.join('; ')).toMatch(/vocabulary id \d+: '.*' vs '.*'/);
    expect(s.labelA).toContain('stories260K');
    expect(s.labelB).toContain('aidreams260K');
    expect(s.a.lensMargin).toHaveLength(6 * s.a.ids.length);
    expect(s.b.lensMargin).toHaveLength(5 * s.b.ids.length);
  });

  it('two fixture architectures (llama vs gpt2, same tokenizer): refused for patching and weights with what differs', async () => {
    const p = { prompt: 'Hello world, this is', good: { text: ' a' }, bad: { text: ' the' } };
    const err = await crossPatch(llama, gpt2, { ...p, hook: 'resid_pre' }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ModelMismatchError);
    expect((err as ModelMismatchError).differences).toContain('architecture (model_type) llama vs gpt2');
    expect((err as Error).message).toMatch(/gated MLP true vs false/);
    expect((err as Error).message).not.toMatch(/vocabulary/);
    await expect(weightDiff(llama, gpt2)).rejects.toThrow(/architecture \(model_type\) llama vs gpt2/);
  });
});
