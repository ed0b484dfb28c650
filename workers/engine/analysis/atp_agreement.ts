/**
 * How far attribution patching's linear estimate (studies/atp.ts) agrees with the exact patching grid
 * (studies/patching.ts), both normalised as recovery r = (Δ_patched − Δ_corrupt)/(Δ_clean − Δ_corrupt):
 * Spearman's rank correlation over the cells (analysis/rank_correlation.ts), and the cells where
 * |r̂ − r| exceeds a threshold — where the linear estimate fails (a patch that moves the residual far,
 * a saturated softmax; Kramár et al. 2024, arXiv 2403.00745). One definition for the study and the
 * Patching view.
 */
import { spearman } from './rank_correlation';

/** A cell where the estimate and the exact recovery differ by more than the threshold. */
export interface AtpDisagreement { layer: number; col: number; atp: number; exact: number }

export interface AtpAgreement {
  /** Spearman's ρ of the estimate and the exact recovery over the cells (NaN when either is constant). */
  rankCorrelation: number;
  /** The cells with |atp − exact| > threshold, in row-major order. */
  disagreements: AtpDisagreement[];
}

/**
 * Agreement of two [n_layers, n_cols] recovery grids (row-major).
 * @throws Error for grids of different lengths, a length that is not a multiple of nCols, or a
 *   threshold that is not a finite number ≥ 0.
 */
export function atpAgreement(atp: ArrayLike<number>, exact: ArrayLike<number>, nCols: number, threshold: number): AtpAgreement {
  if (atp.length !== exact.length || nCols <= 0 || atp.length % nCols !== 0) throw new Error(`AtP against exact: grids of ${atp.length} and ${exact.length} cells in rows of ${nCols} do not match`);
  if (!(Number.isFinite(threshold) && threshold >= 0)) throw new Error(`disagreement threshold ${threshold}: give a number ≥ 0 (in units of recovery r)`);
  const disagreements: AtpDisagreement[] = [];
  for (let i = 0; i < atp.length; i++) {
    if (Math.abs(atp[i] - exact[i]) > threshold) disagreements.push({ layer: Math.floor(i / nCols), col: i % nCols, atp: atp[i], exact: exact[i] });
  }
  return { rankCorrelation: spearman(atp, exact), disagreements };
}
