/**
 * Colour scales for signed heatmaps (margins, their steered − unsteered difference): symmetric
 * around 0, so white always means "no preference", and robust by default, so a few extreme cells
 * (often the embedding row) do not wash out the decision-relevant ones.
 */
import { interpolateLab, piecewise, quantile, scaleDiverging, schemeRdBu, type ScaleDiverging } from 'd3';

/** 'robust': the range is the 98th percentile of |v| (cells beyond it saturate); 'max': the largest |v|. */
export type HeatmapScale = 'robust' | 'max';

/** Quantile of |v| the robust range is set at. */
export const ROBUST_QUANTILE = 0.98;

/** The symmetric range [−m, m] of a heatmap and how many cells lie outside it (drawn in the end colours). */
export interface SymmetricRange {
  /** Half-width of the range, > 0 (1 when there is no finite non-zero value). */
  m: number;
  /** Finite cells with |v| > m. */
  clipped: number;
  /** Finite cells. */
  finite: number;
}

/**
 * The colour range of signed values, symmetric around 0. 'robust' takes the ROBUST_QUANTILE quantile
 * of |v| over the finite values (d3.quantile, linear interpolation between order statistics: R-7,
 * Hyndman & Fan 1996); 'max' the largest |v|. NaN and ±Infinity are ignored.
 * @param values any layout (e.g. row-major [n_layers + 1, n_tokens] margins, nats)
 */
export function symmetricRange(values: ArrayLike<number>, mode: HeatmapScale): SymmetricRange {
  const abs: number[] = [];
  for (let i = 0; i < values.length; i++) if (Number.isFinite(values[i])) abs.push(Math.abs(values[i]));
  const top = mode === 'max' ? Math.max(0, ...abs) : abs.length ? quantile(abs, ROBUST_QUANTILE)! : 0;
  const m = top > 0 ? top : Math.max(0, ...abs) || 1;
  return { m, clipped: abs.filter((a) => a > m).length, finite: abs.length };
}

/**
 * ColorBrewer's 11-class RdBu (Brewer, colorbrewer2.org; listed there as colour-blind safe),
 * interpolated piecewise in CIELAB, so 0 maps exactly to its neutral middle class #f7f7f7 (d3's
 * interpolateRdBu is a B-spline whose middle is a faint red).
 */
const RDBU: (t: number) => string = piecewise(interpolateLab, [...schemeRdBu[11]] as string[]);

/** A diverging colour scale over [−m, m]: −m red, 0 neutral #f7f7f7, +m blue; clamped (values past ±m take the end colours). */
export function divergingScale(m: number): ScaleDiverging<string> {
  return scaleDiverging<string>(RDBU).domain([-m, 0, m]).clamp(true);
}

/** What a range says about itself, for a legend or caption ("98th percentile of |Δ|; 3 of 120 cells beyond"). */
export function rangeNote(r: SymmetricRange, mode: HeatmapScale, what = 'value'): string {
  // two decimals from 0.1 up; two significant digits under it (a JS scale of 0.0021 read "0.00")
  const m = r.m >= 0.1 || r.m === 0 ? r.m.toFixed(2) : String(Number(r.m.toPrecision(2)));
  const basis = mode === 'robust' ? `${Math.round(ROBUST_QUANTILE * 100)}th percentile of |${what}|` : `largest |${what}|`;
  return r.clipped ? `scale ±${m}: ${basis}; ${r.clipped} of ${r.finite} cells beyond it drawn in the end colours` : `scale ±${m}: ${basis}`;
}
