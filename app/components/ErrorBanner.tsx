import { useEffect } from 'react';
import { useStore } from '../store';
import { Banner } from './Banner';

/**
 * What failed and why, until dismissed or the next job starts. Results on display stay. It lies in
 * the page's flow (over nothing) and a new failure is scrolled into view when it is off screen.
 */
export function ErrorBanner() {
  const failure = useStore((s) => s.failure);
  const setFailure = useStore((s) => s.setFailure);
  useEffect(() => {
    if (failure) document.querySelector('[data-testid="error-banner"]')?.scrollIntoView?.({ block: 'nearest' });
  }, [failure]);
  if (!failure) return null;
  return (
    <Banner what={failure.what} why={failure.why} testId="error-banner" idPrefix="error" onDismiss={() => setFailure(null)}
      action={failure.retry && <button type="button" data-testid="error-retry" onClick={failure.retry.run}>{failure.retry.label}</button>} />
  );
}
