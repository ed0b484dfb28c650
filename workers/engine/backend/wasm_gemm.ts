import { GEMM_SHARED_WASM_BASE64, GEMM_WASM_BASE64 } from '../ops/gemm.wasm';
import { CONTROL_BYTES, GemmThreads, MAX_THREADS, threadsAvailable } from './gemm_threads';
import { scaleOffset, type QuantFormat } from './quant';
import type { AttentionParams } from './backend';
import type { AttentionDots } from '../ops/attention.cpu';

const PAGE = 65536;
const ALIGN = 64;
const align = (n: number) => Math.ceil(n / ALIGN) * ALIGN;

type GemmFn = (x: number, ldx: number, w: number, ldw: number, y: number, ldy: number, n: number, k: number, m: number) => void;
type QuantGemmFn = (x: number, ldx: number, q: number, s: number, bpr: number, y: number, ldy: number, n: number, m: number) => void;

/** Multiply-adds from which a product is split between threads (below, waking the helpers costs more than it saves). */
export const PARALLEL_MACS = 1 << 17;

/** Rows of x below which a quantised product runs fused; from there on, through dequantised slabs (each weight reused n times). */
export const FUSED_MAX_ROWS = 4;

/** Bytes of f32 weights per dequantised slab of the prefill path (large: each slab is one threaded product). */
const SLAB_BYTES = 1 << 20;

type DequantFn = (q: number, s: number, blocks: number, dst: number) => void;
type ScoresFn = (q: number, qd: number, k: number, ldk: number, s: number, cnt: number, d: number, scale: number) => void;
type MixFn = (s: number, v: number, ldv: number, cnt: number, d: number, z: number) => void;
type SiluMulFn = (g: number, u: number, y: number, n: number) => number;

/** Job kinds of the control block (tools/wasm/gemm_wat.ts, part()). */
const KIND = { f32: 0, q8_0: 1, q4_0: 2 } as const;

/** A block of the arena holding one tensor's floats (a weight that a matmul moved there). */
export interface Resident {
  readonly offset: number;
  readonly length: number;
}

/** The compiled GEMM modules (own memory, shared memory), shared by every arena (compiled once per thread). */
const compiled = new Map<string, WebAssembly.Module | null>();

function gemmModule(base64: string): WebAssembly.Module | null {
  if (!compiled.has(base64)) {
    try {
      const bin = Uint8Array.from(atob(base64), (c) => c.charCodeAt(0));
      compiled.set(base64, WebAssembly.validate(bin) ? new WebAssembly.Module(bin) : null);
    } catch {
      compiled.set(base64, null);
    }
  }
  return compiled.get(base64)!;
}

/**
 * The CPU backend's matrix multiply in WebAssembly SIMD (tools/wasm/gemm_wat.ts), with the memory it
 * works in. Weights live in the arena once multiplied (moved, not copied: the tensor then views the
 * arena), so a decode step streams them straight from wasm memory; activations are copied into a
 * scratch region above the weights for each call (O(n·(k+m)) against the O(n·k·m) product).
 * Wasm32 addresses 4 GiB: a weight that no longer fits stays on the JS heap and the caller falls
 * back to the scalar loop.
 *
 * With threads > 1 (where gemm_threads.ts says threads are available) the memory is shared and
 * helper threads take a share of the w rows of every product of at least PARALLEL_MACS
 * multiply-adds; the results are bit-identical to one thread.
 */
export class WasmGemm {
  private readonly memory: WebAssembly.Memory;
  private readonly gemm: GemmFn;
  private readonly quant: Record<QuantFormat, QuantGemmFn>;
  private readonly dequant: Record<QuantFormat, DequantFn>;
  private readonly part: (ctl: number, t: number) => void;
  private readonly scores: ScoresFn;
  private readonly mix: MixFn;
  private readonly siluMulFn: SiluMulFn;
  private readonly pool: GemmThreads | null;
  private readonly parallelMacs: number;
  private top: number;
  private readonly free = new Map<number, number[]>();
  private f32: Float32Array;

  private constructor(mod: WebAssembly.Module, threads: number, parallelMacs: number) {
    this.parallelMacs = parallelMacs;
    this.memory = threads > 1 ? new WebAssembly.Memory({ initial: 16, maximum: 65536, shared: true }) : new WebAssembly.Memory({ initial: 16 });
    const inst = new WebAssembly.Instance(mod, { env: { memory: this.memory } });
    this.gemm = inst.exports.gemm as GemmFn;
    this.quant = { q8_0: inst.exports.q8gemm as QuantGemmFn, q4_0: inst.exports.q4gemm as QuantGemmFn };
    this.dequant = { q8_0: inst.exports.q8deq as DequantFn, q4_0: inst.exports.q4deq as DequantFn };
    this.part = inst.exports.part as (ctl: number, t: number) => void;
    this.scores = inst.exports.attn_scores as ScoresFn;
    this.mix = inst.exports.attn_mix as MixFn;
    this.siluMulFn = inst.exports.silu_mul as SiluMulFn;
    this.f32 = new Float32Array(this.memory.buffer);
    this.top = threads > 1 ? CONTROL_BYTES : 0;
    this.pool = threads > 1 ? new GemmThreads(this, mod, this.memory, threads) : null;
  }

