import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CpuBackend } from '../../workers/engine/backend/cpu';
import { NodeFiles } from '../../workers/engine/io/node_files';
import { loadTransformer } from '../../workers/engine/model/load';
import type { Transformer } from '../../workers/engine/model/transformer';
import { lensColumnLogits, lensTopK } from '../../workers/engine/model/lens';
import { logSumExp, rowMargin, setMargins } from '../../workers/engine/analysis/margin';
import { residualStats } from '../../workers/engine/analysis/residual';
import { sinkDivergence, sinkStats } from '../../workers/engine/analysis/sinks';
import { F32_TOL, l2, lse, maxDiff, realModel, topK } from '../reference_math';

/**
 * The analysis functions on their own, fed the golden arrays of stories260K (GQA: 8 query heads
 * on 4 KV heads) instead of the engine's forward pass, against the definitions (DESIGN.md §3)
 * computed here. Fast (no forward pass): this is also the test set StrykerJS runs on
 * workers/engine/analysis/ (docs/mutation.md). Engine-level checks: analyse_reference.test.ts.
 */
const m = realModel('stories260K');
const p = m.ref.prompts[1]; // "Lily and Tom went to the park. Lily gave the ball to": 21 tokens
const arr = m.arrays(p);
const T = p.n_prompt;

/** attn_probs of the prompt's positions, per layer [H, T, T] (the engine's hook_pattern layout). */
const patterns = Array.from({ length: m.L }, (_, l) => Float32Array.from({ length: m.H * T * T }, (_, x) => {
  const h = Math.floor(x / (T * T)), i = Math.floor(x / T) % T, k = x % T;
  return m.attn(arr, p, l, h, i, k);
}));
/** hook_v per layer [T, KV·d_head], W_v · RMSNorm(h^l) from the reference residuals. */
const values = Array.from({ length: m.L }, (_, l) => {
  const out = new Float32Array(T * m.KV * m.dHead);
  for (let t = 0; t < T; t++) out.set(m.value(arr, p, l, t), t * m.KV * m.dHead);
  return out;
});
/** α^{l,h}_k from the definition: mean over queries i ≥ k of A[i,k]. */
function alphaOf(pat: Float32Array[], n: number): Float64Array {
  const alpha = new Float64Array(m.L * m.H * n);
  for (let l = 0; l < m.L; l++) for (let h = 0; h < m.H; h++) for (let k = 0; k < n; k++) {
    let s = 0;
    for (let i = k; i < n; i++) s += pat[l][(h * n + i) * n + k];
    alpha[(l * m.H + h) * n + k] = s / (n - k);
  }
  return alpha;
}

