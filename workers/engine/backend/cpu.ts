import type { Activation, AttentionBackwardParams, AttentionGrads, AttentionParams, AttentionResult, Backend, RowGroups, RowOp, Tensor } from './backend';
import { linearSumShape, shapeSize } from './backend';
import { linearCpu } from '../ops/linear.cpu';
import { layerNormCpu, rmsNormCpu } from '../ops/norm.cpu';
import { ropeCpu } from '../ops/rope.cpu';
import { attentionCpu } from '../ops/attention.cpu';
import { activate, actCpu, gatedActCpu } from '../ops/activation.cpu';
import { logSoftmaxCpu, softcapCpu, topkCpu } from '../ops/logits.cpu';
import { moeRouteCpu } from '../ops/moe_route.cpu';
import { rowOpCpu } from '../ops/row_op.cpu';
import { saeActivationCpu } from '../ops/sae_act.cpu';
import { layerNormBackwardCpu, rmsNormBackwardCpu } from '../ops/norm_backward.cpu';
import { actBackwardCpu, gatedActBackwardCpu } from '../ops/activation_backward.cpu';
import { attentionBackwardCpu } from '../ops/attention_backward.cpu';
import { linearBackwardCpu, stackTransposed } from '../ops/linear_backward.cpu';
import { WasmGemm, type Resident } from './wasm_gemm';
import { dequantise, dequantiseRows, formatLabel, QK, quantBytes, type QuantFormat, type QuantizedMatrix } from './quant';
import { linearQuantCpu, quantSlabRows } from '../ops/linear_quant.cpu';
import { CPU_BACKEND } from './names';

/**
 * Storage shared by the CPU tensors: the values on the JS heap until a matmul moves them into the
 * wasm arena (once; the heap copy is then dropped), and their release from either place.
 */
abstract class ArenaStorage<H extends Float32Array | Uint32Array> {
  released = false;
  /** Its block in the wasm arena, after a matmul used it as a weight. */
  resident: Resident | null = null;
  constructor(protected host: H | null, protected readonly arena: WasmGemm | null) {}

  /** The values: the arena block's view once resident (valid until the arena grows), else the heap copy. */
  protected stored(view: (arena: WasmGemm, r: Resident) => H): H {
    if (this.released) throw new Error('tensor was released');
    return this.resident ? view(this.arena!, this.resident) : this.host!;
  }

  /** Whether the values may move into the arena (all may, by default). */
  protected placeable(): boolean { return true; }

  /** Moves the values into the wasm arena (once). @returns the block, or null when it does not fit. */
  place(): Resident | null {
    if (!this.resident && this.arena && this.host && this.placeable()) {
      this.resident = this.arena.place(this.host);
      if (this.resident) this.host = null;
    }
    return this.resident;
  }

  /** Frees the values. @returns the heap copy when it held them (the caller may reuse it), else null. */
  release(): H | null {
    const host = this.released || this.resident ? null : this.host;
    if (this.resident) this.arena!.release(this.resident);
    this.resident = null;
    this.host = null;
    this.released = true;
    return host;
  }
}

class CpuTensor extends ArenaStorage<Float32Array> implements Tensor {
  readonly size: number;

  /** @param data the values on the JS heap, or a block of the arena that already holds them. */
  constructor(readonly shape: readonly number[], data: Float32Array | Resident, arena: WasmGemm | null) {
    const size = shapeSize(shape);
    if (data.length !== size) throw new Error(`tensor data has ${data.length} values, shape [${shape}] needs ${size}`);
    super(data instanceof Float32Array ? data : null, arena);
    if (!(data instanceof Float32Array)) this.resident = data;
    this.size = size;
  }

  get data(): Float32Array {
    return this.stored((a, r) => a.data(r));
  }
}

/**
 * A block-quantised weight (backend/quant.ts) in its packed words: only linear() accepts it (as its
 * weight); read() returns the dequantised values. Rows of whole blocks move into the wasm arena on
 * first use (the fused quantised GEMM reads them there); padded rows stay on the JS heap and are
 * dequantised a slab of rows at a time.
 */
