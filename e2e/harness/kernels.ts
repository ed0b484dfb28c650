/**
 * Kernel harness: a differential test of every Backend op, WebGpuBackend against CpuBackend (a
 * second, independent implementation whose ops Vitest checks against the golden references and
 * closed forms; the WebGPU forward itself is checked against the golden references end to end in
 * numerics.ts) on seeded random inputs of awkward shapes (1, tile − 1, tile + 1, non-powers of two, n = 1 decode,
 * past > 0, sliding windows, GQA), plus the backend's own behaviour (limits, pooling, batching,
 * device loss, dispose), and the splitting of weights over the binding limit (on a second backend
 * whose weight buffer limit is set small). The ops with a kernel per KernelTuning (linear,
 * attention, logSoftmax, rowOp, saeActivation) run again on a backend with the tuning the adapter did not pick, so
 * both variants are tested on every adapter. Exposes `window.runKernelTests()` for kernels.spec.ts.
 */
import type { Activation, AttentionParams, Backend, RowOp, Tensor } from '../../workers/engine/backend/backend';
import { CpuBackend } from '../../workers/engine/backend/cpu';
import { WebGpuBackend } from '../../workers/engine/backend/webgpu';
import { ChunkedTensor, type KernelTuning } from '../../workers/engine/backend/webgpu_host';
import { fromF16Bits, packF16, toF16Bits, unpackF16 } from '../../workers/engine/backend/f16';
import { GEMV_MAX_ROWS } from '../../workers/engine/ops/linear.wgsl';
import { diff, randn, rng } from './compare';
import { linearQuant } from './kernels_quant';
import { backwardKernels } from './kernels_backward';

/** One op on one input: the WebGPU result's difference from the CPU backend's. */
export interface KernelCase {
  op: string;
  name: string;
  maxAbs: number;
  maxErr: number;
  /** Bound on maxErr (|Δ| / max(1, |ref|)). */
  tol: number;
  /** The kernel variants of the WebGPU backend that ran it. */
  tuning: KernelTuning;
}

/** One behavioural claim about the backend and whether it held. */
export interface BackendCheck {
  name: string;
  pass: boolean;
  detail: string;
}

export interface KernelReport {
  adapter: string;
  /** The adapter's own tuning (the default backend's); every tuned op also ran with the other one. */
  tuning: KernelTuning;
  cases: KernelCase[];
  checks: BackendCheck[];
}

declare global {
  interface Window { runKernelTests: () => Promise<KernelReport> }
}

const TOL = 1e-4;

interface Host { data: Float32Array; shape: number[] }
type Op = (b: Backend, t: Tensor[]) => Tensor | Tensor[] | Promise<Float32Array[]>;

class Harness {
  readonly cases: KernelCase[] = [];
  readonly checks: BackendCheck[] = [];
  readonly cpu = new CpuBackend();
  readonly rand = rng(20240607);

  /** @param label appended to every check's name (the other tuning's run says which it is). */
  constructor(readonly gpu: WebGpuBackend, readonly label = '') {}

  x(shape: number[], scale = 1): Host {
    return { data: randn(this.rand, shape.reduce((a, b) => a * b, 1), scale), shape };
  }

  /** Runs `op` on both backends (WebGPU: `gpu`, default this.gpu) with the same inputs and records each output's difference. */
  async case(op: string, name: string, inputs: Host[], f: Op, tol = TOL, gpu: WebGpuBackend = this.gpu): Promise<void> {
    const run = async (b: Backend): Promise<Float32Array[]> => {
      const ts = inputs.map((h) => b.upload(h.data, h.shape));
      const r = await f(b, ts);
      let out: Float32Array[];
      if (Array.isArray(r) && r.length > 0 && r[0] instanceof Float32Array) out = r as Float32Array[];
      else {
        const list = (Array.isArray(r) ? r : [r]) as Tensor[];
        out = [];
        for (const t of list) { out.push(await b.read(t)); b.release(t); }
      }
      for (const t of ts) b.release(t);
      return out;
    };
    const want = await run(this.cpu);
    const got = await run(gpu);
    want.forEach((w, i) => {
      const d = diff(got[i], w);
      this.cases.push({ op, name: want.length > 1 ? `${name} [out ${i}]` : name, maxAbs: d.maxAbs, maxErr: d.maxErr, tol, tuning: gpu.tuning });
    });
  }

  /** Records a behavioural claim (its name followed by the harness's label). */
  async check(name: string, f: () => Promise<string | true> | string | true): Promise<void> {
    const tagged = name + this.label;
    try {
      const r = await f();
      this.checks.push({ name: tagged, pass: r === true, detail: r === true ? '' : r });
    } catch (e) {
      this.checks.push({ name: tagged, pass: false, detail: `threw: ${(e as Error).message}` });
    }
  }
}

/** Expects `f` to throw an Error whose message matches every pattern. */
function throwsMatching(f: () => unknown, ...patterns: RegExp[]): string | true {
  try {
    f();
  } catch (e) {
    const m = (e as Error).message;
    return patterns.every((p) => p.test(m)) ? true : `message "${m}" does not match ${patterns.join(', ')}`;
  }
  return 'did not throw';
}

async function copies(h: Harness): Promise<void> {
  for (const [V, D, n, scale] of [[50, 1, 1, 1], [50, 63, 7, 1], [300, 65, 1, 8], [10, 257, 300, 0.5]]) {
    const ids = Int32Array.from({ length: n }, (_, i) => (i === 0 ? V - 1 : Math.floor(h.rand() * V)));
    await h.case('embed', `V=${V} D=${D} n=${n} scale=${scale}`, [h.x([V, D])], (b, [t]) => b.embed(t, ids, scale));
  }
  for (const [R, D, s, n] of [[10, 7, 3, 4], [5, 64, 0, 5], [1, 1, 0, 1], [9, 65, 8, 1]]) {
    await h.case('sliceRows', `[${R},${D}] rows ${s}..${s + n}`, [h.x([R, D])], (b, [t]) => b.sliceRows(t, s, n));
  }
  await h.case('concatRows', '[3,5]+[1,5]+[7,5]', [h.x([3, 5]), h.x([1, 5]), h.x([7, 5])], (b, ts) => b.concatRows(ts));
  await h.case('clone', '[13,17]', [h.x([13, 17])], (b, [t]) => b.clone(t));
  for (const [ctx, W, n, off] of [[20, 12, 3, 5], [20, 12, 1, 19], [7, 65, 7, 0]]) {
    await h.case('writeRows', `cache [${ctx},${W}] rows ${off}..${off + n}`, [h.x([ctx, W]), h.x([n, W])], (b, [c, x]) => {
      b.writeRows(c, x, off);
      return b.clone(c);
    });
  }
  for (const [n, C, s, w] of [[7, 30, 5, 9], [1, 65, 64, 1], [300, 3, 0, 3], [2, 100, 1, 63]]) {
    await h.case('sliceCols', `[${n},${C}] cols ${s}..${s + w}`, [h.x([n, C])], (b, [t]) => b.sliceCols(t, s, w));
  }
  for (const [n, C, k] of [[5, 40, 5], [1, 1000, 100], [3, 7, 1]]) {
    const cols = Int32Array.from({ length: k }, (_, i) => (i === 0 ? C - 1 : Math.floor(h.rand() * C)));
    await h.case('gatherCols', `[${n},${C}] ${k} cols`, [h.x([n, C])], (b, [t]) => b.gatherCols(t, cols));
  }
}

