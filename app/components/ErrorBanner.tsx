import { useStore } from '../store';

/** What failed and why, until dismissed or the next job starts. Results on display stay. */
export function ErrorBanner() {
  const failure = useStore((s) => s.failure);
  const setFailure = useStore((s) => s.setFailure);
  if (!failure) return null;
  return (
    <div className="error-banner" role="alert" data-testid="error-banner">
      <div>
        <strong data-testid="error-what">{failure.what}</strong>
        <p data-testid="error-why">{failure.why}</p>
      </div>
      <div className="row">
        {failure.retry && <button type="button" data-testid="error-retry" onClick={failure.retry.run}>{failure.retry.label}</button>}
        <button type="button" className="small" aria-label="dismiss" onClick={() => setFailure(null)}>×</button>
      </div>
    </div>
  );
}