class CpuQuantTensor extends ArenaStorage<Uint32Array> implements Tensor {
  readonly size: number;
  readonly shape: readonly number[];
  readonly format: QuantFormat;
  constructor(q: QuantizedMatrix, arena: WasmGemm | null) {
    super(q.words, arena);
    this.shape = q.shape;
    this.format = q.format;
    this.size = q.shape[0] * q.shape[1];
  }
  /** The packed matrix (its words view the arena once resident: valid until the arena grows). */
  get q(): QuantizedMatrix {
    return { format: this.format, shape: this.shape as [number, number], words: this.stored((a, r) => a.words(r)) };
  }
  /** Rows of whole blocks only move into the arena. */
  protected placeable(): boolean { return this.shape[1] % QK === 0; }
  /** Bytes of the packed storage. */
  get bytes(): number { return quantBytes(this.format, this.shape[0], this.shape[1]); }
}

function d(t: Tensor): Float32Array {
  if (t instanceof CpuQuantTensor) throw new Error(`tensor [${t.shape}] is stored as ${formatLabel(t.format)}, which only linear() accepts (as its weight)`);
  if (!(t instanceof CpuTensor)) throw new Error('tensor belongs to another backend');
  return t.data;
}

/**
 * Bytes of released tensors' heap arrays kept for reuse. A new Float32Array is zeroed memory that the
 * OS maps in on first touch: a prefill step makes ~450 arrays of 0.1–0.4 MB, and where page faults
 * are slow (Chromium's allocator returns freed pages to the OS; ~20 µs a page in a sandboxed VM) that
 * costs as much as the matmuls. Reused arrays are already mapped.
 */
const SPARE_BYTES = 64 << 20;

/** A transposed copy of weights stacked by rows (CpuBackend.linearBackwardSum's GEMM operand) and the weights, in order. */
interface TransposedStack { parts: readonly Tensor[]; t: CpuTensor }

/** Rows of dy up to which linearBackward multiplies W as stored (linearBackwardCpu) instead of a transposed copy in the GEMM. */
const FEW_ROWS = 8;

const cols = (t: Tensor): number => t.shape[t.shape.length - 1];
const rowsOf = (t: Tensor): number => t.size / cols(t);

/**
 * Float32 CPU backend: the fallback where WebGPU is missing (and in Node), and the oracle every WGSL
 * kernel is tested against. Matrix products run in WebAssembly SIMD (wasm_gemm.ts; f32 accumulators)
 * where the engine has it, on `threads` threads where threads are available (gemm_threads.ts;
 * bit-identical to one thread), else in the scalar TypeScript loop (ops/linear.cpu.ts, float64
 * accumulation, also chosen with `{ simd: false }`); the other ops are TypeScript, accumulating in
 * float64 where JS does.
 */
export class CpuBackend implements Backend {
  readonly kind = 'cpu' as const;
  private readonly reason: string | undefined;
  /** The WASM SIMD GEMM and the memory the weights move into; null = scalar TypeScript matmul. */
  private readonly arena: WasmGemm | null;
  private live = 0;
  /** Released tensors' heap arrays by length, reused by alloc() (at most SPARE_BYTES in all). */
  private readonly spare = new Map<number, Float32Array[]>();
  private spareBytes = 0;
  /**
   * Transposed float32 copies [in, Σ out] of weights stacked by rows (one weight for linearBackward,
   * the list a linearBackwardSum reads), made by the first product that needs one and kept: listed
   * under each of its weights, freed when any of them is released.
   */
  private readonly transposed = new WeakMap<Tensor, TransposedStack[]>();
  /** Products that fell back to the scalar loop although the WASM arena exists (it could not grow). */
  private fallbacks = 0;

  /**
   * @param reason why the CPU is used (shown in the description), when it is a fallback.
   * @param options simd: false keeps the scalar TypeScript matmul (default: WASM SIMD where available);
   *   threads: threads for the WASM matmul (default 1; see defaultThreads() in gemm_threads.ts; 1
   *   where threads are unavailable, e.g. a page that is not cross-origin isolated); parallelMacs:
   *   multiply-adds from which a product is split between them (WasmGemm.create).
   */
  constructor(reason?: string, options: { simd?: boolean; threads?: number; parallelMacs?: number } = {}) {
    this.arena = options.simd === false ? null : WasmGemm.create({ threads: options.threads, parallelMacs: options.parallelMacs });
    this.reason = reason;
  }