/**
 * Shapes cover both tunings' paths: 'gpu' GEMV (n ≤ GEMV_MAX_ROWS) and tiled matmul; 'cpu' dot
 * kernel with row blocks of 1, 4 and 8 (n = 1, 2–4, > 4, with partial blocks), vec4 (in % 4 = 0)
 * and scalar loads, and more than one workgroup of outputs.
 */
async function linear(h: Harness): Promise<void> {
  const G = GEMV_MAX_ROWS;
  const shapes: [number, number, number, boolean][] = [
    [1, 1, 1, false], [1, 64, 63, true], [1, 65, 129, false], [2, 64, 172, false], [3, 17, 33, true], [G, 100, 50, false],
    [G + 1, 100, 50, true], [7, 100, 50, false], [8, 36, 17, true], [63, 64, 65, false], [65, 63, 64, true], [64, 64, 64, false],
    [130, 257, 70, true], [1, 2000, 1030, true], [17, 1, 5, false], [9, 300, 1, true], [21, 172, 64, false],
  ];
  for (const [n, nIn, nOut, bias] of shapes) {
    const inputs = [h.x([n, nIn]), h.x([nOut, nIn], 0.5), ...(bias ? [h.x([nOut])] : [])];
    await h.case('linear', `x[${n},${nIn}]·w[${nOut},${nIn}]ᵀ${bias ? '+b' : ''}`, inputs, (b, [x, w, bb]) => b.linear(x, w, bb));
  }
}

/**
 * The vec4 register-tiled, double-buffered matmul ('gpu' tuning, n > GEMV_MAX_ROWS, in % 4 = 0;
 * the 'cpu' run covers the dot kernel on the same shapes): partial tiles in rows, columns and k, one
 * and several k steps, f16 weights (compared with the CPU backend's linear on the rounded weights).
 */
async function matmulVec4(h: Harness): Promise<void> {
  const rand = rng(20261202); // its own stream (see linearFused)
  const x = (shape: number[], scale = 1): Host => ({ data: randn(rand, shape.reduce((a, b) => a * b, 1), scale), shape });
  const shapes: [number, number, number, boolean, boolean][] = [
    [5, 4, 3, true, false], [70, 132, 129, false, false], [129, 48, 65, true, false], [64, 16, 64, false, false], [67, 36, 70, true, true],
  ];
  for (const [n, nIn, nOut, bias, f16] of shapes) {
    const w = x([nOut, nIn], 0.5);
    const rounded = f16 ? unpackF16(packF16(w.data), w.data.length) : w.data;
    await h.case('linear vec4 tiled', `x[${n},${nIn}]·w[${nOut},${nIn}]ᵀ${bias ? '+b' : ''}${f16 ? ' f16' : ''}`, [x([n, nIn]), ...(bias ? [x([nOut])] : [])], (b, [xt, bb]) => {
      const wt = b === h.gpu && f16 ? h.gpu.uploadF16(w.data, w.shape) : b.upload(rounded, w.shape);
      const y = b.linear(xt, wt, bb);
      b.release(wt);
      return y;
    });
  }
}

/**
 * Fused decode kernels (backend.fused: RMSNorm prologue, gate·up·act, residual epilogue) against the
 * CPU's plain ops composed (rmsNorm, linear, gatedAct, add), n = 1..GEMV_MAX_ROWS, scalar and vec4
 * widths, more than one workgroup of outputs, with and without biases, Gemma's norm offset, f16 weights.
 */
async function linearFused(h: Harness): Promise<void> {
  const G = GEMV_MAX_ROWS;
  const rand = rng(20261130); // its own stream: the other parts keep the inputs they had before it was added
  type Case = { n: number; nIn: number; nOut: number; norm?: number; act?: Activation; residual?: boolean; bias?: boolean; f16?: boolean };
  const cases: Case[] = [
    { n: 1, nIn: 64, nOut: 63, residual: true, bias: true },
    { n: G, nIn: 65, nOut: 172, residual: true },
    { n: 1, nIn: 64, nOut: 172, norm: 0 },
    { n: 3, nIn: 17, nOut: 9, norm: 1, bias: true },
    { n: 1, nIn: 64, nOut: 172, norm: 0, act: 'silu' },
    { n: 2, nIn: 65, nOut: 33, norm: 1, act: 'gelu_tanh', bias: true },
    { n: G, nIn: 48, nOut: 130, act: 'silu' },
    { n: 1, nIn: 64, nOut: 40, norm: 0, act: 'silu', f16: true },
    { n: 2, nIn: 172, nOut: 64, residual: true, f16: true },
  ];
  for (const c of cases) {
    const x = (shape: number[], scale = 1): Host => ({ data: randn(rand, shape.reduce((a, b) => a * b, 1), scale), shape });
    const inputs = [x([c.n, c.nIn]), x([c.nOut, c.nIn], 0.5), x([c.nOut]), x([c.nIn]), x([c.nOut, c.nIn], 0.5), x([c.nOut]), x([c.n, c.nOut])];
    const round = (x: Host): Float32Array => (c.f16 ? unpackF16(packF16(x.data), x.data.length) : x.data);
    const name = `x[${c.n},${c.nIn}]·w[${c.nOut},${c.nIn}]ᵀ${c.bias ? '+b' : ''}${c.norm !== undefined ? ` rms(+${c.norm})` : ''}${c.act ? ` ${c.act}(gate)·up` : ''}${c.residual ? ' +r' : ''}${c.f16 ? ' f16' : ''}`;
    await h.case('linear fused', name, inputs.filter((_, i) => i !== 1 && i !== 4), (b, [x, bias, g, upBias, r]) => {
      const weight = (host: Host): Tensor => (b === h.gpu && c.f16 ? h.gpu.uploadF16(host.data, host.shape) : b.upload(round(host), host.shape));
      const w = weight(inputs[1]), up = weight(inputs[4]);
      const norm = c.norm !== undefined ? { w: g, eps: 1e-5, offset: c.norm } : undefined;
      const gateUp = c.act ? { w: up, bias: c.bias ? upBias : undefined, act: c.act } : undefined;
      const bb = c.bias ? bias : undefined;
      let y: Tensor;
      if (b.fused) {
        y = b.fused.linear(x, w, bb, { norm, gateUp, residual: c.residual ? r : undefined });
      } else {
        const xn = norm ? b.rmsNorm(x, g, norm.eps, norm.offset) : x;
        y = b.linear(xn, w, bb);
        if (gateUp) { const u = b.linear(xn, up, gateUp.bias); const gated = b.gatedAct(y, u, gateUp.act); b.release(u); b.release(y); y = gated; }
        if (c.residual) { const sum = b.add(y, r); b.release(y); y = sum; }
        if (xn !== x) b.release(xn);
      }
      b.release(w); b.release(up);
      return y;
    });
  }
  await h.check('fused linear refuses more rows than its kernels take, naming the bound', () => {
    const g = h.gpu, x = g.zeros([G + 1, 4]), w = g.zeros([3, 4]);
    try { return throwsMatching(() => g.fused!.linear(x, w, undefined, {}), new RegExp(`${G + 1} rows exceed the fused kernels' ${G}`)); } finally { g.release(x); g.release(w); }
  });
}

