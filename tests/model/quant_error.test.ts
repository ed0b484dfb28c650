import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { hfToGguf, type GgufTensorType } from '../../tools/gguf_write';
import { CpuBackend } from '../../workers/engine/backend/cpu';
import { NodeFiles } from '../../workers/engine/io/node_files';
import { loadTransformer } from '../../workers/engine/model/load';
import { describeStorage, float32ProbeFits, float32ProbeLogits, loadWithStorage, logitError, measureLogitError, PROBE_MAX_TOKENS, PROBE_TEXT, probeIds } from '../../workers/engine/model/quant_error';
import { RunContext } from '../../workers/engine/model/run_context';
import type { Transformer } from '../../workers/engine/model/transformer';
import { ggufFolder } from '../corpus/gguf_bytes';
import { memory } from '../hardening/model_variants';
import { F32_TOL, realModel } from '../reference_math';

/**
 * The storage line and the logit error the model info shows (model/quant_error.ts), on stories260K:
 * the error's three numbers against the golden float32 logits of ../shared/models/stories260K/reference
 * (the engine's float32 logits lie within F32_TOL = 1e-4 of them, reference/README.md), shifted by
 * known amounts so each number has a closed form; loadWithStorage's choices per storage, also for
 * GGUF files (tools/gguf_write.ts); what the float32 probe frees; whether the probe fits a device
 * (model/estimate.ts's terms written out for stories260K).
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

/** stories260K as model.gguf with its linear weights stored as `type` (tools/gguf_write.ts), and its GGUF tensor count. */
function gguf(type: GgufTensorType) {
  const bytes = hfToGguf(m.dir, type);
  const files = ggufFolder();
  files.set('model.gguf', bytes);
  // GGUF v3 header: magic, u32 version, u64 tensor count
  return { files: memory(files, 'gguf'), nTensors: Number(new DataView(bytes.buffer, bytes.byteOffset).getBigUint64(8, true)) };
}

describe('loadWithStorage on a GGUF folder', () => {
  // stories260K: L = 5 blocks of 7 matrices (q, k, v, o, gate, up, down); a matrix is block-quantised
  // by the writer when its input width is a multiple of the 32-weight block: d_model 64 yes
  // (six of them), intermediate_size 172 no (ffn_down stays F32); norms and token_embd stay F32.
  const L = m.L;
  const never = () => { throw new Error('the probe was tokenised'); };

  it('Q8_0 / Q4_0 files: the storage is the file\'s quantised type, the tensors per type, and why nothing was measured (the probe never runs)', async () => {
    for (const [type, label, asked] of [['q8_0', 'Q8_0', 'f32'], ['q8_0', 'Q8_0', 'q8_0'], ['q4_0', 'Q4_0', 'q8_0']] as const) {
      const g = gguf(type);
      const r = await loadWithStorage(g.files, b, never, undefined, { weightDtype: asked });
      expect(r.storage).toStrictEqual({
        dtype: type,
        description: `GGUF tensors F32 ×${g.nTensors - 6 * L}, ${label} ×${6 * L} (quantised matrices kept as stored; a quantised token_embd widened to float32)`,
        unmeasured: 'the GGUF file holds quantised weights: there are no float32 weights to compare with',
      });
      r.model.dispose();
    }
  });

  it('an F16 or F32 file keeps the storage asked for and names it, with no "kept as stored"; quantised on load, it says why nothing was measured', async () => {
    const h = gguf('f16');
    const r = await loadWithStorage(h.files, b, never, undefined, {});
    // F16: every 2-D weight but the token_embd table (7 per block)
    expect(r.storage).toStrictEqual({ dtype: 'f32', description: `GGUF tensors F32 ×${h.nTensors - 7 * L}, F16 ×${7 * L}` });
    r.model.dispose();
    const f = gguf('f32');
    const r2 = await loadWithStorage(f.files, b, never, undefined, { weightDtype: 'f16' });
    expect(r2.storage).toStrictEqual({ dtype: 'f16', description: `GGUF tensors F32 ×${f.nTensors}, stored as binary16 matrices (norms and biases float32)` });
    r2.model.dispose();
    const r3 = await loadWithStorage(f.files, b, never, undefined, { weightDtype: 'q8_0' });
    expect(r3.storage).toStrictEqual({
      dtype: 'q8_0',
      description: `GGUF tensors F32 ×${f.nTensors}, stored as Q8_0 linear weights (8.5 bits per weight; embeddings, unembedding and norms float32)`,
      unmeasured: 'the logit error is measured on safetensors checkpoints only: a GGUF file is not probed with float32 weights',
    });
    r3.model.dispose();
  });
});

