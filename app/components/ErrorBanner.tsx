import { useStore } from '../store';
import { Banner } from './Banner';

/** What failed and why, until dismissed or the next job starts. Results on display stay. */
export function ErrorBanner() {
  const failure = useStore((s) => s.failure);
  const setFailure = useStore((s) => s.setFailure);
  if (!failure) return null;
  return (
    <Banner what={failure.what} why={failure.why} testId="error-banner" idPrefix="error" onDismiss={() => setFailure(null)}
      action={failure.retry && <button type="button" data-testid="error-retry" onClick={failure.retry.run}>{failure.retry.label}</button>} />
  );
}