/**
 * The fused QKV + RoPE + KV-cache write (backend.fused.qkv) against the CPU's ops composed (rmsNorm,
 * linear ×3, rope ×2, writeRows ×2): q and both whole caches (rows outside pos0.. untouched), with
 * GQA, partial rotary, no rotary, biases, Gemma's norm offset, scalar and vec4 widths, f16 weights.
 */
async function qkvRope(h: Harness): Promise<void> {
  const rand = rng(20261201); // its own stream (see linearFused)
  type Case = { n: number; nIn: number; H: number; kv: number; d: number; rot: number; pos0: number; norm?: number; bias?: boolean; f16?: boolean };
  const cases: Case[] = [
    { n: 1, nIn: 64, H: 4, kv: 2, d: 16, rot: 16, pos0: 5, norm: 0 },
    { n: 1, nIn: 64, H: 4, kv: 4, d: 16, rot: 4, pos0: 300, bias: true },
    { n: 3, nIn: 65, H: 3, kv: 1, d: 8, rot: 8, pos0: 0, norm: 1 },
    { n: 4, nIn: 48, H: 2, kv: 2, d: 6, rot: 0, pos0: 2, bias: true },
    { n: 2, nIn: 32, H: 9, kv: 3, d: 64, rot: 64, pos0: 7, bias: true, norm: 0, f16: true },
  ];
  for (const c of cases) {
    const ctx = c.pos0 + c.n + 2, qW = c.H * c.d, kvW = c.kv * c.d;
    const x = (shape: number[], scale = 1): Host => ({ data: randn(rand, shape.reduce((a, b) => a * b, 1), scale), shape });
    const ws = [x([qW, c.nIn], 0.3), x([kvW, c.nIn], 0.3), x([kvW, c.nIn], 0.3)];
    const round = (w: Host): Float32Array => (c.f16 ? unpackF16(packF16(w.data), w.data.length) : w.data);
    const invFreq = Float32Array.from({ length: c.rot / 2 }, (_, j) => 10000 ** (-2 * j / c.rot));
    const inputs = [x([c.n, c.nIn]), x([qW]), x([kvW]), x([kvW]), x([c.nIn]), x([ctx, kvW]), x([ctx, kvW])];
    const name = `x[${c.n},${c.nIn}] ${c.H}/${c.kv} heads of ${c.d}, rotary ${c.rot}, pos0=${c.pos0}${c.norm !== undefined ? ` rms(+${c.norm})` : ''}${c.bias ? ' +b' : ''}${c.f16 ? ' f16' : ''}`;
    await h.case('qkv rope', name, inputs, (b, [xt, bq, bk, bv, g, kc, vc]) => {
      const [wq, wk, wv] = ws.map((w) => (b === h.gpu && c.f16 ? h.gpu.uploadF16(w.data, w.shape) : b.upload(round(w), w.shape)));
      const norm = c.norm !== undefined ? { w: g, eps: 1e-5, offset: c.norm } : undefined;
      const bias = (t: Tensor): Tensor | undefined => (c.bias ? t : undefined);
      let q: Tensor | null = null;
      if (b.fused) {
        q = b.fused.qkv({ x: xt, q: { w: wq, b: bias(bq) }, k: { w: wk, b: bias(bk) }, v: { w: wv, b: bias(bv) }, norm, rope: c.rot ? { rotaryDims: c.rot, invFreq } : undefined, nHeads: c.H, nKvHeads: c.kv, headDim: c.d, kCache: kc, vCache: vc, pos0: c.pos0 });
        if (!q) throw new Error('the fused QKV kernel declined a case it should take');
      } else {
        const xn = norm ? b.rmsNorm(xt, g, norm.eps, norm.offset) : xt;
        q = b.linear(xn, wq, bias(bq));
        let k = b.linear(xn, wk, bias(bk));
        const v = b.linear(xn, wv, bias(bv));
        if (c.rot) {
          const qr = b.rope(q, c.H, c.d, c.rot, c.pos0, invFreq), kr = b.rope(k, c.kv, c.d, c.rot, c.pos0, invFreq);
          b.release(q); b.release(k);
          q = qr; k = kr;
        }
        b.writeRows(kc, k, c.pos0);
        b.writeRows(vc, v, c.pos0);
        b.release(k); b.release(v);
        if (xn !== xt) b.release(xn);
      }
      for (const w of [wq, wk, wv]) b.release(w);
      return [q, b.clone(kc), b.clone(vc)];
    });
  }
  await h.check('fused QKV declines an odd head width (null, nothing recorded: the caller takes the split ops)', () => {
    const g = h.gpu, xt = g.zeros([1, 4]), w = g.zeros([6, 4]), kc = g.zeros([4, 6]);
    try {
      const r = g.fused!.qkv({ x: xt, q: { w }, k: { w }, v: { w }, nHeads: 2, nKvHeads: 2, headDim: 3, kCache: kc, vCache: kc, pos0: 0 });
      return r === null ? true : 'an odd head width was taken';
    } finally { for (const t of [xt, w, kc]) g.release(t); }
  });
}

/** f16 weight storage: compared with the CPU backend's linear on the same weights rounded to binary16. */
async function linearF16(h: Harness): Promise<void> {
  const shapes: [number, number, number, boolean][] = [
    [1, 65, 129, true], [3, 17, 33, false], [65, 63, 64, true], [130, 257, 70, false], [1, 64, 40, true], [6, 128, 33, false], [2, 4, 3, true],
  ];
  for (const [n, nIn, nOut, bias] of shapes) {
    const w = h.x([nOut, nIn], 0.5);
    const rounded = unpackF16(packF16(w.data), w.data.length);
    const inputs = [h.x([n, nIn]), ...(bias ? [h.x([nOut])] : [])];
    await h.case('linear f16 w', `x[${n},${nIn}]·w[${nOut},${nIn}]ᵀ${bias ? '+b' : ''}`, inputs, (b, [x, bb]) => {
      const wt = b === h.gpu ? h.gpu.uploadF16(w.data, w.shape) : b.upload(rounded, w.shape);
      const y = b.linear(x, wt, bb);
      b.release(wt);
      return y;
    });
  }
}