  /**
   * "CPU backend (TypeScript + WASM SIMD, 2 threads)" or "CPU backend (fallback: reason; 2 threads)":
   * one name for this backend wherever it is shown (the UI's backend menu says "CPU backend" too);
   * the threads counted are those running now (helpers that have started, plus this one).
   */
  get description(): string {
    const n = this.runningThreads;
    const what = this.arena ? `TypeScript + WASM SIMD${n > 1 ? `, ${n} threads` : ''}` : 'TypeScript';
    return this.reason ? `${CPU_BACKEND} (fallback: ${this.reason}${n > 1 ? `; ${n} threads` : ''})` : `${CPU_BACKEND} (${what})`;
  }

  /** Threads the matrix products run on (1 without WASM or where threads are unavailable). */
  get threads(): number { return this.arena?.threads ?? 1; }

  /** Threads multiplying now: this one and the helpers that have started (see whenStarted()). */
  get runningThreads(): number { return this.arena?.runningThreads ?? 1; }

  /** Shares of matrix products computed by the helper threads so far (0 on one thread). */
  get helperParts(): number { return this.arena?.helperParts ?? 0; }

  /**
   * Matrix products that ran in the scalar TypeScript loop (float64 sums: other bits than the WASM
   * GEMM's) because the wasm arena could not hold the weight or the scratch space; 0 without an
   * arena (every product is scalar then). Tests that compare bits across backends check it.
   */
  get scalarFallbacks(): number { return this.fallbacks; }

  /** Bytes of WebAssembly memory the WASM SIMD arena has allocated (0 with the scalar matmul), for benchmarks. */
  get wasmMemoryBytes(): number { return this.arena?.memoryBytes ?? 0; }

  /** Resolves once every matmul thread has started (products use fewer threads until then). */
  async whenStarted(): Promise<void> { await this.arena?.whenStarted(); }

  /**
   * An array of n floats for an op's result: a released tensor's array of that length when one is
   * kept (its old values: the op must write every element), else a new one.
   */
  private alloc(n: number): Float32Array {
    const a = this.spare.get(n)?.pop();
    if (!a) return new Float32Array(n);
    this.spareBytes -= 4 * n;
    return a;
  }

  /** Keeps a heap array no tensor uses any more for alloc() (within SPARE_BYTES). */
  private recycle(a: Float32Array | null): void {
    if (!a || a.length === 0 || this.spareBytes + 4 * a.length > SPARE_BYTES) return;
    const list = this.spare.get(a.length);
    if (list) list.push(a); else this.spare.set(a.length, [a]);
    this.spareBytes += 4 * a.length;
  }

  private t(data: Float32Array, shape: readonly number[]): Tensor {
    const t = new CpuTensor(shape, data, this.arena);
    this.live++;
    return t;
  }

  /**
   * Tensors created and not yet released (weights, KV cache, live intermediates), whether their floats
   * are on the JS heap or in the wasm arena: flat across runs unless a tensor leaks.
   */
  liveTensors(): number {
    return this.live;
  }

  upload(data: Float32Array, shape: readonly number[]): Tensor {
    const a = this.alloc(data.length);
    a.set(data);
    return this.t(a, shape);
  }
  adopt(data: Float32Array, shape: readonly number[]): Tensor { return this.t(data, shape); }
  zeros(shape: readonly number[]): Tensor { return this.t(this.alloc(shapeSize(shape)).fill(0), shape); }
  async read(t: Tensor): Promise<Float32Array> {
    if (t instanceof CpuQuantTensor) {
      if (t.released) throw new Error('tensor was released');
      return dequantise(t.q);
    }
    return new Float32Array(d(t));
  }

  readSync(t: Tensor): Float32Array {
    if (t instanceof CpuQuantTensor) return dequantise(t.q);
    return new Float32Array(d(t));
  }

