import { describe, expect, it } from 'vitest';
import type { AttentionParams } from '../../workers/engine/backend/backend';
import { CpuBackend } from '../../workers/engine/backend/cpu';
import { attentionCpu } from '../../workers/engine/ops/attention.cpu';
import { seededRandom } from '../../workers/engine/analysis/sampling';

/**
 * The CPU backend's attention with its dot products in WASM SIMD (f64x2 lanes, wasm_gemm.ts
 * attentionDots): bit-identical to the TypeScript loops (ops/attention.cpu.ts, the same float64
 * arithmetic), and equal to softmax(q·kᵀ·scale + mask)·v computed here from the definition.
 */

const rnd = seededRandom(21);
const randn = (len: number) => Float32Array.from({ length: len }, () => rnd() * 2 - 1);

/** z [n, H·d] from the definition: causal (and windowed) softmax attention in float64, GQA by h / (H / KV). */
function attention64(q: Float32Array, k: Float32Array, v: Float32Array, p: AttentionParams): Float64Array {
  const { n, past, nHeads: H, nKvHeads: KV, headDim: d, scale, softcap, window } = p;
  const z = new Float64Array(n * H * d);
  for (let h = 0; h < H; h++) for (let i = 0; i < n; i++) {
    const qi = past + i, kh = Math.floor(h / (H / KV));
    const js = [...Array(qi + 1).keys()].filter((j) => window === 0 || j > qi - window);
    const sc = js.map((j) => {
      let dot = 0;
      for (let e = 0; e < d; e++) dot += q[(i * H + h) * d + e] * k[(j * KV + kh) * d + e];
      return softcap > 0 ? Math.tanh(dot * scale / softcap) * softcap : dot * scale;
    });
    const m = Math.max(...sc), w = sc.map((s) => Math.exp(s - m)), sum = w.reduce((a, b) => a + b, 0);
    js.forEach((j, t) => { for (let e = 0; e < d; e++) z[(i * H + h) * d + e] += (w[t] / sum) * v[(j * KV + kh) * d + e]; });
  }
  return z;
}

/** Indices where a and b differ as bit patterns. */
const bitDiffs = (a: Float32Array, b: Float32Array) => a.reduce((c, x, i) => c + (Object.is(x, b[i]) ? 0 : 1), 0);

describe('CPU attention with WASM SIMD dots', () => {
  // prefill and decode, GQA, a sliding window, Gemma-2 softcap, head dims ≡ 0 and 4 (mod 8), and 6 (TypeScript loops)
  const cases: [string, Partial<AttentionParams>][] = [
    ['prefill, GQA 9/3, d 64', { n: 17, past: 0, nHeads: 9, nKvHeads: 3, headDim: 64 }],
    ['decode at 40, d 64', { n: 1, past: 40, nHeads: 9, nKvHeads: 3, headDim: 64 }],
    ['window 5, softcap 50, d 12', { n: 9, past: 3, nHeads: 4, nKvHeads: 2, headDim: 12, window: 5, softcap: 50 }],
    ['d 6 (not a multiple of 4)', { n: 3, past: 2, nHeads: 2, nKvHeads: 1, headDim: 6 }],
  ];
  it.each(cases)('%s: z bit-identical to the TypeScript loops, within 1e-6 of the float64 definition; pattern and scores too', async (_, c) => {
    const p: AttentionParams = { n: 1, past: 0, nHeads: 1, nKvHeads: 1, headDim: 4, scale: 0, softcap: 0, window: 0, wantPattern: true, wantScores: true, ...c };
    p.scale = 1 / Math.sqrt(p.headDim);
    const T = p.past + p.n, kvW = p.nKvHeads * p.headDim, ctx = T + 5;
    const q = randn(p.n * p.nHeads * p.headDim), k = randn(ctx * kvW), v = randn(ctx * kvW);
    const b = new CpuBackend();
    const r = b.attention(b.upload(q, [p.n, p.nHeads * p.headDim]), b.upload(k, [ctx, kvW]), b.upload(v, [ctx, kvW]), p);
    const [z, pattern, scores] = await Promise.all([r.z, r.pattern!, r.scores!].map((t) => b.read(t)));
    const js = attentionCpu(q, k, v, p);
    expect(bitDiffs(z, js.z)).toBe(0);
    expect(bitDiffs(pattern, js.pattern!)).toBe(0);
    expect(bitDiffs(scores, js.scores!)).toBe(0);
    const want = attention64(q, k, v, p);
    let worst = 0;
    for (let i = 0; i < want.length; i++) worst = Math.max(worst, Math.abs(z[i] - want[i]));
    expect(worst).toBeLessThan(1e-6);
  });
});