  /**
   * A new arena, or null where WebAssembly SIMD is unavailable (the scalar loop is used).
   * @param options threads: how many threads multiply (default 1; clamped to [1, MAX_THREADS]; 1
   *   where threads are unavailable: no SharedArrayBuffer, a page that is not cross-origin isolated,
   *   or a thread that may not block); parallelMacs: multiply-adds from which a product is split
   *   (default PARALLEL_MACS; 0 splits every product, for tests).
   */
  static create(options: { threads?: number; parallelMacs?: number } = {}): WasmGemm | null {
    const parallelMacs = options.parallelMacs ?? PARALLEL_MACS;
    const threads = Math.max(1, Math.min(MAX_THREADS, Math.floor(options.threads ?? 1)));
    if (threads > 1 && threadsAvailable()) {
      const mod = gemmModule(GEMM_SHARED_WASM_BASE64);
      try {
        if (mod) return new WasmGemm(mod, threads, parallelMacs);
      } catch {
        // a shared memory or a helper could not be made: one thread
      }
    }
    const mod = gemmModule(GEMM_WASM_BASE64);
    return mod ? new WasmGemm(mod, 1, parallelMacs) : null;
  }

  /** Threads that multiply (1 = this thread alone). */
  get threads(): number { return this.pool?.threads ?? 1; }

  /** Threads running now: this one and the helpers that have started. */
  get runningThreads(): number { return 1 + (this.pool?.ready() ?? 0); }

  /** Resolves once every helper thread has started (products run on fewer threads until then). */
  async whenStarted(): Promise<void> { await this.pool?.whenStarted(); }

  /** Shares of products computed by helper threads so far (0 on one thread). */
  get helperParts(): number { return this.pool?.helperParts() ?? 0; }

  /** Stops the helper threads (the arena then multiplies on this thread). */
  dispose(): void { this.pool?.stop(); }

  /**
   * One product of `kind` with args in the control block's order (f32: x, ldx, w, ldw, y, ldy, n, k,
   * m; quantised: x, ldx, q, s, y, ldy, n, bpr, m), on every thread when it is large enough.
   */
  private product(kind: number, a: readonly number[], macs: number): void {
    if (this.pool && macs >= this.parallelMacs) this.pool.run(this.part, kind, a, a[8]);
    else if (kind === KIND.f32) this.gemm(a[0], a[1], a[2], a[3], a[4], a[5], a[6], a[7], a[8]);
    else this.quant[kind === KIND.q8_0 ? 'q8_0' : 'q4_0'](a[0], a[1], a[2], a[3], a[7], a[4], a[5], a[6], a[8]);
  }

  /** Bytes of the wasm memory as allocated (its buffer's byteLength; it only grows), for benchmarks. */
  get memoryBytes(): number { return this.memory.buffer.byteLength; }

  /** Bytes of wasm memory in use by resident tensors (for tests and benchmarks). */
  get residentBytes(): number { return this.top - [...this.free].reduce((s, [size, offs]) => s + size * offs.length, 0); }

  /** Grows the memory to hold `end` bytes. @returns false when wasm32 cannot. */
  private reserve(end: number): boolean {
    const have = this.memory.buffer.byteLength;
    if (end <= have) return true;
    try {
      this.memory.grow(Math.ceil((end - have) / PAGE));
    } catch {
      return false;
    }
    this.f32 = new Float32Array(this.memory.buffer);
    return true;
  }

  /** Current view of the memory (a new one after growth detaches the old buffer). */
  private view(): Float32Array {
    if (this.f32.buffer !== this.memory.buffer) this.f32 = new Float32Array(this.memory.buffer);
    return this.f32;
  }

  /**
   * A block of `length` floats (or u32 words) in the arena, its old contents left as they are (the
   * caller writes every value, through data() taken after this call: it may grow the memory).
   * @returns the block, or null when the arena cannot grow.
   */
  allocate(length: number): Resident | null {
    const size = align(length * 4);
    let offset = this.free.get(size)?.pop();
    if (offset === undefined) {
      if (!this.reserve(this.top + size)) return null;
      offset = this.top;
      this.top += size;
    }
    return { offset, length };
  }

