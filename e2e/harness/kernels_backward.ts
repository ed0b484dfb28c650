/**
 * The backward kernels (ops/*_backward.wgsl.ts: linearBackward, linearBackwardSum, rmsNormBackward, layerNormBackward,
 * actBackward, gatedActBackward, attentionBackward; rotary's backward is the forward rope by −θ,
 * tested with the forward ops) against the CPU backend's backward ops (themselves checked against
 * the golden float64 gradients and finite differences in tests/attribution/, and against an
 * independent float64 computation in tests/unit/backward_ops.test.ts), on awkward shapes: 1 row,
 * tile ± 1, more rows than one workgroup covers, f16 / split / quantised weights, norm groups and
 * Gemma's offset, every activation, grouped-query attention with T not a multiple of 64, sliding
 * windows shorter and longer than T, soft-capping, and head sizes below and above 64. Its own random
 * stream, so the cases before it in kernels.ts keep their inputs. Runs in Chromium (kernels.ts) and
 * in Node on lavapipe (tests/gpu/backward.test.ts).
 */
import type { Activation, Backend, Tensor } from '../../workers/engine/backend/backend';
import type { CpuBackend } from '../../workers/engine/backend/cpu';
import { packF16, unpackF16 } from '../../workers/engine/backend/f16';
import { quantise } from '../../workers/engine/backend/quant';
import type { WebGpuBackend } from '../../workers/engine/backend/webgpu';
import { linearBackwardGpu } from '../../workers/engine/ops/linear_backward.wgsl';
import { diff, randn, rng } from './compare';
import type { KernelCase } from './kernels';

const TOL = 1e-4;

/** An input of a case: host data uploaded as float32, binary16 (WebGPU; the CPU gets the rounded values) or Q8_0. */
interface Input { data: Float32Array; shape: number[]; as?: 'f16' | 'q8_0' }

/**
 * Runs every backward case on `gpu` and `cpu`, appending one KernelCase per output to `cases`.
 * @param split a WebGPU backend whose weight buffer limit splits the weights by rows (linearBackward over parts).
 */