/** f16 tables: embed and sliceRows against the CPU ops on the same table rounded to binary16. */
async function tablesF16(h: Harness): Promise<void> {
  for (const [V, D, n, scale] of [[50, 1, 1, 1], [50, 63, 7, 1], [300, 65, 9, 8]]) {
    const table = h.x([V, D]);
    const rounded = unpackF16(packF16(table.data), table.data.length);
    const ids = Int32Array.from({ length: n }, (_, i) => (i === 0 ? V - 1 : Math.floor(h.rand() * V)));
    await h.case('embed f16 table', `V=${V} D=${D} n=${n} scale=${scale}`, [], (b) => {
      const t = b === h.gpu ? h.gpu.uploadF16(table.data, table.shape) : b.upload(rounded, table.shape);
      const y = b.embed(t, ids, scale);
      b.release(t);
      return y;
    });
    await h.case('sliceRows f16 table', `[${V},${D}] rows 1..${1 + n}`, [], (b) => {
      const t = b === h.gpu ? h.gpu.uploadF16(table.data, table.shape) : b.upload(rounded, table.shape);
      const y = b.sliceRows(t, 1, n);
      b.release(t);
      return y;
    });
  }
}

/** Bytes one weight part may occupy on the splitting backend: small, so that small matrices split. */
const SPLIT_BYTES = 1024;

/**
 * Weights over the binding limit, on a backend whose weight buffer limit is SPLIT_BYTES: each
 * matrix below is split into ≥ 3 row parts (the last a shorter remainder), and linear, embed and
 * sliceRows must still equal the CPU ops on the whole matrix (f32, and f16 against rounded weights).
 */
async function splitWeights(h: Harness, g: WebGpuBackend): Promise<void> {
  // [out or V, in or D]: f32 rows of 4·in bytes, f16 rows of 2·in bytes; all give ≥ 3 parts with a remainder
  const shapes: [number, number][] = [[50, 23], [130, 40], [77, 64], [200, 7]];
  for (const [rows, width] of shapes) {
    const w = h.x([rows, width], 0.5);
    const rounded = unpackF16(packF16(w.data), w.data.length);
    for (const dtype of ['f32', 'f16'] as const) {
      const up = (b: Backend): Tensor => (b === g ? (dtype === 'f16' ? g.uploadF16(w.data, w.shape) : g.upload(w.data, w.shape)) : b.upload(dtype === 'f16' ? rounded : w.data, w.shape));
      const label = `${dtype} w[${rows},${width}]`;
      for (const [n, bias] of [[1, true], [3, false], [GEMV_MAX_ROWS + 1, true], [70, false]] as [number, boolean][]) {
        // x and b are activations, not weights: on the splitting backend they go in unsplit (hostData)
        const x = h.x([n, width]), bb = h.x([rows]);
        await h.case('linear split w', `x[${n},${width}]·${label}ᵀ${bias ? '+b' : ''}`, [], (b) => {
          const [xt, bt] = [x, bb].map((v) => (b === g ? g.hostData(v.data, v.shape) : b.upload(v.data, v.shape)));
          const wt = up(b);
          const y = b.linear(xt, wt, bias ? bt : undefined);
          for (const t of [wt, xt, bt]) b.release(t);
          return y;
        }, TOL, g);
      }
      const ids = Int32Array.from({ length: 40 }, (_, i) => (i < 2 ? [0, rows - 1][i] : Math.floor(h.rand() * rows)));
      await h.case('embed split table', `${label} 40 ids, scale 3`, [], (b) => {
        const t = up(b);
        const y = b.embed(t, ids, 3);
        b.release(t);
        return y;
      }, TOL, g);
      await h.case('sliceRows split table', `${label} rows 1..${rows - 1}`, [], (b) => {
        const t = up(b);
        const y = b.sliceRows(t, 1, rows - 2);
        b.release(t);
        return y;
      }, TOL, g);
    }
  }

  await h.check('a matrix over the weight buffer limit is split into row parts that each fit, the last a remainder (f32 and f16)', async () => {
    for (const dtype of ['f32', 'f16'] as const) {
      const data = randn(h.rand, 50 * 23);
      const t = dtype === 'f16' ? g.uploadF16(data, [50, 23]) : g.upload(data, [50, 23]);
      if (!(t instanceof ChunkedTensor)) return `${dtype}: not split`;
      const rows = t.parts.map((p) => p.shape[0]);
      const over = t.parts.filter((p) => p.bytes > SPLIT_BYTES);
      const back = await g.read(t);
      g.release(t);
      if (rows.length < 3 || rows[rows.length - 1] >= rows[0] || over.length > 0) return `${dtype}: parts of ${rows.join(', ')} rows, ${over.length} over the limit`;
      const d = diff(back, dtype === 'f16' ? unpackF16(packF16(data), data.length) : data);
      if (d.maxErr !== 0) return `${dtype}: read-back differs by ${d.maxErr}`;
    }
    const small = g.upload(new Float32Array(4 * 23), [4, 23]);
    const r = small instanceof ChunkedTensor ? 'a matrix under the limit was split' : true;
    g.release(small);
    return r;
  });

  await h.check('ops other than linear, embed and sliceRows refuse a split tensor, saying it is split and which ops accept it', () => {
    const t = g.upload(randn(h.rand, 50 * 23), [50, 23]);
    const x = g.upload(randn(h.rand, 23), [1, 23]);
    const msg = [/split across \d+ buffers/, /only linear\(\) \(as its weight\), embed\(\) and sliceRows\(\)/];
    const results = [
      throwsMatching(() => g.add(t, t), ...msg),
      throwsMatching(() => g.clone(t), ...msg),
      throwsMatching(() => g.rmsNorm(t, x, 1e-5, 0), ...msg),
      throwsMatching(() => g.linear(t, t), ...msg), // as the input, not the weight
      throwsMatching(() => g.gatherCols(t, Int32Array.of(0)), ...msg),
    ];
    g.release(t); g.release(x);
    return results.find((r) => r !== true) ?? true;
  });

  await h.check('releasing a split tensor returns every part to the pool', () => {
    const before = g.memoryStats().pooled;
    const t = g.upload(randn(h.rand, 130 * 40), [130, 40]) as ChunkedTensor;
    const parts = t.parts.length;
    const mid = g.memoryStats().pooled;
    g.release(t);
    const after = g.memoryStats().pooled;
    return after - mid === parts && parts >= 3 ? true : `pooled ${before} → ${mid} → ${after}, ${parts} parts`;
  });

  await h.check('a matrix whose single row exceeds the weight buffer limit, or a 1-D tensor over it, is refused naming the limit', () => {
    const r1 = throwsMatching(() => g.upload(new Float32Array(2 * 300), [2, 300]), /\[1,300\] needs 1200 bytes/, /weight buffer limit/, new RegExp(`${SPLIT_BYTES} bytes`));
    return r1 === true ? throwsMatching(() => g.upload(new Float32Array(300), [300]), /\[300\] needs 1200 bytes/) : r1;
  });
}