  /**
   * Keeps a block-quantised weight [out, in] in its packed form (memory: quantBytes); only linear()
   * accepts the result, as its weight.
   */
  uploadQuant(q: QuantizedMatrix): Tensor {
    this.live++;
    return new CpuQuantTensor({ ...q, words: new Uint32Array(q.words) }, this.arena);
  }

  release(t: Tensor): void {
    for (const st of this.transposed.get(t) ?? []) this.dropStack(st);
    if (t instanceof CpuQuantTensor) {
      if (!t.released) this.live--;
      t.release();
      return;
    }
    const c = t as CpuTensor;
    if (!c.released) this.live--;
    this.recycle(c.release());
  }
  async sync(): Promise<void> {}
  /** Stops the matmul threads (tensors stay readable; products then run on this thread) and drops the kept arrays. */
  dispose(): void {
    this.arena?.dispose();
    this.spare.clear();
    this.spareBytes = 0;
  }

  clone(t: Tensor): Tensor { return this.upload(d(t), t.shape); }

  embed(table: Tensor, ids: Int32Array, scale: number): Tensor {
    const [V, D] = table.shape;
    const src = d(table);
    const y = this.alloc(ids.length * D);
    ids.forEach((id, r) => {
      if (!(id >= 0 && id < V)) throw new Error(`token id ${id} is outside the vocabulary [0, ${V})`);
      for (let i = 0; i < D; i++) y[r * D + i] = src[id * D + i] * scale;
    });
    return this.t(y, [ids.length, D]);
  }

  sliceRows(table: Tensor, start: number, n: number): Tensor {
    const D = cols(table);
    if (start < 0 || start + n > rowsOf(table)) throw new Error(`rows ${start}..${start + n} outside [0, ${rowsOf(table)})`);
    return this.upload(d(table).subarray(start * D, (start + n) * D), [n, D]);
  }

  concatRows(parts: readonly Tensor[]): Tensor {
    const D = cols(parts[0]);
    const n = parts.reduce((s, p) => s + rowsOf(p), 0);
    const y = this.alloc(n * D);
    let o = 0;
    for (const p of parts) {
      if (cols(p) !== D) throw new Error('concatRows: row widths differ');
      y.set(d(p), o);
      o += p.size;
    }
    return this.t(y, [n, D]);
  }

  linear(x: Tensor, w: Tensor, bias?: Tensor): Tensor {
    const [nOut, nIn] = w.shape;
    if (cols(x) !== nIn) throw new Error(`linear: x has ${cols(x)} columns, weight expects ${nIn}`);
    const n = rowsOf(x);
    if (w instanceof CpuQuantTensor) return this.t(this.linearQuant(x, w, bias, n), [n, nOut]);
    const resident = this.arena && (w as CpuTensor).place();
    const out = resident ? this.alloc(n * nOut) : undefined;
    const y = resident && this.arena!.linear(() => d(x), resident, bias && (() => d(bias)), n, nIn, nOut, out);
    if (!y) {
      this.recycle(out ?? null);
      if (this.arena) this.fallbacks++;
    }
    return this.t(y || linearCpu(d(x), d(w), bias && d(bias), n, nIn, nOut), [n, nOut]);
  }

  /**
   * x · dequant(w)ᵀ + bias: on the resident blocks (rows of whole blocks) WasmGemm.linearQuant (fused
   * GEMV for decode, WASM-dequantised slabs for prefill); else dequantising a slab of weight rows at a
   * time in TypeScript into the WASM f32 GEMM; else the scalar loop.
   */
  private linearQuant(x: Tensor, w: CpuQuantTensor, bias: Tensor | undefined, n: number): Float32Array {
    if (w.released) throw new Error('tensor was released');
    const [nOut, nIn] = w.shape;
    const resident = w.place();
    const fused = resident && this.arena!.linearQuant(() => d(x), resident, w.format, bias && (() => d(bias)), n, nIn, nOut);
    if (fused) return fused;
    const fill = (dst: Float32Array, row0: number, rows: number) => dequantiseRows(w.q, row0, rows, dst);
    const y = this.arena?.linearRows(() => d(x), fill, bias && (() => d(bias)), n, nIn, nOut, quantSlabRows(nIn));
    if (y) return y;
    if (this.arena) this.fallbacks++;
    return linearQuantCpu(d(x), w.q, bias && d(bias), n);
  }

