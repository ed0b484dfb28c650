/** Comparison helpers shared by the harness pages (kernels, numerics). */

/** Deterministic PRNG (the engine's seeded sampler's mulberry32) so every run tests the same inputs. */
export { seededRandom as rng } from '../../workers/engine/analysis/sampling';

/** n standard-normal float32 values (Box–Muller) times `scale`. */
export function randn(rand: () => number, n: number, scale = 1): Float32Array {
  const out = new Float32Array(n);
  for (let i = 0; i < n; i += 2) {
    const r = Math.sqrt(-2 * Math.log(1 - rand())), t = 2 * Math.PI * rand();
    out[i] = r * Math.cos(t) * scale;
    if (i + 1 < n) out[i + 1] = r * Math.sin(t) * scale;
  }
  return out;
}

/** Difference of `got` from `want`: the largest absolute difference and the largest scaled one. */
export interface Diff {
  /** max |got − want| over finite references. */
  maxAbs: number;
  /**
   * max |got − want| / max(1, |want|): absolute for values of order 1, relative for large ones.
   * Infinity when the lengths differ, a value is NaN, or a non-finite reference is not matched exactly.
   */
  maxErr: number;
}

export function diff(got: ArrayLike<number>, want: ArrayLike<number>): Diff {
  if (got.length !== want.length) return { maxAbs: Infinity, maxErr: Infinity };
  let maxAbs = 0, maxErr = 0;
  for (let i = 0; i < want.length; i++) {
    const g = got[i], w = want[i];
    if (!Number.isFinite(w) || !Number.isFinite(g)) {
      if (g !== w) return { maxAbs: Infinity, maxErr: Infinity };
      continue;
    }
    const a = Math.abs(g - w);
    maxAbs = Math.max(maxAbs, a);
    maxErr = Math.max(maxErr, a / Math.max(1, Math.abs(w)));
  }
  return { maxAbs, maxErr };
}