async function elementwise(h: Harness): Promise<void> {
  for (const n of [1, 255, 256, 257, 1000]) {
    await h.case('add', `${n}`, [h.x([n]), h.x([n])], (b, [x, y]) => b.add(x, y));
  }
  // 256·65 537 elements: more than 65 535 workgroups, so the grid wraps into a second dimension
  const big = 256 * 65537 + 3;
  await h.case('add', `${big} (2-D grid)`, [h.x([big]), h.x([big])], (b, [x, y]) => b.add(x, y));
  for (const n of [1, 257]) await h.case('sub', `${n}`, [h.x([n]), h.x([n])], (b, [x, y]) => b.sub(x, y));

  const special = [-100, -20, -5, -1e-4, 0, 1e-4, 5, 20, 100];
  const acts: Activation[] = ['silu', 'gelu', 'gelu_tanh', 'relu'];
  for (const a of acts) {
    const x = h.x([1000], 4);
    x.data.set(special);
    await h.case('act', `${a} [1000]`, [x], (b, [t]) => b.act(t, a));
    await h.case('gatedAct', `${a} [257]`, [h.x([257], 3), h.x([257])], (b, [g, u]) => b.gatedAct(g, u, a));
  }
  for (const [cap, scale] of [[5, 20], [30, 200], [50, 0.01]]) {
    await h.case('softcap', `cap ${cap}, x·${scale}`, [h.x([1000], scale)], (b, [t]) => b.softcap(t, cap));
  }
}

/**
 * SAE activations (JumpReLU with per-column thresholds, ReLU, TopK by radix selection) on widths
 * around the workgroup's lanes and a Gemma Scope width, k from 1 to more than the positives.
 */
async function saeActivations(h: Harness): Promise<void> {
  for (const [n, C] of [[1, 1], [3, 63], [2, 65], [5, 256], [2, 16384]] as const) {
    const theta = h.x([C], 0.5);
    theta.data.forEach((v, i) => { theta.data[i] = Math.abs(v); });
    const zeros = { data: new Float32Array(C), shape: [C] };
    await h.case('saeActivation', `jumprelu [${n},${C}]`, [h.x([n, C]), theta], (b, [x, t]) => b.saeActivation(x, t, 0));
    await h.case('saeActivation', `relu [${n},${C}]`, [h.x([n, C]), zeros], (b, [x, t]) => b.saeActivation(x, t, 0));
    for (const k of [1, 7, Math.max(1, Math.floor(C / 2)), C]) {
      await h.case('saeActivation', `topk k=${k} [${n},${C}]`, [h.x([n, C]), zeros], (b, [x, t]) => b.saeActivation(x, t, k), 0);
    }
  }
}

async function norms(h: Harness): Promise<void> {
  for (const [n, W, g, off, eps] of [[5, 64, 64, 0, 1e-5], [3, 32, 8, 1, 1e-6], [2, 65, 65, 0, 1e-5], [1, 1, 1, 0, 1e-5], [7, 300, 300, 1, 1e-6], [4, 6 * 24, 24, 0, 1e-6]]) {
    await h.case('rmsNorm', `x[${n},${W}] groups of ${g} offset ${off}`, [h.x([n, W], 3), h.x([g])], (b, [x, w]) => b.rmsNorm(x, w, eps, off));
  }
  for (const [n, D, bias] of [[5, 64, true], [3, 65, false], [1, 1000, true], [4, 1, true], [70, 33, false]] as [number, number, boolean][]) {
    const x = h.x([n, D], 2);
    for (let i = 0; i < x.data.length; i++) x.data[i] += 1.5;
    await h.case('layerNorm', `x[${n},${D}]${bias ? ' +b' : ''}`, [x, h.x([D]), ...(bias ? [h.x([D])] : [])], (b, [t, w, bb]) => b.layerNorm(t, w, bb, 1e-5));
  }
}

async function rope(h: Harness): Promise<void> {
  const cases: [number, number, number, number, number][] = [
    [1, 1, 2, 2, 0], [9, 4, 16, 16, 0], [5, 4, 16, 4, 37], [1, 8, 64, 64, 511], [3, 2, 10, 6, 1000], [70, 3, 24, 24, 2], [2, 2, 8, 0, 5],
  ];
  for (const [n, H, d, rot, pos0] of cases) {
    const invFreq = Float32Array.from({ length: rot / 2 }, (_, j) => 10000 ** (-2 * j / rot));
    await h.case('rope', `n=${n} H=${H} d=${d} rotary ${rot} pos0=${pos0}`, [h.x([n, H * d])], (b, [x]) => b.rope(x, H, d, rot, pos0, invFreq));
  }
}

async function attention(h: Harness): Promise<void> {
  type Case = Omit<AttentionParams, 'scale'> & { scale?: number; ctx?: number };
  const cases: Case[] = [
    { n: 7, past: 0, nHeads: 4, nKvHeads: 4, headDim: 16, softcap: 0, window: 0, wantPattern: true, wantScores: true },
    { n: 5, past: 0, nHeads: 8, nKvHeads: 2, headDim: 8, softcap: 0, window: 0, wantPattern: true, wantScores: false },
    { n: 1, past: 20, nHeads: 4, nKvHeads: 2, headDim: 16, softcap: 0, window: 0, wantPattern: true, wantScores: true },
    { n: 10, past: 5, nHeads: 2, nKvHeads: 1, headDim: 24, softcap: 5, window: 3, wantPattern: true, wantScores: true, scale: 32 ** -0.5 },
    { n: 3, past: 2, nHeads: 2, nKvHeads: 2, headDim: 65, softcap: 0, window: 0, wantPattern: false, wantScores: false },
    { n: 70, past: 30, nHeads: 2, nKvHeads: 1, headDim: 32, softcap: 0, window: 0, wantPattern: true, wantScores: false },
    { n: 70, past: 30, nHeads: 2, nKvHeads: 1, headDim: 32, softcap: 0, window: 40, wantPattern: false, wantScores: false },
    { n: 2, past: 130, nHeads: 4, nKvHeads: 4, headDim: 128, softcap: 0, window: 0, wantPattern: false, wantScores: true, scale: 0.1 },
    { n: 4, past: 0, nHeads: 3, nKvHeads: 1, headDim: 1, softcap: 0, window: 0, wantPattern: true, wantScores: true },
    { n: 6, past: 0, nHeads: 2, nKvHeads: 1, headDim: 16, softcap: 2, window: 100, wantPattern: true, wantScores: true },
    { n: 1, past: 70, nHeads: 4, nKvHeads: 1, headDim: 16, softcap: 0, window: 6, wantPattern: true, wantScores: true },
    // long decode contexts: flash-decoding's 'auto' split on both tunings (ops/attention_split.wgsl.ts;
    // on 'gpu' 2 chunks of 192 keys, 3 per lane), SmolLM-135M's head shape; the window splits its 300 keys only
    { n: 1, past: 300, nHeads: 9, nKvHeads: 3, headDim: 64, softcap: 0, window: 0, wantPattern: false, wantScores: false },
    { n: 1, past: 700, nHeads: 4, nKvHeads: 2, headDim: 24, softcap: 5, window: 300, wantPattern: false, wantScores: false },
  ];
  for (const c of cases) {
    const T = c.past + c.n;
    const ctx = T + 5;
    const p: AttentionParams = { ...c, scale: c.scale ?? 1 / Math.sqrt(c.headDim) };
    const kvW = c.nKvHeads * c.headDim;
    const k = h.x([ctx, kvW]), v = h.x([ctx, kvW]);
    // rows beyond past+n must never be read: poison them
    k.data.fill(1e4, T * kvW);
    v.data.fill(1e4, T * kvW);
    const name = `n=${c.n} past=${c.past} H=${c.nHeads}/${c.nKvHeads} d=${c.headDim}${c.window ? ` window=${c.window}` : ''}${c.softcap ? ` softcap=${c.softcap}` : ''}${p.wantPattern ? ' +pattern' : ''}${p.wantScores ? ' +scores' : ''}`;
    await h.case('attention', name, [h.x([c.n, c.nHeads * c.headDim]), k, v], (b, [q, kc, vc]) => {
      const r = b.attention(q, kc, vc, p);
      return [r.z, ...(r.pattern ? [r.pattern] : []), ...(r.scores ? [r.scores] : [])];
    });
  }
}

