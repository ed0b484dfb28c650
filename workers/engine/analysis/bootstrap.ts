/**
 * Mean with a percentile bootstrap interval (Efron & Tibshirani 1993, "An Introduction to the
 * Bootstrap", ch. 13): resample the values with replacement B times, take the mean of each
 * resample, and report the (1−level)/2 and (1+level)/2 quantiles of those means. Seeded, so the
 * same values give the same interval in the UI and in the runner.
 */
import { quantileSorted } from 'd3';
import { seededRandom } from './sampling';

export interface MeanInterval {
  /** Number of finite values used (NaN / null values are left out). */
  n: number;
  mean: number;
  /** Interval bounds; equal to the mean for n = 1, NaN for n = 0. */
  lo: number;
  hi: number;
}

export interface BootstrapOptions {
  /** Resamples (default 2000). */
  resamples?: number;
  /** Coverage (default 0.95). */
  level?: number;
  /** PRNG seed (default 0). */
  seed?: number;
}

/**
 * Mean and percentile bootstrap interval of the finite values in `xs`.
 * @throws Error for a level outside (0, 1) or fewer than one resample.
 */
export function bootstrapMean(xs: readonly (number | null)[], opts: BootstrapOptions = {}): MeanInterval {
  const B = opts.resamples ?? 2000, level = opts.level ?? 0.95;
  if (!(level > 0 && level < 1)) throw new Error(`bootstrap level ${level} must lie in (0, 1)`);
  if (!(B >= 1)) throw new Error('bootstrap needs at least one resample');
  const v = xs.filter((x): x is number => x !== null && Number.isFinite(x));
  const n = v.length;
  if (n === 0) return { n, mean: NaN, lo: NaN, hi: NaN };
  const mean = v.reduce((s, x) => s + x, 0) / n;
  if (n === 1) return { n, mean, lo: mean, hi: mean };
  const rand = seededRandom(opts.seed ?? 0);
  const means = new Float64Array(B);
  for (let b = 0; b < B; b++) {
    let s = 0;
    for (let i = 0; i < n; i++) s += v[Math.floor(rand() * n)];
    means[b] = s / n;
  }
  const sorted = Array.from(means.sort());
  return { n, mean, lo: quantileSorted(sorted, (1 - level) / 2)!, hi: quantileSorted(sorted, (1 + level) / 2)! };
}

/**
 * Percentile interval of any statistic of the prompts' mean curve: resample the prompts' curves
 * with replacement, average them, apply `stat` (null where it is undefined, e.g. no layer reaches a
 * threshold), and take the quantiles over the resamples where it is defined. Used by the
 * decision-point report for "the first layer where …" over a prompt set.
 * @param curves one curve per prompt [n][m], equal lengths.
 * @returns the interval (null when stat was never defined) and the fraction of resamples where it was.
 */
export function bootstrapStatistic(curves: readonly (readonly number[])[], stat: (mean: number[]) => number | null, opts: BootstrapOptions = {}): { interval: [number, number] | null; defined: number } {
  const B = opts.resamples ?? 2000, level = opts.level ?? 0.95;
  const n = curves.length, m = curves[0]?.length ?? 0;
  if (n === 0) return { interval: null, defined: 0 };
  const rand = seededRandom(opts.seed ?? 0);
  const values: number[] = [];
  for (let b = 0; b < B; b++) {
    const sum = new Array<number>(m).fill(0);
    for (let i = 0; i < n; i++) {
      const c = curves[Math.floor(rand() * n)];
      for (let j = 0; j < m; j++) sum[j] += c[j];
    }
    const v = stat(sum.map((x) => x / n));
    if (v !== null && Number.isFinite(v)) values.push(v);
  }
  if (values.length === 0) return { interval: null, defined: 0 };
  values.sort((a, b) => a - b);
  return { interval: [quantileSorted(values, (1 - level) / 2)!, quantileSorted(values, (1 + level) / 2)!], defined: values.length / B };
}
