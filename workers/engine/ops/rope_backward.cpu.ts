/**
 * Backward rule of the rotary embedding (rope.cpu.ts ropeCpu, rotate_half layout): the rotation by
 * θ = pos·invFreq[j] is orthogonal, so ∂m/∂x is ∂m/∂y rotated by −θ:
 * dx1 = dy1·cos θ + dy2·sin θ, dx2 = dy2·cos θ − dy1·sin θ (dims past rotaryDims pass through).
 * @param dy [n, nHeads·headDim] (float64, rows at positions pos0..). @returns dx, same shape.
 */
export function ropeBackward(dy: Float64Array, n: number, nHeads: number, headDim: number, rotaryDims: number, pos0: number, invFreq: ArrayLike<number>): Float64Array {
  const dx = Float64Array.from(dy);
  const half = rotaryDims / 2;
  for (let r = 0; r < n; r++) {
    for (let j = 0; j < half; j++) {
      const a = (pos0 + r) * invFreq[j];
      const c = Math.cos(a), s = Math.sin(a);
      for (let h = 0; h < nHeads; h++) {
        const o = (r * nHeads + h) * headDim + j;
        const d1 = dy[o], d2 = dy[o + half];
        dx[o] = d1 * c + d2 * s;
        dx[o + half] = d2 * c - d1 * s;
      }
    }
  }
  return dx;
}
