/**
 * Backward rules of the norms (Backend.rmsNormBackward / layerNormBackward on the CPU; the WGSL
 * kernels in norm_backward.wgsl.ts are checked against these): given the norm's input x and ∂m/∂y,
 * the gradient ∂m/∂x, summed in float64 and rounded to float32 once. The forward definitions are
 * norm.cpu.ts's rmsNormCpu and layerNormCpu.
 */

/**
 * RMSNorm y = x·r·(w + offset), r = 1/sqrt(mean(x²) + eps), over groups of g = w.length values:
 * ∂m/∂x_i = r·w'_i·dy_i − x_i·r³/g·Σ_j dy_j·w'_j·x_j (the second term: r depends on every x_j).
 * @param x [rows·g]; dy [rows·g]. @returns dx [rows·g] (into `out` when given).
 */
export function rmsNormBackwardCpu(x: ArrayLike<number>, w: ArrayLike<number>, eps: number, offset: number, dy: ArrayLike<number>, out?: Float32Array): Float32Array {
  const g = w.length;
  const dx = out ?? new Float32Array(x.length);
  for (let s = 0; s < x.length; s += g) {
    let ss = 0, dot = 0;
    for (let i = 0; i < g; i++) { ss += x[s + i] * x[s + i]; dot += dy[s + i] * (w[i] + offset) * x[s + i]; }
    const r = 1 / Math.sqrt(ss / g + eps);
    const c = (r * r * r * dot) / g;
    for (let i = 0; i < g; i++) dx[s + i] = r * (w[i] + offset) * dy[s + i] - x[s + i] * c;
  }
  return dx;
}

/**
 * LayerNorm y = x̂·w + b, x̂ = (x − μ)·r, r = 1/sqrt(σ² + eps) (biased variance), per row of d = w.length:
 * ∂m/∂x = r·(ĝ − mean(ĝ) − x̂·mean(ĝ·x̂)) with ĝ = dy·w.
 * @param x [rows·d]; dy [rows·d]. @returns dx [rows·d] (into `out` when given).
 */
export function layerNormBackwardCpu(x: ArrayLike<number>, w: ArrayLike<number>, eps: number, dy: ArrayLike<number>, out?: Float32Array): Float32Array {
  const d = w.length;
  const dx = out ?? new Float32Array(x.length);
  const xh = new Float64Array(d);
  for (let s = 0; s < x.length; s += d) {
    let mean = 0;
    for (let i = 0; i < d; i++) mean += x[s + i];
    mean /= d;
    let v = 0;
    for (let i = 0; i < d; i++) v += (x[s + i] - mean) ** 2;
    const r = 1 / Math.sqrt(v / d + eps);
    let mg = 0, mgx = 0;
    for (let i = 0; i < d; i++) {
      xh[i] = (x[s + i] - mean) * r;
      const gi = dy[s + i] * w[i];
      mg += gi; mgx += gi * xh[i];
    }
    mg /= d; mgx /= d;
    for (let i = 0; i < d; i++) dx[s + i] = r * (dy[s + i] * w[i] - mg - xh[i] * mgx);
  }
  return dx;
}