// Every call of the code under test happens inside a test (never while collecting): StrykerJS
// then knows which tests cover each mutant instead of rerunning all of them ("static" mutants).
const alpha = alphaOf(patterns, T);
describe('sinkStats on the reference attention of stories260K', () => {
  const stats = () => sinkStats(patterns, values, m.H, m.KV, m.dHead, T, 0.25);

  it('α_k for every layer, head and key position, and α_0', () => {
    const s = stats();
    expect(maxDiff(s.alpha, alpha)).toBeLessThanOrEqual(1e-6);
    expect(maxDiff(s.alpha0, Array.from({ length: m.L * m.H }, (_, x) => alpha[x * T]))).toBeLessThanOrEqual(1e-6);
  });

  it('sink rate: the fraction of heads with α_0 > ε, at the ε asked for (0.25 here), which it reports', () => {
    const s = stats();
    expect(s.eps).toBe(0.25);
    for (let l = 0; l < m.L; l++) {
      const heads = Array.from({ length: m.H }, (_, h) => alpha[(l * m.H + h) * T]);
      expect(s.sinkRate[l]).toBeCloseTo(heads.filter((a) => a > 0.25).length / m.H, 6);
    }
    const strict = sinkStats(patterns, values, m.H, m.KV, m.dHead, T, 1);
    expect(Array.from(strict.sinkRate)).toEqual(new Array(m.L).fill(0)); // α_0 ≤ 1: no head passes ε = 1
    expect(sinkStats(patterns, values, m.H, m.KV, m.dHead, T).eps).toBe(0.3); // the default ε (Gu et al. 2024)
  });

  it('sink position: the key with the most total mass Σ_{i≥k} A[i,k]; its value norm from KV head h // 2', () => {
    const s = stats();
    const posSeen = new Set<number>();
    for (let l = 0; l < m.L; l++) for (let h = 0; h < m.H; h++) {
      const mass = Array.from({ length: T }, (_, k) => alpha[(l * m.H + h) * T + k] * (T - k));
      const pos = mass.indexOf(Math.max(...mass));
      posSeen.add(pos);
      expect(s.sinkPos[l * m.H + h]).toBe(pos);
      const kv = Math.floor(h / 2);
      expect(Math.abs(s.sinkValueNorm[l * m.H + h] - l2(values[l].subarray(pos * m.KV * m.dHead + kv * m.dHead, pos * m.KV * m.dHead + (kv + 1) * m.dHead)))).toBeLessThanOrEqual(1e-5);
    }
    expect(posSeen.size).toBeGreaterThan(1); // not every head sinks on BOS: the positions are informative
  });

  it('sink divergence: Δα_0 = α_0(b) − α_0(a) and JS(α_a/Σα_a ‖ α_b/Σα_b) in nats; 0 against itself', () => {
    // b: the same heads with the attention of layer l taken from layer (l + 1) mod L (same shapes, other values).
    const shifted = patterns.map((_, l) => patterns[(l + 1) % m.L]);
    const b = sinkStats(shifted, values, m.H, m.KV, m.dHead, T);
    const a = sinkStats(patterns, values, m.H, m.KV, m.dHead, T);
    const d = sinkDivergence(a, b, T);
    const alphaB = alphaOf(shifted, T);
    for (let x = 0; x < m.L * m.H; x++) {
      const pa = Array.from(alpha.subarray(x * T, (x + 1) * T)), pb = Array.from(alphaB.subarray(x * T, (x + 1) * T));
      const sa = pa.reduce((u, v) => u + v), sb = pb.reduce((u, v) => u + v);
      let js = 0;
      for (let k = 0; k < T; k++) {
        const P = pa[k] / sa, Q = pb[k] / sb, M = (P + Q) / 2;
        if (P > 0) js += 0.5 * P * Math.log(P / M);
        if (Q > 0) js += 0.5 * Q * Math.log(Q / M);
      }
      expect(Math.abs(d.js[x] - js)).toBeLessThanOrEqual(1e-6);
      expect(d.dAlpha0[x]).toBeCloseTo(pb[0] - pa[0], 6);
    }
    expect(Math.max(...d.js)).toBeGreaterThan(0.01);
    const self = sinkDivergence(a, a, T);
    expect(Math.max(...self.js.map(Math.abs), ...self.dAlpha0.map(Math.abs))).toBeLessThanOrEqual(1e-7);
  });

  it('ties and the threshold: the earliest key wins a tie of total mass; α_0 = ε exactly is not a sink (α_0 > ε)', () => {
    // T = 2, one head, one KV head: A = [[1, 0], [0, 1]] gives both keys mass 1; α_0 = 1/2.
    const eye = [Float32Array.from([1, 0, 0, 1])];
    const v = [Float32Array.from([3, 4])]; // d_head 1 per position: ‖v_0‖ = 3, ‖v_1‖ = 4
    const st = sinkStats(eye, v, 1, 1, 1, 2, 0.5);
    expect(st.sinkPos[0]).toBe(0);
    expect(st.sinkValueNorm[0]).toBe(3);
    expect(st.sinkRate[0]).toBe(0);
    expect(sinkStats(eye, v, 1, 1, 1, 2, 0.49).sinkRate[0]).toBe(1);
  });

  it('a Jensen–Shannon term with a zero-probability key contributes only from the other side', () => {
    // Two heads' α over 3 keys: disjoint support gives the maximum JS divergence ln 2.
    const mk = (alpha: number[]) => ({ alpha: Float32Array.from(alpha), alpha0: Float32Array.of(alpha[0]), sinkRate: new Float32Array(1), sinkPos: new Int32Array(1), sinkValueNorm: new Float32Array(1), eps: 0.3 });
    const d = sinkDivergence(mk([1, 0, 0]), mk([0, 0.5, 0.5]), 3);
    expect(d.js[0]).toBeCloseTo(Math.log(2), 6);
    expect(d.dAlpha0[0]).toBe(-1);
  });
});