  /** Moves `data` (floats, or the u32 words of a quantised matrix) into the arena. @returns its block, or null when the arena cannot grow. */
  place(data: Float32Array | Uint32Array): Resident | null {
    const r = this.allocate(data.length);
    if (!r) return null;
    if (data instanceof Float32Array) this.view().set(data, r.offset / 4);
    else new Uint32Array(this.memory.buffer, r.offset, data.length).set(data);
    return r;
  }

  /** The floats of a resident block (a view, valid until the next growth; take it again after). */
  data(r: Resident): Float32Array {
    return this.view().subarray(r.offset / 4, r.offset / 4 + r.length);
  }

  /** The u32 words of a resident block (a view, valid until the next growth). */
  words(r: Resident): Uint32Array {
    return new Uint32Array(this.memory.buffer, r.offset, r.length);
  }

  /** Returns a block to the arena (reused by the next block of the same size). */
  release(r: Resident): void {
    const size = align(r.length * 4);
    const list = this.free.get(size);
    if (list) list.push(r.offset); else this.free.set(size, [r.offset]);
  }

  /** Copies x to scratch byte offset sx and fills y [n, m] at sy with the bias rows (or zeros): the GEMM accumulates into y. */
  private stage(x: () => Float32Array, bias: (() => Float32Array) | undefined, sx: number, sy: number, n: number, m: number): Float32Array {
    const f = this.view();
    f.set(x(), sx / 4);
    const y = f.subarray(sy / 4, sy / 4 + n * m);
    if (bias) { const b = bias(); for (let r = 0; r < n; r++) y.set(b, r * m); }
    else y.fill(0);
    return y;
  }

  /** The product at scratch view y copied to the JS heap: into `out` when given (n·m values), else a new array. */
  private static give(y: Float32Array, out: Float32Array | undefined): Float32Array {
    if (!out) return y.slice();
    out.set(y);
    return out;
  }

  /**
   * y [n, m] = x [n, k] · wᵀ + bias, w [m, k] resident (nn.Linear layout). x and bias are taken
   * through getters after the scratch space is reserved (growing the memory detaches resident views).
   * @param out where the product goes (n·m values; default a new array).
   * @returns the product on the JS heap, or null when the scratch space does not fit in wasm32.
   */
  linear(x: () => Float32Array, w: Resident, bias: (() => Float32Array) | undefined, n: number, k: number, m: number, out?: Float32Array): Float32Array | null {
    const sx = this.top, sy = sx + align(n * k * 4);
    if (!this.reserve(sy + n * m * 4)) return null;
    const y = this.stage(x, bias, sx, sy, n, m);
    this.product(KIND.f32, [sx, k, w.offset, k, sy, m, n, k, m], n * k * m);
    return WasmGemm.give(y, out);
  }

  /**
   * y [n, m] = x [n, k] · ŵᵀ + bias for a resident block-quantised w [m, k] (its words, backend/quant.ts
   * layout; k a multiple of 32). Fewer than FUSED_MAX_ROWS rows (decode): the quants are widened and
   * scaled in registers (fused GEMV, the weight read once at its stored size); more (prefill): slabs
   * of rows are dequantised in WASM SIMD into scratch space and multiplied by the f32 GEMM. Both are
   * bit-identical to the f32 product with the dequantised ŵ.
   * @param out where the product goes (n·m values; default a new array).
   * @returns the product on the JS heap, or null when the scratch space does not fit in wasm32.
   * @throws Error when k is not a multiple of 32 (padded rows go through linearRows).
   */
  linearQuant(x: () => Float32Array, w: Resident, format: QuantFormat, bias: (() => Float32Array) | undefined, n: number, k: number, m: number, out?: Float32Array): Float32Array | null {
    if (k % 32 !== 0) throw new Error(`linearQuant: rows of ${k} values are not whole blocks of 32`);
    const bpr = k / 32, scales = w.offset + 4 * scaleOffset(format, m, k);
    const slab = n < FUSED_MAX_ROWS ? 0 : Math.min(m, Math.max(4, Math.floor(SLAB_BYTES / (4 * k))));
    const sx = this.top, sy = sx + align(n * k * 4), sw = sy + align(n * m * 4);
    if (!this.reserve(sw + slab * k * 4)) return null;
    const y = this.stage(x, bias, sx, sy, n, m);
    if (!slab) {
      this.product(KIND[format], [sx, k, w.offset, scales, sy, m, n, bpr, m], n * k * m);
    } else {
      const qb = format === 'q8_0' ? 32 : 16;
      for (let r0 = 0; r0 < m; r0 += slab) {
        const rows = Math.min(slab, m - r0);
        this.dequant[format](w.offset + r0 * bpr * qb, scales + r0 * bpr * 2, rows * bpr, sw);
        this.product(KIND.f32, [sx, k, sw, k, sy + r0 * 4, m, n, k, rows], n * k * rows);
      }
    }
    return WasmGemm.give(y, out);
  }

