import { afterAll, describe, expect, it } from 'vitest';
import { CpuBackend } from '../../workers/engine/backend/cpu';
import { quantise } from '../../workers/engine/backend/quant';
import { stackTransposed, transpose } from '../../workers/engine/ops/linear_backward.cpu';
import { NodeFiles } from '../../workers/engine/io/node_files';
import { loadTransformer } from '../../workers/engine/model/load';
import { backward } from '../../workers/engine/model/backward';
import { seededRandom } from '../../workers/engine/analysis/sampling';
import { sharedPath } from '../shared';

/**
 * The CPU backend's backward ops (backend.ts; ops/*_backward.cpu.ts, the WGSL kernels' reference)
 * against float64 computations written here from the definitions, sharing no code with the engine:
 * attention's backward from a float64 forward of the same q, k, v (causal mask, sliding window,
 * soft-capping, grouped-query heads), dy·W and Σ_k dy_k·W_k on both of their paths (few rows; the
 * GEMM on a transposed copy of the stacked weights) and on a quantised weight, and the norms' backward against central differences of their
 * float64 forwards. And a backward leaves no tensor behind.
 */
const b = new CpuBackend();
afterAll(() => b.dispose());
const rand = seededRandom(2402);
const randn = (n: number, s = 1) => Float32Array.from({ length: n }, () => (rand() + rand() + rand() - 1.5) * 2 * s);
const rel = (got: ArrayLike<number>, want: ArrayLike<number>) => {
  let d = 0, m = 0;
  for (let i = 0; i < want.length; i++) { d = Math.max(d, Math.abs(got[i] - want[i])); m = Math.max(m, Math.abs(want[i])); }
  return d / m;
};

/** Float64 attention forward and backward of one prompt (the definitions in backend.ts). */
function attentionRef(q: Float32Array, k: Float32Array, v: Float32Array, dz: Float32Array, T: number, H: number, KV: number, d: number, window: number, cap: number) {
  const scale = 1 / Math.sqrt(d), g = H / KV;
  const dq = new Float64Array(T * H * d), dk = new Float64Array(T * KV * d), dv = new Float64Array(T * KV * d);
  for (let h = 0; h < H; h++) {
    const kh = Math.floor(h / g);
    for (let i = 0; i < T; i++) {
      const js: number[] = [];
      for (let j = 0; j <= i; j++) if (window === 0 || i - j < window) js.push(j);
      const raw = js.map((j) => { let s = 0; for (let e = 0; e < d; e++) s += q[(i * H + h) * d + e] * k[(j * KV + kh) * d + e]; return s * scale; });
      const sc = raw.map((s) => (cap > 0 ? cap * Math.tanh(s / cap) : s));
      const mx = Math.max(...sc), ex = sc.map((s) => Math.exp(s - mx)), Z = ex.reduce((a, c) => a + c, 0), P = ex.map((x) => x / Z);
      const dP = js.map((j) => { let s = 0; for (let e = 0; e < d; e++) s += dz[(i * H + h) * d + e] * v[(j * KV + kh) * d + e]; return s; });
      const sum = P.reduce((a, p, n) => a + p * dP[n], 0);
      js.forEach((j, n) => {
        const dS = P[n] * (dP[n] - sum) * (cap > 0 ? 1 - Math.tanh(raw[n] / cap) ** 2 : 1);
        for (let e = 0; e < d; e++) {
          dq[(i * H + h) * d + e] += scale * dS * k[(j * KV + kh) * d + e];
          dk[(j * KV + kh) * d + e] += scale * dS * q[(i * H + h) * d + e];
          dv[(j * KV + kh) * d + e] += P[n] * dz[(i * H + h) * d + e];
        }
      });
    }
  }
  return { dq, dk, dv };
}

