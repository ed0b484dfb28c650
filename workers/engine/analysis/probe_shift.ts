/**
 * Whether a probe still measures its behaviour under an intervention (issue 25, "is the evaluator
 * still valid on the transformed distribution?"): the probe's score and the behaviour it is meant to
 * measure (a margin between two futures) are each compared before and after, and each shift is
 * measured against the distance between the two classes' means before (the gap the probe and the
 * margin are there to tell apart). A shift "moves" when |mean shift| ≥ τ·|gap|.
 * - score moves, behaviour does not → 'reads-vector': the probe reads the steering vector itself,
 *   not the behaviour (a judge that would report success where there is none);
 * - behaviour moves, score does not → 'misses-behaviour': the behaviour changed and the probe did
 *   not see it (e.g. it reads a layer before the intervention, or a direction the vector avoids);
 * - both or neither → null.
 */

/** What a probe row says about itself under an intervention (see the module docstring). */
export type ProbeFlag = 'reads-vector' | 'misses-behaviour' | null;

/** Default τ: a shift moves when it covers a quarter of the distance between the classes' means. */
export const DEFAULT_MOVE_THRESHOLD = 0.25;

/**
 * mean(values of label 1) − mean(values of label 0).
 * @param values [n]; labels [n] in {0, 1}.
 * @throws Error when the sizes differ or a class is empty.
 */
export function classGap(values: ArrayLike<number>, labels: ArrayLike<number>): number {
  if (values.length !== labels.length) throw new Error(`classGap: ${values.length} values but ${labels.length} labels`);
  const sum = [0, 0], count = [0, 0];
  for (let i = 0; i < values.length; i++) { sum[labels[i]] += values[i]; count[labels[i]]++; }
  if (count[0] === 0 || count[1] === 0) throw new Error(`classGap needs both classes (got ${count[1]} positive, ${count[0]} negative)`);
  return sum[1] / count[1] - sum[0] / count[0];
}

/**
 * Whether a mean shift moves: |shift| ≥ τ·|gap| and shift ≠ 0 (so with gap 0 any change moves).
 * @param shift mean change (steered − unsteered); gap classGap before; tau τ ≥ 0.
 */
export function shiftMoves(shift: number, gap: number, tau: number): boolean {
  return shift !== 0 && Math.abs(shift) >= tau * Math.abs(gap);
}

/**
 * The flag of one probe row (module docstring): from the mean shifts of the probe score and of the
 * behaviour, each with its class gap before the intervention, and τ.
 * @throws Error for a τ that is negative or not finite.
 */
export function probeFlag(score: { shift: number; gap: number }, behaviour: { shift: number; gap: number }, tau = DEFAULT_MOVE_THRESHOLD): ProbeFlag {
  if (!(Number.isFinite(tau) && tau >= 0)) throw new Error(`the move threshold τ must be a finite number ≥ 0 (got ${tau})`);
  const s = shiftMoves(score.shift, score.gap, tau), b = shiftMoves(behaviour.shift, behaviour.gap, tau);
  return s && !b ? 'reads-vector' : b && !s ? 'misses-behaviour' : null;
}

/**
 * A linear probe's decision values b + w·x of n rows, in float64.
 * @param X rows [n, d] row-major; w [d].
 * @returns [n].
 */
export function linearScores(X: ArrayLike<number>, n: number, w: ArrayLike<number>, b: number): Float64Array {
  const d = w.length;
  if (X.length !== n * d) throw new Error(`linearScores: ${X.length} values; expected ${n} rows × ${d}`);
  const out = new Float64Array(n);
  for (let i = 0; i < n; i++) {
    let s = b;
    for (let j = 0; j < d; j++) s += w[j] * X[i * d + j];
    out[i] = s;
  }
  return out;
}
