import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CpuBackend } from '../../workers/engine/backend/cpu';
import { NodeFiles } from '../../workers/engine/io/node_files';
import { loadTransformer } from '../../workers/engine/model/load';
import { describeStorage, loadWithStorage, logitError, measureLogitError, PROBE_MAX_TOKENS, PROBE_TEXT, probeIds } from '../../workers/engine/model/quant_error';
import { RunContext } from '../../workers/engine/model/run_context';
import type { Transformer } from '../../workers/engine/model/transformer';
import { F32_TOL, realModel } from '../reference_math';

/**
 * The storage line and the logit error the model info shows (model/quant_error.ts), on stories260K:
 * the error's three numbers against the golden float32 logits of ../shared/models/stories260K/reference
 * (the engine's float32 logits lie within F32_TOL = 1e-4 of them, reference/README.md), shifted by
 * known amounts so each number has a closed form; loadWithStorage's choices per storage.
 */
const m = realModel('stories260K');
const P = m.ref.prompts.reduce((a, p) => (p.n_positions > a.n_positions ? p : a));
const golden = m.arrays(P).get('logits')!.data; // [T, V]
const seq = P.sequence_ids.slice(0, P.n_positions);
const V = m.V;

const b = new CpuBackend();
let f32: Transformer;
beforeAll(async () => { ({ model: f32 } = await loadTransformer(new NodeFiles(m.dir), b, undefined, { contextLength: 64 })); });
afterAll(() => f32.dispose());

async function logitsOf(model: Transformer, ids: number[]): Promise<Float32Array> {
  const ctx = new RunContext(b, { pos0: 0, n: ids.length, nPrompt: ids.length, step: 0 });
  const t = model.forward(Int32Array.from(ids), ctx, 'all')!;
  const out = await b.read(t);
  b.release(t);
  return out;
}
const maxAbsDiff = (a: ArrayLike<number>, c: ArrayLike<number>, from = 0) => {
  let w = 0;
  for (let i = from; i < a.length; i++) w = Math.max(w, Math.abs(a[i] - c[i]));
  return w;
};

describe('logitError', () => {
  it('max |z − ref| over every position, over the last position only (from its first entry), and max |ref|: reference logits shifted by 1, 0.75 and 0.5', async () => {
    const n = 6, ids = seq.slice(0, n);
    const ref = Float32Array.from(golden.subarray(0, n * V));
    ref[7] += 1; // row 0
    ref[2 * V + 3] -= 0.75; // row 2
    ref[(n - 1) * V] -= 0.5; // the last row's first entry
    let maxRef = 0;
    for (const x of ref) maxRef = Math.max(maxRef, Math.abs(x));
    const e = await logitError(b, f32, ids, ref);
    expect(e.ids).toEqual(ids);
    expect(e.ids).not.toBe(ids);
    expect(Math.abs(e.maxAbs - 1)).toBeLessThanOrEqual(F32_TOL);
    expect(Math.abs(e.lastMaxAbs - 0.5)).toBeLessThanOrEqual(F32_TOL);
    expect(e.maxLogit).toBe(maxRef);
  });
});

describe('describeStorage and loadWithStorage', () => {
  it('the storage sentence of each weight storage', () => {
    expect(describeStorage('f32')).toBe('float32');
    expect(describeStorage('f16')).toBe('binary16 matrices (norms and biases float32)');
    expect(describeStorage('q8_0')).toBe('Q8_0 linear weights (8.5 bits per weight; embeddings, unembedding and norms float32)');
    expect(describeStorage('q4_0')).toBe('Q4_0 linear weights (4.5 bits per weight; embeddings, unembedding and norms float32)');
  });

  it('float32 and f16 loads measure nothing and never tokenise the probe', async () => {
    const asked: string[] = [];
    const encode = (t: string) => { asked.push(t); return seq; };
    const a = await loadWithStorage(new NodeFiles(m.dir), b, encode, undefined, {});
    expect(a.storage).toStrictEqual({ dtype: 'f32', description: 'float32' });
    expect(a.model.spec.dVocab).toBe(V);
    a.model.dispose();
    const h = await loadWithStorage(new NodeFiles(m.dir), b, encode, undefined, { weightDtype: 'f16' });
    expect(h.storage).toStrictEqual({ dtype: 'f16', description: 'binary16 matrices (norms and biases float32)' });
    h.model.dispose();
    expect(asked).toEqual([]);
  });

  it('q8_0 without the measurement says why; with it, the error of the probe (capped at the context) against the float32 reference logits; on demand, the same error after the load', async () => {
    const asked: string[] = [];
    const encode = (t: string) => { asked.push(t); return seq; };
    const off = await loadWithStorage(new NodeFiles(m.dir), b, encode, undefined, { weightDtype: 'q8_0', measureLogitError: false });
    expect(off.storage).toStrictEqual({
      dtype: 'q8_0', description: describeStorage('q8_0'),
      unmeasured: 'the float32 weights would not fit beside the budget, so the logit error was not measured',
    });
    off.model.dispose();
    expect(asked).toEqual([]);

    const n = 4;
    const on = await loadWithStorage(new NodeFiles(m.dir), b, encode, undefined, { weightDtype: 'q8_0', contextLength: n });
    expect(asked).toEqual([PROBE_TEXT]);
    const e = on.storage.logitError!;
    expect(on.storage.unmeasured).toBeUndefined();
    expect(e.ids).toEqual(seq.slice(0, n));
    // the quantised model's logits against the golden float32 rows
    const zq = await logitsOf(on.model, seq.slice(0, n));
    const ref = golden.subarray(0, n * V);
    const want = maxAbsDiff(zq, ref), wantLast = maxAbsDiff(zq, ref, (n - 1) * V);
    expect(want).toBeGreaterThan(10 * F32_TOL); // the weights really were quantised
    expect(Math.abs(e.maxAbs - want)).toBeLessThanOrEqual(F32_TOL);
    expect(Math.abs(e.lastMaxAbs - wantLast)).toBeLessThanOrEqual(F32_TOL);
    expect(Math.abs(e.maxLogit - Math.max(...Array.from(ref, Math.abs)))).toBeLessThanOrEqual(F32_TOL);
    on.model.dispose();

    // 'on-demand': the load measures nothing; measureLogitError afterwards gives the same numbers
    const later = await loadWithStorage(new NodeFiles(m.dir), b, encode, undefined, { weightDtype: 'q8_0', contextLength: n, measureLogitError: 'on-demand' });
    expect(later.storage).toStrictEqual({ dtype: 'q8_0', description: describeStorage('q8_0') });
    expect(asked).toEqual([PROBE_TEXT]);
    expect(probeIds(encode, n)).toEqual(seq.slice(0, n));
    const e2 = await measureLogitError(new NodeFiles(m.dir), b, later.model, seq.slice(0, n));
    expect(Math.abs(e2.maxAbs - want)).toBeLessThanOrEqual(F32_TOL);
    expect(Math.abs(e2.lastMaxAbs - wantLast)).toBeLessThanOrEqual(F32_TOL);
    later.model.dispose();

    // without a context length the probe is its first PROBE_MAX_TOKENS ids
    const whole = await loadWithStorage(new NodeFiles(m.dir), b, () => [...seq, ...seq, ...seq], undefined, { weightDtype: 'q4_0' });
    expect(whole.storage.logitError!.ids).toEqual([...seq, ...seq, ...seq].slice(0, PROBE_MAX_TOKENS));
    whole.model.dispose();
  });
});
