import { checkRecoveryDenominator } from '../../workers/shared';

/**
 * Under a patching result: a warning when |Δ_clean − Δ_corrupt| is too small for normalised
 * recovery to mean anything (analysis/recovery_denominator.ts states the rule and its source).
 * Renders nothing when the denominator is large enough.
 */
export function DenominatorWarning({ cleanMargin, corruptMargin, testId }: { cleanMargin: number; corruptMargin: number; testId: string }) {
  const c = checkRecoveryDenominator(cleanMargin, corruptMargin);
  if (!c.small) return null;
  return <p className="warn denominator-warning" role="alert" data-testid={testId} data-denominator={c.denominator} data-threshold={c.threshold}>Recovery is unreliable here: {c.message}</p>;
}
