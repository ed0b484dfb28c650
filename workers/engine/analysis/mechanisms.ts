/**
 * Behaviour pairs (DESIGN.md §3 "Mechanisms"): do two behaviours, each a labelled contrastive set,
 * share a mechanism, or do they only correlate? The maths over activations and margins:
 * - the per-layer cosine of the two difference-of-means (CAA) directions (Rimsky et al. arXiv
 *   2312.06681) and of the two probes' weight vectors (Alain & Bengio arXiv 1610.01644);
 * - the selectivity of a steering direction, |ΔB| / |ΔA|: the other behaviour's mean margin change
 *   over the own one's when steering along A's unit direction (1 = it moves both alike, 0 = only A);
 * - the natural correlation of the two probes' scores over a common pool of prompts (Pearson);
 * - a verdict per layer from these numbers and stated thresholds (MECHANISM_THRESHOLDS).
 * Correlated natural activations with separable interventions is the pattern of behaviours that
 * only co-occur at the surface (issue 25: self-report vs behaviour, refusal vs sycophancy).
 */
import type { RawProbe } from './logistic';
import { pearson } from './rank_correlation';

/** A behaviour's activations as read: one row per hook, each [n, width] row-major, with the labels. */
export interface BehaviourActivations {
  /** The behaviour's name in messages ("happy vs sad"). */
  name: string;
  /** Hook of each row (TransformerLens names), [rows]. */
  hooks: readonly string[];
  width: number;
  /** Activations per row, each [n, width]. */
  rows: readonly Float32Array[];
  /** [n] in {0, 1}: 1 = the positive class. */
  labels: ArrayLike<number>;
}

/**
 * Refuses two behaviours (and a pool, when given) that were not read at the same hooks with the
 * same width — activations of different models, or of one model at other hooks — and a behaviour
 * without two examples in each class.
 * @throws Error naming both behaviours and what differs.
 */
export function checkBehaviours(a: BehaviourActivations, b: BehaviourActivations): void {
  for (const x of [a, b]) {
    const n = x.labels.length;
    let pos = 0;
    for (let i = 0; i < n; i++) {
      if (x.labels[i] !== 0 && x.labels[i] !== 1) throw new Error(`behaviour “${x.name}”: label ${x.labels[i]} of example ${i} is not 0 or 1`);
      pos += x.labels[i];
    }
    if (Math.min(pos, n - pos) < 2) throw new Error(`behaviour “${x.name}” needs at least 2 prompts in each class for its probe (got ${pos} positive, ${n - pos} negative)`);
    if (x.rows.length !== x.hooks.length) throw new Error(`behaviour “${x.name}”: ${x.rows.length} activation rows for ${x.hooks.length} hooks`);
    x.rows.forEach((r, i) => {
      if (r.length !== n * x.width) throw new Error(`behaviour “${x.name}”: row ${x.hooks[i]} holds ${r.length} values; expected ${n} prompts × width ${x.width}`);
    });
  }
  if (a.width !== b.width) throw new Error(`behaviours “${a.name}” and “${b.name}” have activations of width ${a.width} and ${b.width}: read both from one model at the same hooks`);
  if (a.hooks.length !== b.hooks.length || a.hooks.some((h, i) => h !== b.hooks[i])) {
    throw new Error(`behaviours “${a.name}” and “${b.name}” were read at different hooks (${a.hooks.length}: ${a.hooks.slice(0, 2).join(', ')}… vs ${b.hooks.length}: ${b.hooks.slice(0, 2).join(', ')}…): read both from one model at the same hooks`);
  }
}

/** cos(a, b) = a·b / (‖a‖‖b‖), in float64; null when either vector is zero. */
export function cosine(a: ArrayLike<number>, b: ArrayLike<number>): number | null {
  let ab = 0, aa = 0, bb = 0;
  for (let i = 0; i < a.length; i++) { ab += a[i] * b[i]; aa += a[i] * a[i]; bb += b[i] * b[i]; }
  return aa > 0 && bb > 0 ? ab / Math.sqrt(aa * bb) : null;
}

/**
 * Difference of means mean(positive) − mean(negative) of rows X [n, d] (the CAA vector, Rimsky et
 * al. arXiv 2312.06681), [d] in float64.
 */
export function differenceOfMeans(X: ArrayLike<number>, labels: ArrayLike<number>, d: number): Float64Array {
  const n = labels.length;
  let pos = 0;
  for (let i = 0; i < n; i++) pos += labels[i];
  const v = new Float64Array(d);
  for (let i = 0; i < n; i++) {
    const s = labels[i] === 1 ? 1 / pos : -1 / (n - pos);
    for (let j = 0; j < d; j++) v[j] += s * X[i * d + j];
  }
  return v;
}

/** Probe scores w·x + b of rows X [n, d] (a probe of logistic.ts fitProbe), [n]. */
export function probeScores(p: RawProbe, X: ArrayLike<number>, d: number): Float64Array {
  const n = X.length / d, out = new Float64Array(n);
  for (let i = 0; i < n; i++) {
    let s = p.b;
    for (let j = 0; j < d; j++) s += p.w[j] * X[i * d + j];
    out[i] = s;
  }
  return out;
}

