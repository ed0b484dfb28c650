/**
 * When normalised recovery cannot be trusted. Activation patching reports
 *
 *   r = (Δ_patched − Δ_corrupt) / (Δ_clean − Δ_corrupt)
 *
 * (Heimersheim & Nanda, arXiv 2404.15255 §2; Zhang & Nanda, arXiv 2309.16042 §3, who recommend
 * corruptions that move the metric far). When the clean and corrupted margins are close, the
 * denominator is small and any change a patch makes is divided by it: a patch that moves the margin
 * by 0.3 nats reads as r = 2 with a denominator of 0.15. r then leaves [0, 1] for reasons that are
 * not about the component, and a "recovery ≥ 0.5" rule (the report's causal layer) fires on noise.
 * The corruption should change the answer: Δ_clean and Δ_corrupt of opposite signs, or at least
 * far apart.
 */

/** |Δ_clean − Δ_corrupt| (nats) below which recovery is flagged as unreliable. */
export const MIN_RECOVERY_DENOMINATOR = 0.5;

/** The denominator of r, and whether it is too small for r to mean anything. */
export interface DenominatorCheck {
  /** Δ_clean − Δ_corrupt, nats (signed, as in r's formula). */
  denominator: number;
  /** The threshold it was compared against (nats). */
  threshold: number;
  /** |denominator| < threshold, or not finite: r is dominated by noise. */
  small: boolean;
  /** A sentence for the user naming the denominator, the threshold and why, or null when fine. */
  message: string | null;
}

/**
 * Checks the denominator of normalised recovery.
 * @param cleanMargin Δ_clean, the margin of the clean run (nats).
 * @param corruptMargin Δ_corrupt, the margin of the corrupted run (nats).
 * @param threshold the smallest |Δ_clean − Δ_corrupt| (nats) trusted; default MIN_RECOVERY_DENOMINATOR.
 * @throws RangeError when threshold is negative or not finite.
 */
export function checkRecoveryDenominator(cleanMargin: number, corruptMargin: number, threshold = MIN_RECOVERY_DENOMINATOR): DenominatorCheck {
  if (!Number.isFinite(threshold) || threshold < 0) throw new RangeError(`the denominator threshold must be a finite number ≥ 0 (got ${threshold})`);
  const denominator = cleanMargin - corruptMargin;
  const small = !Number.isFinite(denominator) || Math.abs(denominator) < threshold;
  const message = small
    ? `Δ_clean − Δ_corrupt = ${denominator.toFixed(3)} nats, below the ${threshold} nats this view trusts: recovery r divides each patch's effect by this number, so small changes read as large r (values far outside [0, 1]) and "r ≥ 0.5" can fire on noise. Choose a corrupted prompt that changes the answer (Δ of the other sign).`
    : null;
  return { denominator, threshold, small, message };
}