  sliceCols(x: Tensor, start: number, width: number): Tensor {
    const C = cols(x), n = rowsOf(x), src = d(x);
    const y = this.alloc(n * width);
    for (let r = 0; r < n; r++) y.set(src.subarray(r * C + start, r * C + start + width), r * width);
    return this.t(y, [n, width]);
  }

  add(a: Tensor, b: Tensor): Tensor {
    if (a.size !== b.size) throw new Error('add: sizes differ');
    const x = d(a), y = d(b), z = this.alloc(a.size);
    for (let i = 0; i < z.length; i++) z[i] = x[i] + y[i];
    return this.t(z, a.shape);
  }

  sub(a: Tensor, b: Tensor): Tensor {
    if (a.size !== b.size) throw new Error('sub: sizes differ');
    const x = d(a), y = d(b), z = this.alloc(a.size);
    for (let i = 0; i < z.length; i++) z[i] = x[i] - y[i];
    return this.t(z, a.shape);
  }

  rmsNorm(x: Tensor, w: Tensor, eps: number, offset: number): Tensor {
    return this.t(rmsNormCpu(d(x), d(w), eps, offset, this.alloc(x.size)), x.shape);
  }

  layerNorm(x: Tensor, w: Tensor, b: Tensor | undefined, eps: number): Tensor {
    return this.t(layerNormCpu(d(x), d(w), b && d(b), eps, this.alloc(x.size)), x.shape);
  }

  rope(x: Tensor, nHeads: number, headDim: number, rotaryDims: number, pos0: number, invFreq: Float32Array): Tensor {
    return this.t(ropeCpu(d(x), rowsOf(x), nHeads, headDim, rotaryDims, pos0, invFreq, this.alloc(x.size)), x.shape);
  }

  writeRows(cache: Tensor, x: Tensor, offset: number): void {
    if (cols(cache) !== cols(x)) throw new Error('writeRows: widths differ');
    if (offset + rowsOf(x) > rowsOf(cache)) throw new Error(`writeRows: rows ${offset}..${offset + rowsOf(x)} exceed the cache (${rowsOf(cache)} rows)`);
    d(cache).set(d(x), offset * cols(cache));
  }

  attention(q: Tensor, kCache: Tensor, vCache: Tensor, p: AttentionParams): AttentionResult {
    const out = this.alloc(p.n * p.nHeads * p.headDim);
    const dots = this.arena?.attentionDots(() => d(q), () => d(kCache), () => d(vCache), p, out) ?? undefined;
    const r = attentionCpu(d(q), d(kCache), d(vCache), p, out, dots);
    const T = p.past + p.n;
    return {
      z: this.t(r.z, [p.n, p.nHeads * p.headDim]),
      pattern: r.pattern && this.t(r.pattern, [p.nHeads, p.n, T]),
      scores: r.scores && this.t(r.scores, [p.nHeads, p.n, T]),
    };
  }

  act(x: Tensor, act: Activation): Tensor { return this.t(actCpu(d(x), act, this.alloc(x.size)), x.shape); }
  gatedAct(gate: Tensor, up: Tensor, act: Activation): Tensor {
    if (gate.size !== up.size) throw new Error(`gatedAct: gate has ${gate.size} values, up ${up.size}`);
    const out = this.alloc(gate.size);
    const simd = act === 'silu' ? this.arena?.siluMul(() => d(gate), () => d(up), gate.size, out) : null;
    if (!simd) return this.t(gatedActCpu(d(gate), d(up), act, out), gate.shape);
    // the odd last value, and those outside exp64's reduced range (Math.exp), by the TypeScript definition
    const g = d(gate), u = d(up);
    for (let i = simd.outliers ? 0 : simd.done; i < gate.size; i++) {
      const ax = Math.abs(g[i]);
      if (i < simd.done && ax < 708 && ax >= 3.725290298461914e-9) continue;
      out[i] = activate(g[i], act) * u[i];
    }
    return this.t(out, gate.shape);
  }
  softcap(x: Tensor, cap: number): Tensor { return this.t(softcapCpu(d(x), cap), x.shape); }
  logSoftmax(x: Tensor): Tensor { return this.t(logSoftmaxCpu(d(x), cols(x)), x.shape); }