async function logSoftmax(h: Harness): Promise<void> {
  for (const [n, V] of [[1, 1], [3, 255], [2, 257], [1, 1000], [2, 32000], [126, 512], [17, 3]]) {
    await h.case('logSoftmax', `[${n},${V}]`, [h.x([n, V], 5)], (b, [x]) => b.logSoftmax(x));
  }
}

/**
 * k ≤ 16 takes the selection passes (one pass when C ≤ 128, several when C is larger), larger k
 * the chunk kernel; ties must go to the lower column however the entries were dealt.
 */
async function topk(h: Harness): Promise<void> {
  const run = async (name: string, x: Host, k: number): Promise<void> => {
    await h.case('topk', name, [x], async (b, [t]) => {
      const r = await b.topk(t, k);
      return [r.values, Float32Array.from(r.indices)];
    }, 0);
  };
  const shapes = [[3, 1, 1], [2, 1023, 5], [2, 1025, 5], [3, 5000, 50], [1, 7, 7], [2, 2048, 1030], [126, 512, 5], [4, 128, 16], [3, 129, 16], [2, 40000, 16], [5, 300, 17], [1, 16, 16]];
  for (const [n, C, k] of shapes) await run(`[${n},${C}] k=${k}`, h.x([n, C]), k);
  for (const k of [40, 5, 16]) {
    const ties = h.x([2, 3000]);
    for (let i = 0; i < ties.data.length; i++) ties.data[i] = Math.floor(h.rand() * 10);
    await run(`[2,3000] integer values (ties across chunks and invocations) k=${k}`, ties, k);
  }
  const flat = h.x([3, 700]);
  flat.data.fill(-2);
  await run('[3,700] all equal k=9', flat, 9);
}

/** Every RowOp kind on vector `v` (the replacement for patch). */
const ROW_OPS: [string, (v: Float32Array) => RowOp][] = [
  ['add α=2.5', (v) => ({ kind: 'add', v, alpha: 2.5 })],
  ['add_norm_preserving α=3', (v) => ({ kind: 'add_norm_preserving', v, alpha: 3 })],
  ['rotate θ=0.7', (v) => ({ kind: 'rotate', v, theta: 0.7 })],
  ['rotate t=0.3', (v) => ({ kind: 'rotate', v, t: 0.3 })],
  ['project_out', (v) => ({ kind: 'project_out', v })],
  ['set', (v) => ({ kind: 'set', v })],
  ['patch', (v) => ({ kind: 'patch', replacement: v })],
];

async function rowOps(h: Harness): Promise<void> {
  const run = async (name: string, n: number, W: number, op: (v: Float32Array) => RowOp, zeroRow = false): Promise<void> => {
    const rows = Uint8Array.from({ length: n }, (_, i) => (i % 3 === 1 ? 0 : 1));
    const x = h.x([n, W], 2);
    if (zeroRow) x.data.fill(0, 0, W);
    const v = randn(h.rand, op(new Float32Array(0)).kind === 'patch' ? n * W : W);
    await h.case('rowOp', `${name} [${n},${W}]`, [x], (b, [t]) => b.rowOp(t, op(v), rows));
  };
  for (const [n, W] of [[6, 37], [4, 300], [1, 1]]) {
    await run('add α=2.5', n, W, (v) => ({ kind: 'add', v, alpha: 2.5 }));
    await run('add_norm_preserving α=3', n, W, (v) => ({ kind: 'add_norm_preserving', v, alpha: 3 }));
    await run('project_out', n, W, (v) => ({ kind: 'project_out', v }));
    await run('set', n, W, (v) => ({ kind: 'set', v }));
    await run('patch', n, W, (v) => ({ kind: 'patch', replacement: v }));
  }
  for (const [n, W] of [[6, 37], [4, 300], [2, 2]]) {
    await run('rotate θ=0.7', n, W, (v) => ({ kind: 'rotate', v, theta: 0.7 }));
    await run('rotate θ=2.5', n, W, (v) => ({ kind: 'rotate', v, theta: 2.5 }));
    await run('rotate θ=−4', n, W, (v) => ({ kind: 'rotate', v, theta: -4 }));
    await run('rotate t=0.3', n, W, (v) => ({ kind: 'rotate', v, t: 0.3 }));
    await run('rotate t=1', n, W, (v) => ({ kind: 'rotate', v, t: 1 }));
  }
  await run('rotate θ=1 with a zero row', 3, 16, (v) => ({ kind: 'rotate', v, theta: 1 }), true);
  await run('project_out v=0', 3, 16, () => ({ kind: 'project_out', v: new Float32Array(16) }));
  await rowOpOverflow(h);
  await rowOpGroups(h);
}

/**
 * Scale before squaring (issue #8): doses whose h + αv overflows float32 (α = 1e39 is above the
 * float32 maximum) and activations whose squares overflow (|h| ~ 1e20) give the CPU backend's
 * result — add_norm_preserving keeps ‖h‖ (it used to return 0 on WebGPU), rotate and project_out
 * stay finite — on both kernel shapes (W = 37 and 300, wider than a 'gpu' workgroup).
 */