describe('float32ProbeLogits frees what it loaded', () => {
  const ids = seq.slice(0, 4);
  const golden4 = golden.subarray(0, ids.length * V);

  /** Runs `f` recording each CpuBackend disposed and its live tensors at that moment. */
  async function recordingDisposals<T>(f: () => Promise<T>): Promise<{ out: T; disposed: { backend: CpuBackend; live: number }[] }> {
    const disposed: { backend: CpuBackend; live: number }[] = [];
    const original = CpuBackend.prototype.dispose;
    const spy = vi.spyOn(CpuBackend.prototype, 'dispose').mockImplementation(function (this: CpuBackend) {
      disposed.push({ backend: this, live: this.liveTensors() });
      original.call(this);
    });
    try {
      return { out: await f(), disposed };
    } finally {
      spy.mockRestore();
    }
  }

  /** Tensors a float32 load of the probe's context holds (weights and K, V per block), counted on a fresh backend. */
  async function loadedTensors(): Promise<number> {
    const fresh = new CpuBackend();
    const { model } = await loadTransformer(new NodeFiles(m.dir), fresh, undefined, { weightDtype: 'f32', contextLength: ids.length });
    const n = fresh.liveTensors();
    model.dispose();
    return n;
  }

  it('on the CPU: the float32 model loads into a backend of its own, which is disposed after the pass with the KV cache released', async () => {
    const kept = (await loadedTensors()) - 2 * m.L; // Transformer.dispose releases K and V of every block
    const before = b.liveTensors();
    const { out, disposed } = await recordingDisposals(() => float32ProbeLogits(new NodeFiles(m.dir), b, ids));
    expect(maxAbsDiff(out, golden4)).toBeLessThanOrEqual(F32_TOL);
    expect(disposed).toHaveLength(1);
    expect(disposed[0].backend).not.toBe(b);
    expect(disposed[0].live).toBe(kept); // the model disposed (its KV cache released) before the backend goes
    expect(b.liveTensors()).toBe(before);
  });

  it('on a GPU backend (kind "webgpu"): the model loads into the caller\'s backend, its KV cache and every weight are released, the pool is trimmed and the backend kept', async () => {
    const g = new CpuBackend();
    const kept = g.liveTensors(); // nothing of the float32 model may stay (its weights were left live before)
    Object.defineProperty(g, 'kind', { value: 'webgpu' });
    let trims = 0;
    Object.assign(g, { trimPool: async () => { trims++; } });
    const { out, disposed } = await recordingDisposals(() => float32ProbeLogits(new NodeFiles(m.dir), g, ids));
    expect(maxAbsDiff(out, golden4)).toBeLessThanOrEqual(F32_TOL);
    expect(disposed).toEqual([]);
    expect(g.liveTensors()).toBe(kept);
    expect(trims).toBe(1);
    g.dispose();
  });
});

describe('float32ProbeFits', () => {
  // model/estimate.ts's terms for stories260K with float32 weights and a KV cache of PROBE_MAX_TOKENS = 32
  // positions (n_ctx 512): parameters 2·V·d (the checkpoint stores embed_tokens and lm_head) + L·(2·d·d [q, o] + 2·d·(n_kv·d_head) [k, v] + 3·d·d_mlp + 2·d) + d,
  // 4 bytes each; K and V 2·L·32·n_kv·d_head·4; activations 4·32·(6·d + 3·d_mlp + n_heads·32 + V).
  const d = 64, dMlp = 172, nKv = 4, dHead = 8, nHeads = 8, L = 5, T = PROBE_MAX_TOKENS;
  const params = 2 * V * d + L * (2 * d * d + 2 * d * nKv * dHead + 3 * d * dMlp + 2 * d) + d;
  const need = 4 * params + 2 * L * T * nKv * dHead * 4 + 4 * T * (6 * d + 3 * dMlp + nHeads * T + V);
  const limits = (memoryBudget: number) => ({ maxBufferSize: Infinity, maxStorageBufferBindingSize: Infinity, memoryBudget, device: 'a test device' });

  it('fits exactly when the budget holds the float32 weights, the probe\'s KV cache and its activations', async () => {
    expect(m.V).toBe(512); // the terms above are stories260K's config
    expect(await float32ProbeFits(new NodeFiles(m.dir), limits(need))).toBe(true);
    expect(await float32ProbeFits(new NodeFiles(m.dir), limits(need - 1))).toBe(false);
  });

  it('false when no estimate can be made (a GGUF folder has no config.json)', async () => {
    expect(await float32ProbeFits(gguf('q8_0').files, limits(Infinity))).toBe(false);
  });
});