  gatherCols(x: Tensor, idx: Int32Array): Tensor {
    const C = cols(x), n = rowsOf(x), src = d(x);
    const y = this.alloc(n * idx.length);
    for (let r = 0; r < n; r++) for (let j = 0; j < idx.length; j++) y[r * idx.length + j] = src[r * C + idx[j]];
    return this.t(y, [n, idx.length]);
  }

  moeRoute(logits: Tensor, k: number, normTopk: boolean, forced?: Tensor): { indices: Tensor; weights: Tensor } {
    const n = logits.size / cols(logits);
    if (forced && forced.size !== n * k) throw new Error(`moeRoute: forced ids have ${forced.size} values, expected ${n}×${k}`);
    const r = moeRouteCpu(d(logits), cols(logits), k, normTopk, forced ? d(forced) : undefined);
    return { indices: this.upload(r.indices, [n, k]), weights: this.upload(r.weights, [n, k]) };
  }
  async topk(x: Tensor, k: number): Promise<{ values: Float32Array; indices: Int32Array }> {
    return topkCpu(d(x), cols(x), k);
  }

  rowOp(x: Tensor, op: RowOp, rows: Uint8Array, groups?: RowGroups): Tensor {
    return this.t(rowOpCpu(d(x), cols(x), op, rows, groups), x.shape);
  }

  /** dy [n, out]·w: linearBackwardSum of one part. */
  linearBackward(dy: Tensor, w: Tensor): Tensor { return this.linearBackwardSum([dy], [w]); }

  /**
   * Σ_k dys[k]·ws[k]: up to FEW_ROWS rows by linearBackwardCpu on the weights as stored; more as one
   * GEMM, [dy_1 | … | dy_K] times a transposed copy of the stacked weights (made once per list and
   * kept: one more float32 copy of each weight a backward reaches, counted by model/backward.ts
   * backwardMemory; quantised weights dequantised into it).
   */
  linearBackwardSum(dys: readonly Tensor[], ws: readonly Tensor[]): Tensor {
    const { n, nIn, outs } = linearSumShape(dys, ws);
    const quant = ws.some((w) => w instanceof CpuQuantTensor);
    if (n <= FEW_ROWS && !quant) return this.t(linearBackwardCpu(dys.map(d), ws.map(d), n, outs, nIn), [n, nIn]);
    const wT = this.stackOf(ws, outs, nIn);
    if (dys.length === 1) return this.linear(dys[0], wT);
    // [dy_1 | … | dy_K]: the product's input [n, Σ out]
    const total = wT.shape[1], cat = this.alloc(n * total);
    let c0 = 0;
    dys.forEach((t, k) => {
      const src = d(t), w = outs[k];
      for (let r = 0; r < n; r++) cat.set(src.subarray(r * w, (r + 1) * w), r * total + c0);
      c0 += w;
    });
    const x = this.t(cat, [n, total]);
    const dx = this.linear(x, wT);
    this.release(x);
    return dx;
  }

  /** The kept transposed stack of ws (stackTransposed), made on first use. */
  private stackOf(ws: readonly Tensor[], outs: readonly number[], nIn: number): CpuTensor {
    const hit = this.transposed.get(ws[0])?.find((st) => st.parts.length === ws.length && st.parts.every((p, k) => p === ws[k]));
    if (hit) return hit.t;
    const total = outs.reduce((a, b) => a + b, 0);
    // written straight into an arena block where one fits (no heap copy to allocate and move), the weights' views taken after it grew
    const block = this.arena?.allocate(nIn * total) ?? null;
    const values = ws.map((w) => (w instanceof CpuQuantTensor ? dequantise(w.q) : d(w)));
    const data = block ? stackTransposed(values, outs, nIn, this.arena!.data(block)) : stackTransposed(values, outs, nIn);
    // not a live tensor of the caller's: freed with its weights
    const st: TransposedStack = { parts: [...ws], t: new CpuTensor([nIn, total], block ?? data, this.arena) };
    for (const w of new Set(ws)) this.transposed.set(w, [...(this.transposed.get(w) ?? []), st]);
    return st.t;
  }