async function rowOpOverflow(h: Harness): Promise<void> {
  const rows = Uint8Array.of(1, 0, 1);
  // Outputs of |h| ~ 1e20 are compared in units of 1e20: an error is judged against the rows' scale,
  // not against an element that cancels to near 0 (the metric divides by max(1, |reference|)).
  const scaled = (op: RowOp) => async (b: Backend, [t]: Tensor[]): Promise<Float32Array[]> => {
    const y = b.rowOp(t, op, rows);
    const out = (await b.read(y)).map((x) => x / 1e20);
    b.release(y);
    return [out];
  };
  for (const W of [37, 300]) {
    const v = randn(h.rand, W);
    const big = h.x([3, W], 1e20);
    await h.case('rowOp', `add_norm_preserving α=1e39 [3,${W}]`, [h.x([3, W], 2)], (b, [t]) => b.rowOp(t, { kind: 'add_norm_preserving', v, alpha: 1e39 }, rows));
    await h.case('rowOp', `add_norm_preserving α=−1e30 [3,${W}]`, [h.x([3, W], 2)], (b, [t]) => b.rowOp(t, { kind: 'add_norm_preserving', v, alpha: -1e30 }, rows));
    await h.case('rowOp', `add_norm_preserving α=3, |h|~1e20 [3,${W}]`, [big], scaled({ kind: 'add_norm_preserving', v, alpha: 3 }));
    await h.case('rowOp', `rotate θ=0.7, |h|~1e20 [3,${W}]`, [big], scaled({ kind: 'rotate', v, theta: 0.7 }));
    await h.case('rowOp', `rotate t=0.5, |v|~1e20 [3,${W}]`, [h.x([3, W])], (b, [t]) => b.rowOp(t, { kind: 'rotate', v: v.map((x) => x * 1e20), t: 0.5 }, rows));
    await h.case('rowOp', `project_out, |h|~1e20 [3,${W}]`, [big], scaled({ kind: 'project_out', v }));
  }
}

/**
 * Per-head steering (RowGroups, attn.hook_z): every kind on several head sizes (1, 8 as in
 * stories260K, 24, 37, 300 — wider than a 'gpu' workgroup), subsets of heads (one, several out of
 * order, all, none) and row masks (alternate, decode n = 1, none); norms, dots and angles per head.
 * Then the claim that unselected rows and heads come back bit for bit.
 */
async function rowOpGroups(h: Harness): Promise<void> {
  type Config = { n: number; H: number; d: number; heads: number[]; rows: (r: number) => number };
  const configs: Config[] = [
    { n: 5, H: 8, d: 8, heads: [0, 3, 7], rows: (r) => (r % 2 === 0 ? 1 : 0) },
    { n: 1, H: 4, d: 16, heads: [2], rows: () => 1 },
    { n: 4, H: 6, d: 24, heads: [5, 1, 2, 3, 4, 0], rows: (r) => (r === 2 ? 0 : 1) },
    { n: 3, H: 3, d: 37, heads: [1], rows: () => 1 },
    { n: 2, H: 2, d: 300, heads: [1], rows: (r) => r },
    { n: 3, H: 5, d: 1, heads: [0, 4], rows: () => 1 },
    { n: 3, H: 4, d: 8, heads: [], rows: () => 1 },
    { n: 3, H: 4, d: 8, heads: [1, 2], rows: () => 0 },
  ];
  const runs: { c: Config; name: string; op: RowOp; x: Host; rows: Uint8Array }[] = [];
  for (const c of configs) {
    const W = c.H * c.d;
    const rows = Uint8Array.from({ length: c.n }, (_, r) => c.rows(r));
    for (const [label, make] of ROW_OPS) {
      if (c.d === 1 && label.startsWith('rotate')) continue; // a 1-D head is always parallel to v
      const op = make(randn(h.rand, label === 'patch' ? c.n * W : c.d));
      const x = h.x([c.n, W], 2);
      const name = `${label} [${c.n},${c.H}×${c.d}] heads [${c.heads}] rows ${Array.from(rows).join('')}`;
      runs.push({ c, name, op, x, rows });
      await h.case('rowOp groups', name, [x], (b, [t]) => b.rowOp(t, op, rows, { size: c.d, indices: c.heads }));
    }
  }

  await h.check('rowOp with groups leaves unselected rows and heads bit-identical to the input, every kind', async () => {
    for (const { c, name, op, x, rows } of runs) {
      const t = h.gpu.upload(x.data, x.shape);
      const y = h.gpu.rowOp(t, op, rows, { size: c.d, indices: c.heads });
      const got = new Uint32Array((await h.gpu.read(y)).buffer);
      h.gpu.release(t); h.gpu.release(y);
      const want = new Uint32Array(x.data.buffer, x.data.byteOffset, x.data.length);
      const W = c.H * c.d;
      for (let r = 0; r < c.n; r++) for (let g = 0; g < c.H; g++) {
        if (rows[r] && c.heads.includes(g)) continue;
        for (let i = r * W + g * c.d; i < r * W + (g + 1) * c.d; i++) {
          if (got[i] !== want[i]) return `${name}: row ${r} head ${g} changed at column ${i - r * W}`;
        }
      }
    }
    return true;
  });

  await h.check('rowOp refuses a group size that does not divide the row, a head out of range and a vector of the wrong length', () => {
    const t = h.gpu.upload(randn(h.rand, 2 * 12), [2, 12]);
    const rows = Uint8Array.of(1, 1);
    const add = (len: number): RowOp => ({ kind: 'add', v: new Float32Array(len), alpha: 1 });
    const results = [
      throwsMatching(() => h.gpu.rowOp(t, add(5), rows, { size: 5, indices: [0] }), /group size 5 does not divide the row width 12/),
      throwsMatching(() => h.gpu.rowOp(t, add(4), rows, { size: 4, indices: [3] }), /group 3 is outside \[0, 3\)/),
      throwsMatching(() => h.gpu.rowOp(t, add(12), rows, { size: 4, indices: [0] }), /vector has 12 values, expected 4/),
    ];
    h.gpu.release(t);
    return results.find((r) => r !== true) ?? true;
  });
}