/** Pearson correlation of two behaviours' probe scores over one pool; null when either is constant. */
export function naturalCorrelation(scoresA: ArrayLike<number>, scoresB: ArrayLike<number>): number | null {
  const r = pearson(scoresA, scoresB);
  return Number.isFinite(r) ? r : null;
}

/**
 * Selectivity |Δ_other| / |Δ_own| of a steering direction: the other behaviour's mean margin change
 * over the own behaviour's (nats / nats). null when the own change is 0 (the ratio says nothing).
 */
export function selectivity(other: number, own: number): number | null {
  return own !== 0 && Number.isFinite(own) && Number.isFinite(other) ? Math.abs(other) / Math.abs(own) : null;
}

/**
 * The verdict's thresholds, stated with every result: |cos| of the CAA directions at or above
 * `sharedCosine` counts as one direction; a selectivity at or above `mutualSelectivity` as steering
 * the other behaviour too; |r| of the probe scores at or above `naturalCorrelation` as correlated
 * naturally; an own margin change below `minReach` nats as no reach (selectivity not read).
 */
export const MECHANISM_THRESHOLDS = { sharedCosine: 0.5, mutualSelectivity: 0.5, naturalCorrelation: 0.5, minReach: 0.05 } as const;

export type MechanismThresholds = { [K in keyof typeof MECHANISM_THRESHOLDS]: number };

/** What the verdict of one layer reads. */
export interface LayerNumbers {
  cosCaa: number | null;
  /** ΔA and ΔB under A's direction, ΔB and ΔA under B's (mean margin changes, nats). */
  aOnA: number; aOnB: number; bOnB: number; bOnA: number;
  naturalCorr: number | null;
}

/**
 * 'shared': shared direction and mutual steering; 'correlated': correlated naturally but separable
 * by intervention; 'independent': neither; 'mixed': none of the three patterns holds (the text says
 * which number breaks it); 'no reach': a direction does not move its own behaviour's margin.
 */
export type VerdictKind = 'shared' | 'correlated' | 'independent' | 'mixed' | 'no reach';

export interface Verdict {
  kind: VerdictKind;
  /** One line: the pattern and the numbers it rests on. */
  text: string;
}

const f3 = (x: number | null) => (x === null ? 'n/a' : x.toFixed(3));

/**
 * The pattern one layer's numbers show, under thresholds t (MECHANISM_THRESHOLDS):
 * - no reach: |a_on_a| or |b_on_b| < minReach;
 * - shared: |cos_caa| ≥ sharedCosine and both selectivities ≥ mutualSelectivity;
 * - correlated: |natural_corr| ≥ naturalCorrelation and both selectivities < mutualSelectivity;
 * - independent: |natural_corr|, |cos_caa| and both selectivities below their thresholds;
 * - mixed: otherwise.
 */
export function mechanismVerdict(x: LayerNumbers, t: MechanismThresholds = MECHANISM_THRESHOLDS): Verdict {
  const selA = selectivity(x.aOnB, x.aOnA), selB = selectivity(x.bOnA, x.bOnB);
  const nums = `cos_caa ${f3(x.cosCaa)}, selectivity A→B ${f3(selA)} (ΔB ${x.aOnB.toFixed(3)} / ΔA ${x.aOnA.toFixed(3)}), B→A ${f3(selB)} (ΔA ${x.bOnA.toFixed(3)} / ΔB ${x.bOnB.toFixed(3)}), natural r ${f3(x.naturalCorr)}`;
  if (!(Math.abs(x.aOnA) >= t.minReach) || !(Math.abs(x.bOnB) >= t.minReach)) {
    return { kind: 'no reach', text: `no reach: a direction moves its own margin by less than ${t.minReach} nats, so selectivity is not read (${nums})` };
  }
  const cos = Math.abs(x.cosCaa ?? 0), r = Math.abs(x.naturalCorr ?? 0);
  const mutual = selA! >= t.mutualSelectivity && selB! >= t.mutualSelectivity;
  const separable = selA! < t.mutualSelectivity && selB! < t.mutualSelectivity;
  if (cos >= t.sharedCosine && mutual) return { kind: 'shared', text: `shared direction and mutual steering: |cos_caa| ≥ ${t.sharedCosine}, both selectivities ≥ ${t.mutualSelectivity} (${nums})` };
  if (r >= t.naturalCorrelation && separable) return { kind: 'correlated', text: `correlated naturally but separable by intervention: |r| ≥ ${t.naturalCorrelation}, both selectivities < ${t.mutualSelectivity} (${nums})` };
  if (r < t.naturalCorrelation && cos < t.sharedCosine && separable) return { kind: 'independent', text: `independent: |r| < ${t.naturalCorrelation}, |cos_caa| < ${t.sharedCosine}, both selectivities < ${t.mutualSelectivity} (${nums})` };
  const why = mutual ? `mutual steering but |cos_caa| < ${t.sharedCosine}` : separable ? `separable by intervention but |cos_caa| ≥ ${t.sharedCosine} while |r| < ${t.naturalCorrelation}` : `one direction steers the other behaviour and the other does not`;
  return { kind: 'mixed', text: `mixed: ${why} (${nums})` };
}
