import { dequantiseRows, type QuantizedMatrix } from '../backend/quant';

/** Weight rows dequantised per step: a slab of about 64 KiB of float32 (at least 4 rows). */
export function quantSlabRows(cols: number): number {
  return Math.max(4, Math.floor(16384 / Math.max(1, cols)));
}

/**
 * y [n, out] = x [n, in] · dequant(w)ᵀ + b for a block-quantised weight w [out, in] (backend/quant.ts),
 * in TypeScript (float64 accumulation): the weight is dequantised one slab of rows at a time, so
 * memory stays at the quantised size plus one slab. The CPU backend's WASM path
 * (WasmGemm.linearRows) does the same with SIMD dot products; this is its fallback.
 */
export function linearQuantCpu(x: Float32Array, w: QuantizedMatrix, b: Float32Array | undefined, n: number): Float32Array {
  const [nOut, nIn] = w.shape;
  const y = new Float32Array(n * nOut);
  const slab = quantSlabRows(nIn);
  const rows = new Float32Array(slab * nIn);
  for (let o0 = 0; o0 < nOut; o0 += slab) {
    const m = Math.min(slab, nOut - o0);
    dequantiseRows(w, o0, m, rows);
    for (let r = 0; r < n; r++) {
      const xo = r * nIn;
      for (let o = 0; o < m; o++) {
        let acc = 0;
        for (let i = 0; i < nIn; i++) acc += x[xo + i] * rows[o * nIn + i];
        y[r * nOut + o0 + o] = b ? acc + b[o0 + o] : acc;
      }
    }
  }
  return y;
}