  /** Frees a transposed stack and unlists it from each of its weights. */
  private dropStack(st: TransposedStack): void {
    for (const w of new Set(st.parts)) {
      const rest = (this.transposed.get(w) ?? []).filter((x) => x !== st);
      if (rest.length) this.transposed.set(w, rest); else this.transposed.delete(w);
    }
    st.t.release();
  }

  rmsNormBackward(x: Tensor, w: Tensor, eps: number, offset: number, dy: Tensor): Tensor {
    if (x.size !== dy.size || x.size % w.size !== 0) throw new Error(`rmsNormBackward: x [${x.shape}], dy [${dy.shape}] and groups of ${w.size} disagree`);
    return this.t(rmsNormBackwardCpu(d(x), d(w), eps, offset, d(dy), this.alloc(x.size)), x.shape);
  }

  layerNormBackward(x: Tensor, w: Tensor, eps: number, dy: Tensor): Tensor {
    if (x.size !== dy.size || x.size % w.size !== 0) throw new Error(`layerNormBackward: x [${x.shape}], dy [${dy.shape}] and rows of ${w.size} disagree`);
    return this.t(layerNormBackwardCpu(d(x), d(w), eps, d(dy), this.alloc(x.size)), x.shape);
  }

  actBackward(x: Tensor, dy: Tensor, act: Activation): Tensor {
    if (x.size !== dy.size) throw new Error(`actBackward: x has ${x.size} values, dy ${dy.size}`);
    return this.t(actBackwardCpu(d(x), d(dy), act, this.alloc(x.size)), x.shape);
  }

  gatedActBackward(gate: Tensor, up: Tensor, dy: Tensor, act: Activation): { dGate: Tensor; dUp: Tensor } {
    if (gate.size !== up.size || gate.size !== dy.size) throw new Error(`gatedActBackward: gate, up and dy differ in size (${gate.size}, ${up.size}, ${dy.size})`);
    const r = gatedActBackwardCpu(d(gate), d(up), d(dy), act);
    return { dGate: this.t(r.dGate, gate.shape), dUp: this.t(r.dUp, gate.shape) };
  }

  /** ops/attention_backward.cpu.ts with its products in the GEMM (linear() on copies of the operands). */
  attentionBackward(q: Tensor, k: Tensor, v: Tensor, pattern: Tensor, scores: Tensor | undefined, dz: Tensor, p: AttentionBackwardParams): AttentionGrads {
    const T = p.n, qW = p.nHeads * p.headDim, kvW = p.nKvHeads * p.headDim;
    if (q.size !== T * qW || dz.size !== T * qW || k.size !== T * kvW || v.size !== T * kvW || pattern.size !== p.nHeads * T * T || (p.softcap > 0 && scores?.size !== pattern.size)) {
      throw new Error(`attentionBackward: q [${q.shape}], k [${k.shape}], v [${v.shape}], pattern [${pattern.shape}], dz [${dz.shape}] do not fit ${T} positions of ${p.nHeads}/${p.nKvHeads} heads × ${p.headDim}`);
    }
    const mm = (a: Float32Array, b: Float32Array, n: number, kk: number, m: number): Float32Array => {
      const x = this.upload(a, [n, kk]), w = this.upload(b, [m, kk]), y = this.linear(x, w);
      const out = new Float32Array(d(y));
      this.release(x); this.release(w); this.release(y);
      return out;
    };
    const r = attentionBackwardCpu(d(q), d(k), d(v), d(pattern), scores && p.softcap > 0 ? d(scores) : undefined, d(dz), p, mm);
    return { dq: this.t(r.dq, [T, qW]), dk: this.t(r.dk, [T, kvW]), dv: this.t(r.dv, [T, kvW]) };
  }

  saeActivation(pre: Tensor, threshold: Tensor, k: number): Tensor {
    if (threshold.size !== cols(pre)) throw new Error(`saeActivation: threshold has ${threshold.size} entries, hidden_pre has ${cols(pre)} columns`);
    return this.t(saeActivationCpu(d(pre), d(threshold), k), pre.shape);
  }
}