export async function backwardKernels(gpu: WebGpuBackend, cpu: CpuBackend, cases: KernelCase[], split?: WebGpuBackend): Promise<void> {
  const rand = rng(24_2026);
  const x = (shape: number[], scale = 1, as?: Input['as']): Input => ({ data: randn(rand, shape.reduce((a, b) => a * b, 1), scale), shape, as });
  const run = async (b: Backend, inputs: Input[], f: (b: Backend, t: Tensor[]) => Tensor[]): Promise<Float32Array[]> => {
    const ts = inputs.map((h) => {
      if (h.as === 'q8_0') return b.uploadQuant(quantise('q8_0', h.data, h.shape[0], h.shape[1]));
      if (h.as === 'f16' && b.kind === 'webgpu') return (b as WebGpuBackend).uploadF16(h.data, h.shape);
      return b.upload(h.as === 'f16' ? unpackF16(packF16(h.data), h.data.length) : h.data, h.shape);
    });
    const outs = f(b, ts);
    const r: Float32Array[] = [];
    for (const t of outs) { r.push(await b.read(t)); b.release(t); }
    for (const t of ts) b.release(t);
    return r;
  };
  const add = async (op: string, name: string, inputs: Input[], f: (b: Backend, t: Tensor[]) => Tensor[], on: WebGpuBackend = gpu, tol = TOL) => {
    const want = await run(cpu, inputs, f), got = await run(on, inputs, f);
    want.forEach((w, i) => {
      const d = diff(got[i], w);
      cases.push({ op, name: want.length > 1 ? `${name} [out ${i}]` : name, maxAbs: d.maxAbs, maxErr: d.maxErr, tol, tuning: on.tuning });
    });
  };

  // dy [n, out]·W [out, in]: few rows (the CPU's direct loop) and many (its GEMM on a transposed copy)
  for (const [n, nOut, nIn] of [[1, 1, 1], [1, 64, 63], [3, 17, 33], [9, 100, 50], [17, 65, 15], [64, 64, 64], [130, 257, 70]]) {
    await add('linearBackward', `dy[${n},${nOut}]·w[${nOut},${nIn}]`, [x([n, nOut]), x([nOut, nIn], 0.5)], (b, [dy, w]) => [b.linearBackward(dy, w)]);
  }
  for (const [n, nOut, nIn] of [[2, 40, 33], [20, 64, 48]]) {
    await add('linearBackward f16 w', `dy[${n},${nOut}]·f16[${nOut},${nIn}]`, [x([n, nOut]), x([nOut, nIn], 0.5, 'f16')], (b, [dy, w]) => [b.linearBackward(dy, w)]);
    await add('linearBackward quant w', `dy[${n},${nOut}]·q8_0[${nOut},${nIn === 33 ? 64 : nIn}]`, [x([n, nOut]), x([nOut, nIn === 33 ? 64 : nIn], 0.5, 'q8_0')], (b, [dy, w]) => [b.linearBackward(dy, w)]);
  }
  if (split) {
    // more rows than one weight buffer holds: each part adds its share
    await add('linearBackward split w', 'dy[1,200]·w[200,8]', [x([1, 200]), x([200, 8], 0.5)], (b, [dy, w]) => [b.linearBackward(dy, w)], split);
  }

  // Σ_k dy_k·W_k in one dispatch (q/k/v-like parts; float32, binary16 and Q8_0 mixed), and past the
  // three parts one dispatch binds (a second dispatch adds to dx)
  for (const [n, outs, as] of [[1, [40, 16, 16], []], [20, [40, 16, 16], ['f16', undefined, 'q8_0']], [37, [17, 33, 8, 64], [undefined, 'q8_0', 'f16', undefined]]] as [number, number[], Input['as'][]][]) {
    const nIn = 64, K = outs.length;
    await add('linearBackwardSum', `Σ dy[${n},${outs}]·w[${outs.map((o, k) => `${as[k] ?? 'f32'} ${o}`)}; ${nIn}]`,
      [...outs.map((o) => x([n, o])), ...outs.map((o, k) => x([o, nIn], 0.5, as[k]))], (b, t) => [b.linearBackwardSum(t.slice(0, K), t.slice(K))]);
  }
  {
    // where a device binds 5 storage buffers (2 parts a dispatch): three dispatches, the later ones adding to dx
    const outs = [40, 16, 16, 24, 8], K = outs.length, nIn = 48;
    await add('linearBackwardSum', `Σ dy[9,${outs}]·w[${outs}; ${nIn}], 2 parts a dispatch`, [...outs.map((o) => x([9, o])), ...outs.map((o) => x([o, nIn], 0.5))],
      (b, t) => [b.kind === 'webgpu' ? linearBackwardGpu(b as WebGpuBackend, t.slice(0, K), t.slice(K), 5) : b.linearBackwardSum(t.slice(0, K), t.slice(K))]);
  }
  if (split) {
    // a weight split by rows is more parts of the same dy
    await add('linearBackwardSum split w', 'Σ dy[1,200|20]·w[200|20,8]', [x([1, 200]), x([1, 20]), x([200, 8], 0.5), x([20, 8], 0.5)], (b, [d0, d1, w0, w1]) => [b.linearBackwardSum([d0, d1], [w0, w1])], split);
  }

  for (const [rows, W, g, offset] of [[1, 64, 64, 0], [5, 65, 65, 1], [7, 48, 16, 0], [130, 200, 200, 0]]) {
    await add('rmsNormBackward', `x[${rows},${W}] groups of ${g}${offset ? ' (1+w)' : ''}`, [x([rows, W], 2), x([g], 0.5), x([rows, W])], (b, [xt, w, dy]) => [b.rmsNormBackward(xt, w, 1e-5, offset, dy)]);
  }
  for (const [rows, d] of [[1, 1], [3, 64], [9, 65], [70, 300]]) {
    await add('layerNormBackward', `x[${rows},${d}]`, [x([rows, d], 2), x([d], 0.5), x([rows, d])], (b, [xt, w, dy]) => [b.layerNormBackward(xt, w, 1e-5, dy)]);
  }

  for (const act of ['silu', 'gelu', 'gelu_tanh', 'relu', 'sigmoid', 'identity'] as Activation[]) {
    await add('actBackward', `${act} [37,70]`, [x([37, 70], 3), x([37, 70])], (b, [xt, dy]) => [b.actBackward(xt, dy, act)]);
    await add('gatedActBackward', `${act} [5,300]`, [x([5, 300], 3), x([5, 300]), x([5, 300])], (b, [g, u, dy]) => { const r = b.gatedActBackward(g, u, dy, act); return [r.dGate, r.dUp]; });
  }

  // the pattern and scores are the forward's own (CPU attention on the same q, k, v), uploaded to both
  type A = { T: number; H: number; KV: number; d: number; window: number; softcap: number };
  const shapes: A[] = [
    { T: 1, H: 1, KV: 1, d: 8, window: 0, softcap: 0 }, { T: 21, H: 4, KV: 2, d: 16, window: 0, softcap: 0 },
    { T: 70, H: 3, KV: 1, d: 64, window: 0, softcap: 0 }, { T: 33, H: 2, KV: 2, d: 32, window: 5, softcap: 0 },
    { T: 9, H: 2, KV: 1, d: 16, window: 40, softcap: 0 }, { T: 30, H: 4, KV: 2, d: 16, window: 7, softcap: 5 },
    { T: 12, H: 2, KV: 1, d: 80, window: 0, softcap: 30 },
  ];
  for (const c of shapes) {
    const q = x([c.T, c.H * c.d]), k = x([c.T, c.KV * c.d]), v = x([c.T, c.KV * c.d]), dz = x([c.T, c.H * c.d]);
    const p = { n: c.T, nHeads: c.H, nKvHeads: c.KV, headDim: c.d, scale: 1 / Math.sqrt(c.d), softcap: c.softcap, window: c.window };
    const qt = cpu.upload(q.data, q.shape), kt = cpu.upload(k.data, k.shape), vt = cpu.upload(v.data, v.shape);
    const fwd = cpu.attention(qt, kt, vt, { ...p, past: 0, wantPattern: true, wantScores: c.softcap > 0 });
    const pattern = { data: await cpu.read(fwd.pattern!), shape: [c.H, c.T, c.T] };
    // masked scores are −∞ on both backends' inputs; the kernels never read them
    const scores = c.softcap > 0 ? [{ data: await cpu.read(fwd.scores!), shape: [c.H, c.T, c.T] }] : [];
    for (const t of [qt, kt, vt, fwd.z, fwd.pattern!, ...(fwd.scores ? [fwd.scores] : [])]) cpu.release(t);
    const name = `T=${c.T} H=${c.H}/${c.KV} d=${c.d}${c.window ? ` window ${c.window}` : ''}${c.softcap ? ` softcap ${c.softcap}` : ''}`;
    await add('attentionBackward', name, [q, k, v, pattern, dz, ...scores], (b, [qq, kk, vv, pp, zz, ss]) => {
      const r = b.attentionBackward(qq, kk, vv, pp, ss, zz, p);
      return [r.dq, r.dk, r.dv];
    });
  }
}
