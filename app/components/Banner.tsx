import type { ReactNode } from 'react';

/**
 * The one banner for something that failed: what (bold), why (the reason as the engine or reader
 * words it), an optional action, and × to dismiss. Job errors (ErrorBanner), experiment notices
 * (ExperimentBar) and a lost GPU device (DeviceLostBanner) all show in it, so an error looks the
 * same wherever it comes from (a trial saw two styles at once). Test ids: `testId`, `${idPrefix}-what`, `${idPrefix}-why`.
 * @param tone 'info' for news that is not a failure (interventions switched on again): the same
 *   banner in the info colours, announced politely (role status) rather than as an alert.
 */
export function Banner({ what, why, testId, idPrefix = testId, action, onDismiss, tone = 'error' }: { what: ReactNode; why: ReactNode; testId: string; idPrefix?: string; action?: ReactNode; onDismiss?: () => void; tone?: 'error' | 'info' }) {
  return (
    <div className={tone === 'info' ? 'error-banner info' : 'error-banner'} role={tone === 'info' ? 'status' : 'alert'} data-testid={testId} data-tone={tone}>
      <div>
        <strong data-testid={`${idPrefix}-what`}>{what}</strong>
        <p data-testid={`${idPrefix}-why`}>{why}</p>
      </div>
      {(action || onDismiss) && (
        <div className="row">
          {action}
          {onDismiss && <button type="button" className="small" aria-label="dismiss" onClick={onDismiss}>×</button>}
        </div>
      )}
    </div>
  );
}
