/**
 * Norms with their scale frozen (the linear approximation of direct logit attribution, DESIGN.md §3
 * "Attribution"): at its value on the run a norm's σ is a number, so the norm becomes an affine map
 * of its input — RMSNorm y = x ⊙ (w + offset) / σ, LayerNorm y = (x − mean(x)) ⊙ w / σ + b — and a
 * readout D·y of its output is a readout dir·x + constant of its input. Pure float64 maths over rows.
 */

/** A norm's weights on the host. */
export interface HostNorm {
  kind: 'rms' | 'layer';
  w: Float32Array;
  /** LayerNorm bias (absent for RMSNorm). */
  b?: Float32Array;
  eps: number;
  /** 1 for Gemma's (1 + w) RMSNorm, else 0. */
  offset: number;
}

/**
 * The norm's scale σ of one row, as the forward pass computes it: RMSNorm √(mean x² + ε),
 * LayerNorm √(var x + ε) (population variance).
 */
export function normScale(x: ArrayLike<number>, kind: 'rms' | 'layer', eps: number, from = 0, d = x.length - from): number {
  let mean = 0;
  if (kind === 'layer') {
    for (let i = 0; i < d; i++) mean += x[from + i];
    mean /= d;
  }
  let ss = 0;
  for (let i = 0; i < d; i++) ss += (x[from + i] - mean) ** 2;
  return Math.sqrt(ss / d + eps);
}

/**
 * The readout of a frozen norm's input that equals D·norm(x) with σ frozen:
 * D·y = dir·x + constant, where RMSNorm: dir = D ⊙ (w + offset) / σ, constant = 0;
 * LayerNorm: a = D ⊙ w, dir = (a − mean(a)) / σ (the centring moved onto the direction), constant = D·b.
 * @param D the downstream direction on the norm's output [d].
 * @param sigma the norm's scale on the run (normScale).
 */
export function frozenNormReadout(D: ArrayLike<number>, n: HostNorm, sigma: number): { dir: Float64Array; constant: number } {
  const d = n.w.length;
  const dir = new Float64Array(d);
  let constant = 0;
  for (let i = 0; i < d; i++) dir[i] = D[i] * (n.w[i] + n.offset);
  if (n.kind === 'layer') {
    let m = 0;
    for (let i = 0; i < d; i++) m += dir[i];
    m /= d;
    for (let i = 0; i < d; i++) dir[i] -= m;
    if (n.b) for (let i = 0; i < d; i++) constant += D[i] * n.b[i];
  }
  for (let i = 0; i < d; i++) dir[i] /= sigma;
  return { dir, constant };
}

/** a·b over d entries, from offsets (float64). */
export function dot(a: ArrayLike<number>, b: ArrayLike<number>, d: number, ao = 0, bo = 0): number {
  let s = 0;
  for (let i = 0; i < d; i++) s += a[ao + i] * b[bo + i];
  return s;
}

/** Softmax of a few logits (float64): the weights of a token set's members at the run. */
export function softmax64(xs: readonly number[]): number[] {
  const m = Math.max(...xs);
  const e = xs.map((x) => Math.exp(x - m));
  const s = e.reduce((a, b) => a + b, 0);
  return e.map((x) => x / s);
}
