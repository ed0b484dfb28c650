/** log_softmax over each row of width c. */
export function logSoftmaxCpu(x: Float32Array, c: number): Float32Array {
  const y = new Float32Array(x.length);
  for (let s = 0; s < x.length; s += c) {
    let max = -Infinity;
    for (let i = 0; i < c; i++) if (x[s + i] > max) max = x[s + i];
    let sum = 0;
    for (let i = 0; i < c; i++) sum += Math.exp(x[s + i] - max);
    const lse = max + Math.log(sum);
    for (let i = 0; i < c; i++) y[s + i] = x[s + i] - lse;
  }
  return y;
}

/** cap·tanh(x/cap), elementwise. */
export function softcapCpu(x: Float32Array, cap: number): Float32Array {
  const y = new Float32Array(x.length);
  for (let i = 0; i < x.length; i++) y[i] = Math.tanh(x[i] / cap) * cap;
  return y;
}

/** Top-k per row (ties: lower index first), values descending. */
export function topkCpu(x: Float32Array, c: number, k: number): { values: Float32Array; indices: Int32Array } {
  const n = x.length / c;
  const values = new Float32Array(n * k);
  const indices = new Int32Array(n * k);
  for (let r = 0; r < n; r++) {
    const idx: number[] = [];
    for (let i = 0; i < c; i++) {
      const v = x[r * c + i];
      let pos = idx.length;
      while (pos > 0 && x[r * c + idx[pos - 1]] < v) pos--;
      if (pos < k) { idx.splice(pos, 0, i); if (idx.length > k) idx.pop(); }
    }
    for (let j = 0; j < k; j++) { indices[r * k + j] = idx[j]; values[r * k + j] = x[r * c + idx[j]]; }
  }
  return { values, indices };
}
