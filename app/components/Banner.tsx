import type { ReactNode } from 'react';

/**
 * The one banner for something that failed: what (bold), why (the reason as the engine or reader
 * words it), an optional action, and × to dismiss. Job errors (ErrorBanner), experiment notices
 * (ExperimentBar) and a lost GPU device (DeviceLostBanner) all show in it, so an error looks the
 * same wherever it comes from (a trial saw two styles at once). Test ids: `testId`, `${idPrefix}-what`, `${idPrefix}-why`.
 */
export function Banner({ what, why, testId, idPrefix = testId, action, onDismiss }: { what: ReactNode; why: ReactNode; testId: string; idPrefix?: string; action?: ReactNode; onDismiss?: () => void }) {
  return (
    <div className="error-banner" role="alert" data-testid={testId}>
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
