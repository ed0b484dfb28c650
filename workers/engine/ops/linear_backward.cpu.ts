/**
 * The input gradient of a linear layer on the CPU (Backend.linearBackward): dx [n, in] = dy [n, out]
 * · W [out, in]. Many rows go through the WASM GEMM on a transposed copy of W (backend/cpu.ts); few
 * rows (the unembedding's objective rows) and the scalar fallback take linearBackwardCpu.
 */

/**
 * dx [n, in] = dy [n, out] · w [out, in], float64 sums rounded to float32 once; rows of W whose dy
 * entries are all zero are skipped (a margin's ∂m/∂logits has a few non-zero entries).
 */
export function linearBackwardCpu(dy: Float32Array, w: Float32Array, n: number, nOut: number, nIn: number): Float32Array {
  const dx = new Float32Array(n * nIn);
  const acc = new Float64Array(nIn);
  for (let t = 0; t < n; t++) {
    acc.fill(0);
    for (let o = 0; o < nOut; o++) {
      const a = dy[t * nOut + o];
      if (a === 0) continue;
      const wo = o * nIn;
      for (let i = 0; i < nIn; i++) acc[i] += a * w[wo + i];
    }
    dx.set(acc, t * nIn);
  }
  return dx;
}

/** The transpose [cols, rows] of a row-major matrix m [rows, cols]. */
export function transpose(m: ArrayLike<number>, rows: number, cols: number, out?: Float32Array): Float32Array {
  const t = out ?? new Float32Array(rows * cols);
  for (let r = 0; r < rows; r++) for (let c = 0; c < cols; c++) t[c * rows + r] = m[r * cols + c];
  return t;
}
