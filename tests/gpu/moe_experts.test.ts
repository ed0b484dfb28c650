import { describe, expect, it } from 'vitest';
import type { ExpertMlp } from '../../workers/engine/backend/backend';
import { seededRandom } from '../../workers/engine/analysis/sampling';
import { nodeBackend } from './node_webgpu';
import { unavailable } from './lavapipe_suite';

/**
 * The sparse-expert kernels alone (ops/moe_experts.wgsl.ts via Backend.moeExperts) on the Node
 * adapter, against a float64 recomputation here of y[r] = Σ_j w[r, j]·(W_d·(silu(W_g x + b_g)·(W_u x + b_u)) + b_d)
 * for e = indices[r, j]: row widths that are and are not multiples of 4 (the vec4 and scalar reads),
 * biases on every projection, one row (blocks of one pair) and many (blocks of four, an expert
 * chosen by more rows than one block holds, an expert chosen by none). The kernels have no tuning
 * variants (one invocation per output in both).
 */
const why = await unavailable([]);

function reference(x: Float32Array, idx: number[], wts: Float32Array, ex: { g: Float32Array; u: Float32Array; d: Float32Array; bg: Float32Array; bu: Float32Array; bd: Float32Array }[], n: number, d: number, dE: number, k: number): Float64Array {
  const y = new Float64Array(n * d);
  for (let r = 0; r < n; r++) for (let j = 0; j < k; j++) {
    const e = ex[idx[r * k + j]];
    const h = new Float64Array(dE);
    for (let o = 0; o < dE; o++) {
      let g = e.bg[o], u = e.bu[o];
      for (let c = 0; c < d; c++) { g += e.g[o * d + c] * x[r * d + c]; u += e.u[o * d + c] * x[r * d + c]; }
      h[o] = (g / (1 + Math.exp(-g))) * u;
    }
    for (let o = 0; o < d; o++) {
      let s = e.bd[o];
      for (let c = 0; c < dE; c++) s += e.d[o * dE + c] * h[c];
      y[r * d + o] += wts[r * k + j] * s;
    }
  }
  return y;
}

describe.skipIf(!!why)(`moeExperts on the Node WebGPU adapter${why ? ` (skipped: ${why})` : ''}`, () => {
  {
    for (const [d, dE] of [[6, 10], [8, 12]]) {
      for (const n of [1, 9]) {
        it(`d_model ${d}, d_expert ${dE}, ${n} row(s): equals the float64 recomputation within 1e-5`, async () => {
          const b = await nodeBackend();
          try {
            const rand = seededRandom(n * 100 + d);
            const vec = (len: number) => Float32Array.from({ length: len }, () => rand() * 2 - 1);
            const E = 4, k = 2;
            const ex = Array.from({ length: E }, () => ({ g: vec(dE * d), u: vec(dE * d), d: vec(d * dE), bg: vec(dE), bu: vec(dE), bd: vec(d) }));
            // expert 3 is chosen by no row; expert 0 by every row (more than one block of four)
            const idx: number[] = [];
            for (let r = 0; r < n; r++) idx.push(0, 1 + (r % 2));
            const x = vec(n * d), wts = vec(n * k);
            const experts: ExpertMlp[] = ex.map((e) => ({
              gate: { w: b.upload(e.g, [dE, d]), b: b.upload(e.bg, [dE]) },
              up: { w: b.upload(e.u, [dE, d]), b: b.upload(e.bu, [dE]) },
              down: { w: b.upload(e.d, [d, dE]), b: b.upload(e.bd, [d]) },
            }));
            const y = b.moeExperts(b.upload(x, [n, d]), b.upload(Float32Array.from(idx), [n, k]), b.upload(wts, [n, k]), experts, 'silu');
            const got = await b.read(y);
            const want = reference(x, idx, wts, ex, n, d, dE, k);
            let worst = 0;
            for (let i = 0; i < want.length; i++) worst = Math.max(worst, Math.abs(got[i] - want[i]));
            expect(worst).toBeLessThanOrEqual(1e-5);
            expect(Math.max(...want.map(Math.abs))).toBeGreaterThan(0.1);
          } finally {
            b.dispose();
          }
        });
      }
    }
  }
});
