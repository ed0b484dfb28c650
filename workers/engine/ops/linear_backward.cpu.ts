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

/**
 * The transpose [in, Σ out_k] of the weights ws[k] [outs[k], in] stacked by rows: row i is
 * W_1[:, i] ‖ … ‖ W_K[:, i], so that [dy_1 | … | dy_K] · [W_1; …; W_K] is one product x·(this)ᵀ.
 */
export function stackTransposed(ws: readonly ArrayLike<number>[], outs: readonly number[], nIn: number): Float32Array {
  const total = outs.reduce((a, b) => a + b, 0);
  const t = new Float32Array(nIn * total);
  let c0 = 0;
  ws.forEach((w, k) => {
    for (let o = 0; o < outs[k]; o++) for (let i = 0; i < nIn; i++) t[i * total + c0 + o] = w[o * nIn + i];
    c0 += outs[k];
  });
  return t;
}

/** The transpose [cols, rows] of a row-major matrix m [rows, cols]. */
export function transpose(m: ArrayLike<number>, rows: number, cols: number, out?: Float32Array): Float32Array {
  const t = out ?? new Float32Array(rows * cols);
  for (let r = 0; r < rows; r++) for (let c = 0; c < cols; c++) t[c * rows + r] = m[r * cols + c];
  return t;
}