describe('residualStats on the reference residual stream', () => {
  const stack = new Float32Array((m.L + 1) * T * m.D);
  for (let l = 0; l <= m.L; l++) for (let t = 0; t < T; t++) stack.set(m.resid(arr, p, l, t), (l * T + t) * m.D);
  const stats = () => residualStats(stack, m.L + 1, T, m.D);

  it('‖h^l_t‖₂ for every layer and position (L2, not RMS)', () => {
    const r = stats();
    const want = Array.from({ length: (m.L + 1) * T }, (_, x) => l2(stack.subarray(x * m.D, (x + 1) * m.D)));
    expect(maxDiff(r.norms, want)).toBeLessThanOrEqual(1e-5);
  });

  it('per layer: the largest |h| with its token and dimension, and max / median |h| (upper median of T·d_model values)', () => {
    const r = stats();
    for (let l = 0; l <= m.L; l++) {
      const mags = Array.from(stack.subarray(l * T * m.D, (l + 1) * T * m.D), Math.abs);
      const best = Math.max(...mags);
      const at = mags.indexOf(best);
      expect(r.massive.value[l]).toBe(Math.fround(best));
      expect([r.massive.token[l], r.massive.dim[l]]).toEqual([Math.floor(at / m.D), at % m.D]);
      const sorted = [...mags].sort((a, b) => a - b);
      expect(r.massive.ratio[l]).toBeCloseTo(best / sorted[Math.floor(sorted.length / 2)], 4);
    }
  });

  it('a layer of zeros has ratio Infinity (median 0), not NaN', () => {
    const z = residualStats(new Float32Array(2 * 3 * 4).fill(0).map((_, i) => (i < 12 ? 0 : i)), 2, 3, 4);
    expect(z.massive.ratio[0]).toBe(Infinity);
    expect(z.massive.value[0]).toBe(0);
    expect([z.massive.token[0], z.massive.dim[0]]).toEqual([0, 0]); // a tie goes to the first (token, dim)
    expect(Array.from(z.norms.subarray(0, 3))).toEqual([0, 0, 0]);
    expect(z.massive.ratio[1]).toBeCloseTo(23 / 18, 6); // values 12..23: max 23, upper median 18
  });
});

describe('margins of token sets', () => {
  it('logSumExp matches the closed form, handles −∞ members and an empty set', () => {
    expect(logSumExp([Math.log(0.2), Math.log(0.3)])).toBeCloseTo(Math.log(0.5), 12);
    expect(logSumExp([-Infinity, Math.log(0.25)])).toBeCloseTo(Math.log(0.25), 12);
    expect(logSumExp([-Infinity, -Infinity])).toBe(-Infinity);
    expect(logSumExp([])).toBe(-Infinity);
    expect(logSumExp([1000, 1000])).toBeCloseTo(1000 + Math.log(2), 9); // no overflow
    expect(logSumExp([1000, 0])).toBeCloseTo(1000, 9); // shifted by the maximum, not by any member
    expect(logSumExp([0, 1000, -1000])).toBeCloseTo(1000, 9);
  });

  it('setMargins and rowMargin on reference lens log-probs: lse(good) − lse(bad) per row', () => {
    const rows = Array.from({ length: 6 }, (_, l) => m.lens(m.resid(arr, p, l, T - 1)));
    const good = [265, 261], bad = [311, 317, 344];
    const cols = [317, 265, 344, 311, 261]; // any order
    const gathered = Float32Array.from(rows.flatMap((lp) => cols.map((c) => lp[c])));
    const want = rows.map((lp) => lse(good.map((i) => lp[i])) - lse(bad.map((i) => lp[i])));
    expect(maxDiff(setMargins(gathered, cols, good, bad), want)).toBeLessThanOrEqual(1e-5);
    rows.forEach((lp, l) => expect(Math.abs(rowMargin(Float32Array.from(lp), good, bad) - want[l])).toBeLessThanOrEqual(1e-5));
  });
});

describe('logit lens on reference residual vectors (stories260K weights)', () => {
  let b: CpuBackend;
  let model: Transformer;
  beforeAll(async () => {
    b = new CpuBackend();
    model = (await loadTransformer(new NodeFiles(m.dir), b)).model;
  });
  afterAll(() => b.dispose());
  const rows = Array.from({ length: (m.L + 1) * T }, (_, x) => m.resid(arr, p, Math.floor(x / T), x % T));

  it('the futures\' columns of W_U · RMSNorm_f(h) differ as the log_softmax log-probs do (the normaliser cancels)', async () => {
    const stack = b.upload(Float32Array.from(rows.flatMap((r) => Array.from(r))), [rows.length, m.D]);
    const cols = [265, 317, 2];
    const t = lensColumnLogits(model, stack, cols);
    const g = await b.read(t);
    b.release(t); b.release(stack);
    rows.forEach((h, x) => {
      const lp = m.lens(h);
      expect(maxDiff([g[x * 3] - g[x * 3 + 1], g[x * 3] - g[x * 3 + 2]], [lp[265] - lp[317], lp[265] - lp[2]])).toBeLessThanOrEqual(F32_TOL);
    });
  });

  it('top-k log-probs on demand (log_softmax of W_U · RMSNorm_f(h), whole vocabulary)', async () => {
    const tops = await lensTopK(model, Float32Array.from(rows.flatMap((r) => Array.from(r))), 4);
    rows.forEach((h, x) => {
      const lp = m.lens(h);
      const want = topK(lp, 4);
      expect(maxDiff(tops[x].logProbs, want.values)).toBeLessThanOrEqual(F32_TOL);
      Array.from(tops[x].ids).forEach((id, j) => expect(Math.abs(lp[id] - want.values[j])).toBeLessThanOrEqual(F32_TOL));
    });
  });
});
