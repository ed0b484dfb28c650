import { GEMM_WASM_BASE64 } from '../ops/gemm.wasm';

const PAGE = 65536;
const ALIGN = 64;
const align = (n: number) => Math.ceil(n / ALIGN) * ALIGN;

type GemmFn = (x: number, ldx: number, w: number, ldw: number, y: number, ldy: number, n: number, k: number, m: number) => void;

/** A block of the arena holding one tensor's floats (a weight that a matmul moved there). */
export interface Resident {
  readonly offset: number;
  readonly length: number;
}

/** The compiled GEMM module, shared by every arena (compiled once per thread). */
let compiled: WebAssembly.Module | null | undefined;

function gemmModule(): WebAssembly.Module | null {
  if (compiled === undefined) {
    try {
      const bin = Uint8Array.from(atob(GEMM_WASM_BASE64), (c) => c.charCodeAt(0));
      compiled = WebAssembly.validate(bin) ? new WebAssembly.Module(bin) : null;
    } catch {
      compiled = null;
    }
  }
  return compiled;
}

/**
 * The CPU backend's matrix multiply in WebAssembly SIMD (tools/wasm/gemm_wat.ts), with the memory it
 * works in. Weights live in the arena once multiplied (moved, not copied: the tensor then views the
 * arena), so a decode step streams them straight from wasm memory; activations are copied into a
 * scratch region above the weights for each call (O(n·(k+m)) against the O(n·k·m) product).
 * Wasm32 addresses 4 GiB: a weight that no longer fits stays on the JS heap and the caller falls
 * back to the scalar loop.
 */
export class WasmGemm {
  private readonly memory: WebAssembly.Memory;
  private readonly gemm: GemmFn;
  private top = 0;
  private readonly free = new Map<number, number[]>();
  private f32: Float32Array;

  private constructor(mod: WebAssembly.Module) {
    this.memory = new WebAssembly.Memory({ initial: 16 });
    const inst = new WebAssembly.Instance(mod, { env: { memory: this.memory } });
    this.gemm = inst.exports.gemm as GemmFn;
    this.f32 = new Float32Array(this.memory.buffer);
  }

  /** A new arena, or null where WebAssembly SIMD is unavailable (the scalar loop is used). */
  static create(): WasmGemm | null {
    const mod = gemmModule();
    return mod ? new WasmGemm(mod) : null;
  }

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

  /** Moves `data` into the arena. @returns its block, or null when the arena cannot grow. */
  place(data: Float32Array): Resident | null {
    const size = align(data.length * 4);
    let offset = this.free.get(size)?.pop();
    if (offset === undefined) {
      if (!this.reserve(this.top + size)) return null;
      offset = this.top;
      this.top += size;
    }
    this.view().set(data, offset / 4);
    return { offset, length: data.length };
  }

  /** The floats of a resident block (a view, valid until the next growth; take it again after). */
  data(r: Resident): Float32Array {
    return this.view().subarray(r.offset / 4, r.offset / 4 + r.length);
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

  /**
   * y [n, m] = x [n, k] · wᵀ + bias, w [m, k] resident (nn.Linear layout). x and bias are taken
   * through getters after the scratch space is reserved (growing the memory detaches resident views).
   * @returns the product on the JS heap, or null when the scratch space does not fit in wasm32.
   */
  linear(x: () => Float32Array, w: Resident, bias: (() => Float32Array) | undefined, n: number, k: number, m: number): Float32Array | null {
    const sx = this.top, sy = sx + align(n * k * 4);
    if (!this.reserve(sy + n * m * 4)) return null;
    const y = this.stage(x, bias, sx, sy, n, m);
    this.gemm(sx, k, w.offset, k, sy, m, n, k, m);
    return y.slice();
  }

  /**
   * y [n, m] = x [n, k] · wᵀ + bias for a weight that is not resident but produced `slab` rows at a
   * time by `fill(dst [rows, k], row0, rows)` into scratch space (a block-quantised weight
   * dequantised on the fly: memory stays at its stored size plus one slab).
   * @returns the product on the JS heap, or null when the scratch space does not fit in wasm32.
   */
  linearRows(x: () => Float32Array, fill: (dst: Float32Array, row0: number, rows: number) => void, bias: (() => Float32Array) | undefined, n: number, k: number, m: number, slab: number): Float32Array | null {
    const sx = this.top, sy = sx + align(n * k * 4), sw = sy + align(n * m * 4);
    if (!this.reserve(sw + slab * k * 4)) return null;
    const y = this.stage(x, bias, sx, sy, n, m);
    const f = this.view();
    for (let r0 = 0; r0 < m; r0 += slab) {
      const rows = Math.min(slab, m - r0);
      fill(f.subarray(sw / 4, sw / 4 + rows * k), r0, rows);
      this.gemm(sx, k, sw, k, sy + r0 * 4, m, n, k, rows);
    }
    return y.slice();
  }
}
