/** y [n, out] = x [n, in] · wᵀ + b, with w in nn.Linear layout [out, in]. */
export function linearCpu(x: Float32Array, w: Float32Array, b: Float32Array | undefined, n: number, nIn: number, nOut: number): Float32Array {
  const y = new Float32Array(n * nOut);
  for (let r = 0; r < n; r++) {
    const xo = r * nIn;
    for (let o = 0; o < nOut; o++) {
      const wo = o * nIn;
      let acc = 0;
      for (let i = 0; i < nIn; i++) acc += x[xo + i] * w[wo + i];
      y[r * nOut + o] = b ? acc + b[o] : acc;
    }
  }
  return y;
}