async function behaviour(h: Harness): Promise<void> {
  const g = h.gpu;
  await h.check('description names the adapter', () => (/WebGPU: \S/.test(g.description) && !/unknown adapter/.test(g.description) ? true : g.description));

  await h.check('a tensor over maxStorageBufferBindingSize is refused with its size and the limit', () => {
    const limit = Math.min(g.device.limits.maxStorageBufferBindingSize, g.device.limits.maxBufferSize);
    const n = limit / 4 + 1;
    const r1 = throwsMatching(() => g.upload(new Float32Array(1), [n]), new RegExp(`${n * 4} bytes`), new RegExp(`${limit} bytes`), /maxStorageBufferBindingSize/);
    const r2 = throwsMatching(() => g.zeros([2, n]), new RegExp(`${n * 8} bytes`), new RegExp(`${limit} bytes`));
    return r1 === true ? r2 : r1;
  });

  await h.check('binary16 rounding agrees with Math.f16round (nearest even, subnormals, overflow)', () => {
    const f16round = (Math as { f16round?: (x: number) => number }).f16round;
    if (!f16round) return 'Math.f16round is missing in this browser';
    const values = [0, -0, 1, -2.5, 65504, 65519, 65520, 1e6, -1e6, 6e-8, 2 ** -25, 3 * 2 ** -25, 2 ** -26, 1e-5, 1 + 2 ** -11, 1 + 3 * 2 ** -11, Infinity, -Infinity, ...randn(h.rand, 2000, 3), ...randn(h.rand, 500, 1e-5)];
    for (const v of values) {
      const got = fromF16Bits(toF16Bits(v)), want = f16round(v);
      if (!Object.is(got, want)) return `${v} → ${got}, Math.f16round gives ${want}`;
    }
    return Number.isNaN(fromF16Bits(toF16Bits(NaN))) ? true : 'NaN not preserved';
  });

  await h.check('an f16 weight reads back rounded and is refused by ops other than linear', async () => {
    const w = randn(h.rand, 35);
    const t = g.uploadF16(w, [5, 7]);
    const back = await g.read(t);
    const d = diff(back, unpackF16(packF16(w), 35));
    const r = throwsMatching(() => g.add(t, t), /f16/);
    g.release(t);
    return d.maxErr === 0 ? r : `read-back differs by ${d.maxErr}`;
  });

  await h.check('embed rejects a token id outside the vocabulary', () => {
    const t = g.upload(new Float32Array(12), [4, 3]);
    const r = throwsMatching(() => g.embed(t, Int32Array.of(1, 4), 1), /token id 4/);
    g.release(t);
    return r;
  });

  await h.check('zeros() is zero even in a reused pool buffer', async () => {
    const a = g.upload(Float32Array.from({ length: 300 }, () => 7), [300]);
    g.release(a);
    const z = g.zeros([300]);
    const r = await g.read(z);
    g.release(z);
    return r.every((x) => x === 0) ? true : 'non-zero entries';
  });

  await h.check('released buffers are reused: repeated work does not grow memory or pipelines', async () => {
    const data = randn(h.rand, 4096);
    const step = async (): Promise<void> => {
      const a = g.upload(data, [64, 64]);
      const b = g.linear(a, a);
      const c = g.add(b, a);
      await g.read(c);
      for (const t of [a, b, c]) g.release(t);
    };
    await step();
    await step();
    const before = g.memoryStats();
    for (let i = 0; i < 10; i++) await step();
    const after = g.memoryStats();
    return after.buffers === before.buffers && after.pipelines === before.pipelines ? true : `before ${JSON.stringify(before)}, after ${JSON.stringify(after)}`;
  });

  await h.check('more dispatches than one batch holds (600 chained adds) give the CPU result', async () => {
    const data = randn(h.rand, 1000);
    const chain = async (b: Backend): Promise<Float32Array> => {
      const x = b.upload(data, [1000]);
      let y = b.clone(x);
      for (let i = 0; i < 600; i++) { const z = b.add(y, x); b.release(y); y = z; }
      const r = await b.read(y);
      b.release(x); b.release(y);
      return r;
    };
    const d = diff(await chain(g), await chain(h.cpu));
    return d.maxErr <= TOL ? true : `max error ${d.maxErr}`;
  });

  await h.check('a buffer released and refilled within one batch does not disturb work recorded before', async () => {
    const a0 = randn(h.rand, 512), a1 = randn(h.rand, 512);
    const a = g.upload(a0, [512]);
    const b = g.add(a, a);
    g.release(a);
    const c = g.upload(a1, [512]); // takes a's buffer from the pool, before b's add is submitted
    const d = g.add(c, c);
    const [rb, rd] = [await g.read(b), await g.read(d)];
    for (const t of [b, c, d]) g.release(t);
    const eb = diff(rb, a0.map((x) => 2 * x)), ed = diff(rd, a1.map((x) => 2 * x));
    return eb.maxErr === 0 && ed.maxErr === 0 ? true : `errors ${eb.maxErr}, ${ed.maxErr}`;
  });

  await h.check('after device loss every op throws "GPU device lost … reload the model" and `lost` resolves', async () => {
    const b = await WebGpuBackend.create();
    const x = b.upload(new Float32Array(8), [8]);
    b.device.destroy();
    const info = await b.lost;
    const r = throwsMatching(() => b.add(x, x), /^GPU device lost \(destroyed/, /reload the model/);
    if (r !== true) return r;
    if (b.lostReason === null || info.reason !== 'destroyed') return `lostReason ${b.lostReason}, info.reason ${info.reason}`;
    return throwsMatching(() => b.upload(new Float32Array(1), [1]), /GPU device lost/);
  });

  await h.check('dispose() destroys every buffer and later ops throw', async () => {
    const b = await WebGpuBackend.create();
    const x = b.upload(new Float32Array(100), [100]);
    await b.read(b.add(x, x));
    b.dispose();
    const s = b.memoryStats();
    if (s.buffers !== 0) return `${s.buffers} buffers left`;
    return throwsMatching(() => b.zeros([1]), /disposed/);
  });
}

window.runKernelTests = async (): Promise<KernelReport> => {
  const gpu = await WebGpuBackend.create();
  const tuning = gpu.tuning;
  const otherTuning: KernelTuning = tuning === 'cpu' ? 'gpu' : 'cpu';
  const other = await WebGpuBackend.create({ tuning: otherTuning });
  const splitting = await WebGpuBackend.create({ maxWeightBufferBytes: SPLIT_BYTES });
  const otherSplitting = await WebGpuBackend.create({ maxWeightBufferBytes: SPLIT_BYTES, tuning: otherTuning });
  const h = new Harness(gpu);
  const o = new Harness(other, ` [${otherTuning} kernels]`);
  try {
    for (const part of [copies, linear, matmulVec4, linearFused, qkvRope, linearF16, tablesF16, elementwise, saeActivations, norms, rope, attention, logSoftmax, topk, rowOps, behaviour]) await part(h);
    await splitWeights(h, splitting);
    await linearQuant(gpu, h.cpu, h.cases);
    await backwardKernels(gpu, h.cpu, h.cases, splitting);
    // the ops with a kernel per tuning, again with the other tuning's kernels on the same adapter
    for (const part of [linear, matmulVec4, linearFused, qkvRope, linearF16, attention, logSoftmax, rowOps, saeActivations]) await part(o);
    await splitWeights(o, otherSplitting);
    await linearQuant(other, o.cpu, o.cases);
    await backwardKernels(other, o.cpu, o.cases, otherSplitting);
  } finally {
    for (const b of [gpu, other, splitting, otherSplitting]) b.dispose();
  }
  return { adapter: gpu.description, tuning, cases: [...h.cases, ...o.cases], checks: [...h.checks, ...o.checks] };
};