describe('CPU backward ops against float64 definitions', () => {
  for (const [T, H, KV, d, window, cap] of [[19, 4, 2, 8, 0, 0], [23, 3, 1, 16, 6, 0], [17, 2, 2, 8, 5, 4]]) {
    it(`attentionBackward: T=${T} H=${H}/${KV} d=${d}${window ? ` window ${window}` : ''}${cap ? ` softcap ${cap}` : ''}`, async () => {
      const q = randn(T * H * d), k = randn(T * KV * d), v = randn(T * KV * d), dz = randn(T * H * d);
      const [qt, kt, vt, zt] = [b.upload(q, [T, H * d]), b.upload(k, [T, KV * d]), b.upload(v, [T, KV * d]), b.upload(dz, [T, H * d])];
      const p = { n: T, nHeads: H, nKvHeads: KV, headDim: d, scale: 1 / Math.sqrt(d), softcap: cap, window };
      const f = b.attention(qt, kt, vt, { ...p, past: 0, wantPattern: true, wantScores: cap > 0 });
      const r = b.attentionBackward(qt, kt, vt, f.pattern!, f.scores, zt, p);
      const want = attentionRef(q, k, v, dz, T, H, KV, d, window, cap);
      for (const name of ['dq', 'dk', 'dv'] as const) expect(rel(await b.read(r[name]), want[name]), name).toBeLessThan(1e-5);
      for (const t of [qt, kt, vt, zt, f.z, f.pattern!, ...(f.scores ? [f.scores] : []), r.dq, r.dk, r.dv]) b.release(t);
    });
  }

  it('linearBackward: dy·W on few rows, on many (the GEMM on a transposed copy) and on a Q8_0 weight', async () => {
    const nOut = 70, nIn = 64, w = randn(nOut * nIn, 0.5);
    const ref = (dy: Float32Array, W: ArrayLike<number>, n: number) => {
      const dx = new Float64Array(n * nIn);
      for (let t = 0; t < n; t++) for (let o = 0; o < nOut; o++) for (let i = 0; i < nIn; i++) dx[t * nIn + i] += dy[t * nOut + o] * W[o * nIn + i];
      return dx;
    };
    const wt = b.upload(w, [nOut, nIn]), q = quantise('q8_0', w, nOut, nIn), wq = b.uploadQuant(q);
    const wqValues = await b.read(wq);
    for (const n of [1, 3, 20]) {
      const dy = randn(n * nOut), dyt = b.upload(dy, [n, nOut]);
      const x = b.linearBackward(dyt, wt), xq = b.linearBackward(dyt, wq);
      expect(rel(await b.read(x), ref(dy, w, n)), `n = ${n}`).toBeLessThan(1e-6);
      expect(rel(await b.read(xq), ref(dy, wqValues, n)), `n = ${n}, q8_0`).toBeLessThan(1e-6);
      for (const t of [dyt, x, xq]) b.release(t);
    }
    b.release(wt); b.release(wq);
  });

  it('stackTransposed and transpose copy every element across tile edges (sides below, at and past 64; ragged last tiles)', () => {
    const nIn = 131, outs = [64, 1, 70];
    const ws = outs.map((o) => randn(o * nIn));
    const total = 135, t = stackTransposed(ws, outs, nIn, new Float32Array(nIn * total).fill(NaN));
    let c0 = 0, bad = 0;
    outs.forEach((o, k) => {
      for (let r = 0; r < o; r++) for (let i = 0; i < nIn; i++) if (t[i * total + c0 + r] !== ws[k][r * nIn + i]) bad++;
      c0 += o;
    });
    expect(bad).toBe(0);
    for (const [rows, cols] of [[1, 1], [3, 200], [65, 64], [129, 63]]) {
      const m = randn(rows * cols), mt = transpose(m, rows, cols);
      let wrong = 0;
      for (let r = 0; r < rows; r++) for (let c = 0; c < cols; c++) if (mt[c * rows + r] !== m[r * cols + c]) wrong++;
      expect(wrong, `[${rows}, ${cols}]`).toBe(0);
    }
  });

  it('linearBackwardSum: Σ_k dy_k·W_k over q/k/v-like parts (one Q8_0) on both paths, a changed weight list, and shapes refused', async () => {
    const nIn = 48, outs = [40, 16, 16];
    const ws = outs.map((o) => randn(o * nIn, 0.5));
    const ref = (dys: Float32Array[], W: ArrayLike<number>[], n: number) => {
      const dx = new Float64Array(n * nIn);
      dys.forEach((dy, k) => { for (let t = 0; t < n; t++) for (let o = 0; o < outs[k]; o++) for (let i = 0; i < nIn; i++) dx[t * nIn + i] += dy[t * outs[k] + o] * W[k][o * nIn + i]; });
      return dx;
    };
    const wt = ws.map((w, k) => b.upload(w, [outs[k], nIn]));
    const wq = b.uploadQuant(quantise('q8_0', ws[2], outs[2], nIn)), wqValues = await b.read(wq);
    for (const n of [1, 3, 20]) {
      const dys = outs.map((o) => randn(n * o)), dyt = dys.map((dy, k) => b.upload(dy, [n, outs[k]]));
      const x = b.linearBackwardSum(dyt, wt), xq = b.linearBackwardSum(dyt, [wt[0], wt[1], wq]);
      expect(rel(await b.read(x), ref(dys, ws, n)), `n = ${n}`).toBeLessThan(1e-6);
      expect(rel(await b.read(xq), ref(dys, [ws[0], ws[1], wqValues], n)), `n = ${n}, q8_0 third part`).toBeLessThan(1e-6);
      for (const t of [...dyt, x, xq]) b.release(t);
    }
    // the kept transposed stack belongs to its weight list: a new middle weight gives its own product
    const w1 = randn(outs[1] * nIn, 0.5), w1t = b.upload(w1, [outs[1], nIn]);
    b.release(wt[1]);
    const dys = outs.map((o) => randn(20 * o)), dyt = dys.map((dy, k) => b.upload(dy, [20, outs[k]]));
    const x = b.linearBackwardSum(dyt, [wt[0], w1t, wt[2]]);
    expect(rel(await b.read(x), ref(dys, [ws[0], w1, ws[2]], 20))).toBeLessThan(1e-6);
    expect(() => b.linearBackwardSum(dyt, [wt[0], w1t])).toThrow(/3 gradients for 2 weights/);
    expect(() => b.linearBackwardSum([dyt[1], dyt[0]], [wt[0], w1t])).toThrow(/dy \[20,16\] has not the 40 columns/);
    const other = b.upload(randn(16 * 8), [16, 8]), short = b.upload(randn(3 * 16), [3, 16]);
    expect(() => b.linearBackwardSum([dyt[0], dyt[1]], [wt[0], other])).toThrow(/does not read the 48 inputs/);
    expect(() => b.linearBackwardSum([dyt[0], short], [wt[0], w1t])).toThrow(/has not the 20 rows/);
    for (const t of [...dyt, x, wt[0], w1t, wt[2], wq, other, short]) b.release(t);
  });

  it('rmsNormBackward (with Gemma\'s offset, per-head groups) and layerNormBackward against central differences of float64 forwards', async () => {
    const rms = (x: ArrayLike<number>, w: ArrayLike<number>, off: number) => {
      const g = w.length, y = new Float64Array(x.length);
      for (let s = 0; s < x.length; s += g) { let ss = 0; for (let i = 0; i < g; i++) ss += x[s + i] ** 2; const r = 1 / Math.sqrt(ss / g + 1e-5); for (let i = 0; i < g; i++) y[s + i] = x[s + i] * r * (w[i] + off); }
      return y;
    };
    const ln = (x: ArrayLike<number>, w: ArrayLike<number>) => {
      const n = w.length, y = new Float64Array(x.length);
      for (let s = 0; s < x.length; s += n) {
        let mu = 0; for (let i = 0; i < n; i++) mu += x[s + i] / n;
        let v = 0; for (let i = 0; i < n; i++) v += (x[s + i] - mu) ** 2 / n;
        for (let i = 0; i < n; i++) y[s + i] = ((x[s + i] - mu) / Math.sqrt(v + 1e-5)) * w[i];
      }
      return y;
    };
    const check = async (f: (x: ArrayLike<number>) => Float64Array, op: (x: ReturnType<typeof b.upload>, dy: ReturnType<typeof b.upload>) => ReturnType<typeof b.upload>, rows: number, W: number) => {
      const x = randn(rows * W, 2), dy = randn(rows * W);
      const xt = b.upload(x, [rows, W]), dyt = b.upload(dy, [rows, W]), dxt = op(xt, dyt);
      const dx = await b.read(dxt);
      // ∂(dy·f(x))/∂x_i by central differences, h = 1e-4 in float64
      const fd = new Float64Array(x.length), xp = Float64Array.from(x);
      for (let i = 0; i < x.length; i++) {
        const x0 = xp[i];
        xp[i] = x0 + 1e-4; const a = f(xp); xp[i] = x0 - 1e-4; const c = f(xp); xp[i] = x0;
        let s = 0; for (let j = 0; j < x.length; j++) s += dy[j] * (a[j] - c[j]);
        fd[i] = s / 2e-4;
      }
      expect(rel(dx, fd)).toBeLessThan(1e-5);
      for (const t of [xt, dyt, dxt]) b.release(t);
    };
    const w16 = randn(16, 0.5), w24 = randn(24, 0.5);
    const w16t = b.upload(w16, [16]), w24t = b.upload(w24, [24]);
    await check((x) => rms(x, w16, 1), (x, dy) => b.rmsNormBackward(x, w16t, 1e-5, 1, dy), 3, 32);
    await check((x) => rms(x, w24, 0), (x, dy) => b.rmsNormBackward(x, w24t, 1e-5, 0, dy), 2, 24);
    await check((x) => ln(x, w24), (x, dy) => b.layerNormBackward(x, w24t, 1e-5, dy), 3, 24);
    b.release(w16t); b.release(w24t);
  });

  it('a backward releases every tensor it made (stories260K, all hooks kept, twice)', async () => {
    const { model } = await loadTransformer(new NodeFiles(sharedPath('models', 'stories260K')), b);
    const ids = [1, 403, 407, 261, 378, 426, 301, 400];
    await backward(model, ids, { kind: 'margin', good: [10], bad: [11] });
    const live = b.liveTensors();
    const g = await backward(model, ids, { kind: 'logprob', positions: [2, 3, 4, 5, 6], targets: [426, 301, 400, 403, 407] });
    expect(g.grads.size).toBeGreaterThan(50);
    expect(b.liveTensors()).toBe(live);
  });
});
