/**
 * RMSNorm over groups of g = w.length values: y = x / sqrt(mean(x²) + eps) · (w + offset).
 * @param out where y goes (every element written; default a new array of x.length).
 */
export function rmsNormCpu(x: Float32Array, w: Float32Array, eps: number, offset: number, out?: Float32Array): Float32Array {
  const g = w.length;
  const y = out ?? new Float32Array(x.length);
  for (let s = 0; s < x.length; s += g) {
    let ss = 0;
    for (let i = 0; i < g; i++) ss += x[s + i] * x[s + i];
    const inv = 1 / Math.sqrt(ss / g + eps);
    for (let i = 0; i < g; i++) y[s + i] = x[s + i] * inv * (w[i] + offset);
  }
  return y;
}

/**
 * LayerNorm per row of width w.length: (x − μ)/sqrt(σ² + eps)·w + b, biased variance.
 * @param out where y goes (every element written; default a new array of x.length).
 */
export function layerNormCpu(x: Float32Array, w: Float32Array, b: Float32Array | undefined, eps: number, out?: Float32Array): Float32Array {
  const d = w.length;
  const y = out ?? new Float32Array(x.length);
  for (let s = 0; s < x.length; s += d) {
    let mean = 0;
    for (let i = 0; i < d; i++) mean += x[s + i];
    mean /= d;
    let v = 0;
    for (let i = 0; i < d; i++) v += (x[s + i] - mean) ** 2;
    const inv = 1 / Math.sqrt(v / d + eps);
    for (let i = 0; i < d; i++) y[s + i] = (x[s + i] - mean) * inv * w[i] + (b ? b[i] : 0);
  }
  return y;
}
