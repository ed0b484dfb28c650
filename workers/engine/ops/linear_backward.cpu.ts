/**
 * The input gradient of linear layers on the CPU (Backend.linearBackward, linearBackwardSum):
 * dx [n, in] = Σ_k dy_k [n, out_k] · W_k [out_k, in]. Many rows go through the WASM GEMM on a
 * transposed copy of the weights stacked by rows (stackTransposed; backend/cpu.ts); few rows (the
 * unembedding's objective rows, short prompts) and the scalar fallback take linearBackwardCpu.
 */

/**
 * dx [n, in] = Σ_k dys[k] [n, outs[k]] · ws[k] [outs[k], in], float64 sums over every part rounded
 * to float32 once; rows of W whose dy entries are all zero are skipped (a margin's ∂m/∂logits has
 * a few non-zero entries).
 */
export function linearBackwardCpu(dys: readonly Float32Array[], ws: readonly ArrayLike<number>[], n: number, outs: readonly number[], nIn: number): Float32Array {
  const dx = new Float32Array(n * nIn);
  const acc = new Float64Array(nIn);
  for (let t = 0; t < n; t++) {
    acc.fill(0);
    dys.forEach((dy, k) => {
      const w = ws[k], nOut = outs[k];
      for (let o = 0; o < nOut; o++) {
        const a = dy[t * nOut + o];
        if (a === 0) continue;
        const wo = o * nIn;
        for (let i = 0; i < nIn; i++) acc[i] += a * w[wo + i];
      }
    });
    dx.set(acc, t * nIn);
  }
  return dx;
}

/** Side of the square tiles the transposes copy: a tile's 64 source rows and 64 destination rows stay in cache (16 KB each way). */
const TILE = 64;

/**
 * Writes the transpose of m [rows, cols] into dst as the columns [col0, col0 + rows) of a row-major
 * [cols, stride] matrix: dst[c · stride + col0 + r] = m[r · cols + c]. Copied tile by tile
 * (cache-blocked), so neither side is walked with a large stride for long.
 */
function transposeInto(m: Float32Array, rows: number, cols: number, dst: Float32Array, stride: number, col0: number): void {
  for (let r0 = 0; r0 < rows; r0 += TILE) {
    const r1 = Math.min(rows, r0 + TILE);
    for (let c0 = 0; c0 < cols; c0 += TILE) {
      const c1 = Math.min(cols, c0 + TILE);
      for (let c = c0; c < c1; c++) {
        const o = c * stride + col0;
        for (let r = r0; r < r1; r++) dst[o + r] = m[r * cols + c];
      }
    }
  }
}

/**
 * The transpose [in, Σ out_k] of the weights ws[k] [outs[k], in] stacked by rows: row i is
 * W_1[:, i] ‖ … ‖ W_K[:, i], so that [dy_1 | … | dy_K] · [W_1; …; W_K] is one product x·(this)ᵀ.
 * @param out where it goes (in · Σ out_k values, every one written; default a new array).
 */
export function stackTransposed(ws: readonly Float32Array[], outs: readonly number[], nIn: number, out?: Float32Array): Float32Array {
  const total = outs.reduce((a, b) => a + b, 0);
  const t = out ?? new Float32Array(nIn * total);
  let c0 = 0;
  ws.forEach((w, k) => {
    transposeInto(w, outs[k], nIn, t, total, c0);
    c0 += outs[k];
  });
  return t;
}

/** The transpose [cols, rows] of a row-major matrix m [rows, cols]. */
export function transpose(m: Float32Array, rows: number, cols: number, out?: Float32Array): Float32Array {
  const t = out ?? new Float32Array(rows * cols);
  transposeInto(m, rows, cols, t, rows, 0);
  return t;
}