  /**
   * Attention's dot products (ops/attention.cpu.ts AttentionDots) in WASM SIMD, bit-identical to the
   * TypeScript loops: q [n, H·d] and the cache rows [0, past + n) of k, v [ctx, KV·d] are copied into
   * scratch space (taken through getters after it is reserved), z goes to `out` (n·H·d values). On
   * this thread only (one head row's dots are too small to share). Valid until the next use of the arena.
   * @returns the dots, or null when the head dim is not a multiple of 4 or the scratch space does not fit in wasm32.
   */
  attentionDots(q: () => Float32Array, k: () => Float32Array, v: () => Float32Array, p: AttentionParams, out: Float32Array): AttentionDots | null {
    const { n, nHeads: H, nKvHeads, headDim: d } = p;
    const T = p.past + p.n, kvW = nKvHeads * d;
    if (d % 4 !== 0) return null;
    const sq = this.top, sk = sq + align(n * H * d * 4), sv = sk + align(T * kvW * 4), ss = sv + align(T * kvW * 4);
    const sqd = ss + align(T * 8), sz = sqd + align(d * 8);
    if (!this.reserve(sz + n * H * d * 4)) return null;
    const f = this.view();
    f.set(q(), sq / 4);
    f.set(k().subarray(0, T * kvW), sk / 4);
    f.set(v().subarray(0, T * kvW), sv / 4);
    const s = new Float64Array(this.memory.buffer, ss, T);
    const { scores, mix } = this;
    return {
      s,
      scores: (i, h, kh, lo, hi, scale) => scores(sq + 4 * (i * H + h) * d, sqd, sk + 4 * (lo * kvW + kh * d), 4 * kvW, ss + 8 * lo, hi - lo + 1, d, scale),
      mix: (i, h, kh, lo, hi) => mix(ss + 8 * lo, sv + 4 * (lo * kvW + kh * d), 4 * kvW, hi - lo + 1, d, sz + 4 * (i * H + h) * d),
      z: () => {
        out.set(this.view().subarray(sz / 4, sz / 4 + n * H * d));
        return out;
      },
    };
  }

  /**
   * SwiGLU's silu(gate)·up elementwise (tools/wasm/silu_wat.ts, bit-identical to ops/activation.cpu.ts
   * gatedActCpu) for the first n − n mod 2 values, into `out`; gate and up are copied into scratch
   * space (taken through getters after it is reserved). On this thread only.
   * @returns the count of values done (n rounded down to even; the caller does the last one), and
   *   whether some gate value lies outside exp64's reduced range (|x| ≥ 708, |x| < 2⁻²⁸ or NaN: those
   *   outputs are wrong and the caller recomputes them); null when the scratch space does not fit in wasm32.
   */
  siluMul(gate: () => Float32Array, up: () => Float32Array, n: number, out: Float32Array): { done: number; outliers: boolean } | null {
    const done = n & ~1;
    const sg = this.top, su = sg + align(n * 4), sy = su + align(n * 4);
    if (!this.reserve(sy + n * 4)) return null;
    const f = this.view();
    f.set(gate().subarray(0, done), sg / 4);
    f.set(up().subarray(0, done), su / 4);
    const outliers = this.siluMulFn(sg, su, sy, done) !== 0;
    out.set(this.view().subarray(sy / 4, sy / 4 + done));
    return { done, outliers };
  }

  /**
   * y [n, m] = x [n, k] · wᵀ + bias for a weight that is not resident but produced `slab` rows at a
   * time by `fill(dst [rows, k], row0, rows)` into scratch space (a block-quantised weight
   * dequantised on the fly: memory stays at its stored size plus one slab).
   * @param out where the product goes (n·m values; default a new array).
   * @returns the product on the JS heap, or null when the scratch space does not fit in wasm32.
   */
  linearRows(x: () => Float32Array, fill: (dst: Float32Array, row0: number, rows: number) => void, bias: (() => Float32Array) | undefined, n: number, k: number, m: number, slab: number, out?: Float32Array): Float32Array | null {
    const sx = this.top, sy = sx + align(n * k * 4), sw = sy + align(n * m * 4);
    if (!this.reserve(sw + slab * k * 4)) return null;
    const y = this.stage(x, bias, sx, sy, n, m);
    const f = this.view();
    for (let r0 = 0; r0 < m; r0 += slab) {
      const rows = Math.min(slab, m - r0);
      fill(f.subarray(sw / 4, sw / 4 + rows * k), r0, rows);
      this.product(KIND.f32, [sx, k, sw, k, sy + r0 * 4, m, n, k, rows], n * k * rows);
    }
    return WasmGemm.give(y, out);
  }
}
