/**
 * Rotary embedding, rotate_half layout (Su et al. 2021, arXiv 2104.09864; HF `apply_rotary_pos_emb`):
 * for each row r (position pos0 + r) and head, dims j and j + rotaryDims/2 rotate by (pos0 + r)·invFreq[j].
 * @param out where y goes (x.length values; default a new array).
 */
export function ropeCpu(x: Float32Array, n: number, nHeads: number, headDim: number, rotaryDims: number, pos0: number, invFreq: Float32Array, out?: Float32Array): Float32Array {
  const y = out ?? new Float32Array(x.length);
  y.set(x);
  const half = rotaryDims / 2;
  // cos and sin of a row's angles, once for all its heads
  const cos = new Float64Array(half), sin = new Float64Array(half);
  for (let r = 0; r < n; r++) {
    const pos = pos0 + r;
    for (let j = 0; j < half; j++) {
      const a = pos * invFreq[j];
      cos[j] = Math.cos(a);
      sin[j] = Math.sin(a);
    }
    for (let h = 0; h < nHeads; h++) {
      const base = (r * nHeads + h) * headDim;
      for (let j = 0; j < half; j++) {
        const c = cos[j], s = sin[j];
        const x1 = x[base + j], x2 = x[base + j + half];
        y[base + j] = x1 * c - x2 * s;
        y[base + j + half] = x2 * c + x1 * s;
      }
    }
  }
  return y;
}
